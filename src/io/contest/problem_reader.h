// Reads the contest's problem JSON into eval::Problem and checks every field (spec A.1):
// presence and type, list lengths, ids in range, op shapes, one producer per tensor, an acyclic
// graph, sane hardware numbers. The first problem found is thrown as InputError, one line
// naming the file, the field and the index:
//   "problems/x.json: inputs[3][1]: tensor id 57 is out of range (49 tensors)".
#pragma once

#include <string>
#include <string_view>

#include "eval/model/problem.h"
#include "src/io/json_fields.h"

namespace annealer {

// Largest accepted tensor side (2^20; the contest's are a few thousand): a tensor then has at
// most 2^40 elements, so sums over millions of tensors or slices stay far from int64 overflow.
inline constexpr Elements kMaxTensorSide = Elements{1} << 20;

Problem ReadProblemFile(const std::string& path);

// `origin` names the input in error messages (a path, or "case.json#problem").
Problem ParseProblem(std::string_view json, const std::string& origin);

// The raw JSON text of member `key` of the top-level object of `json` (minified), so that files
// embedding a problem or a schedule (the spec cases) can be fed to the Parse functions.
// Throws InputError naming `origin` and `key`.
std::string ExtractJsonMember(std::string_view json, std::string_view key,
                              const std::string& origin);

}  // namespace annealer
