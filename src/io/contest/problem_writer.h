// eval::Problem -> the contest's problem JSON (spec A.1), the inverse of src/io/contest/problem_reader:
// ParseProblem(ProblemToJson(p)) == p for every problem the reader accepts.
#pragma once

#include <string>

#include "eval/model/problem.h"

namespace annealer {

// One line per key, numbers written so that they read back exactly.
std::string ProblemToJson(const Problem& problem);

}  // namespace annealer
