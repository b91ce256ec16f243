#include "eval/cost/compute_floor.h"

#include <cstdint>

namespace annealer {

double ComputeFloorPerTile(const Problem& problem, const std::vector<OpId>& ops) {
  // Per op of the problem: 1 = in the list, 2 = reached by the walk. Reset before returning.
  thread_local std::vector<uint8_t> marks;
  thread_local std::vector<OpId> stack;
  if (marks.size() < problem.ops.size()) marks.resize(problem.ops.size(), 0);
  for (OpId op : ops) marks[op] = 1;
  stack.clear();
  for (OpId op : ops) {
    bool consumed = false;
    for (OpId c : problem.consumers[problem.ops[op].output]) {
      if (marks[c] != 0) {
        consumed = true;
        break;
      }
    }
    if (!consumed) stack.push_back(op);
  }
  for (OpId op : stack) marks[op] |= 2;
  double per_tile = 0;
  while (!stack.empty()) {
    const OpId op = stack.back();
    stack.pop_back();
    const Op& o = problem.ops[op];
    if (o.kind == OpKind::Layout) continue;
    per_tile += o.base_cost;
    if (o.kind == OpKind::MatMul) continue;
    for (TensorId in : o.inputs) {
      const OpId p = problem.producer[in];
      if (p != kNoOp && marks[p] == 1) {
        marks[p] |= 2;
        stack.push_back(p);
      }
    }
  }
  for (OpId op : ops) marks[op] = 0;
  return per_tile;
}

namespace {

// What an op of the list produces in a step (tile rows R, columns C, k range kappa), by the walk
// of D1-D3 from the sinks: the epilogue R x C (at the last k-step), F R x C, an op upstream of
// F's LHS R x kappa, of F's RHS kappa x C. Anything else (a Layout op, an op reached in two
// roles, an op upstream of those) is kOther: its inputs are not counted.
enum class Role : uint8_t { kNone, kEpilogue, kKLoop, kLhsSide, kRhsSide, kOther };

// How a step requests a boundary tensor read in `slot` of an op of role `role`, and so what it
// loads at least over the subgraph (MemoryFloorTerms).
enum class Request : uint8_t {
  kUnknown,
  kOnce,       // a region that is all of the tensor at some step or covers it over the tiles
  kRowsK,      // R x kappa: F's LHS and the LHS side's Pointwise inputs
  kKCols,      // kappa x C: F's RHS and the RHS side's Pointwise inputs
  kKPerTile,   // [0, K_u) x kappa or kappa x [0, K_u): an upstream MatMul's reduced input
};

Request RequestOf(Role role, OpKind kind, int slot) {
  if (kind == OpKind::Layout) return Request::kUnknown;
  switch (role) {
    case Role::kEpilogue: return kind == OpKind::Pointwise ? Request::kOnce : Request::kUnknown;
    case Role::kKLoop: return slot == 0 ? Request::kRowsK : Request::kKCols;
    case Role::kLhsSide:
      if (kind == OpKind::Pointwise) return Request::kRowsK;
      return slot == 0 ? Request::kOnce : Request::kKPerTile;  // R x [0, K_u), [0, K_u) x kappa
    case Role::kRhsSide:
      if (kind == OpKind::Pointwise) return Request::kKCols;
      return slot == 0 ? Request::kKPerTile : Request::kOnce;  // kappa x [0, K_u), [0, K_u) x C
    default: return Request::kUnknown;
  }
}

}  // namespace

MemoryFloorTerms MemoryFloorTermsOf(const Problem& problem, const std::vector<OpId>& ops,
                                    const std::vector<TensorId>& retained_in,
                                    const std::vector<TensorId>& retain) {
  MemoryFloorTerms terms;
  if (problem.chip.any() || ops.empty()) return terms;
  thread_local std::vector<Role> roles;  // per op of the problem; kNone outside the list
  thread_local std::vector<uint8_t> listed_op;
  thread_local std::vector<OpId> stack;
  if (roles.size() < problem.ops.size()) {
    roles.resize(problem.ops.size(), Role::kNone);
    listed_op.resize(problem.ops.size(), 0);
  }
  for (OpId op : ops) listed_op[op] = 1;
  auto in_list = [&](OpId op) { return op != kNoOp && listed_op[op] != 0; };
  stack.clear();
  // A second role makes an op kOther, and with it every op upstream of it in the list: what
  // they produce for the first role was derived without the second.
  auto assign = [&](OpId op, Role role) {
    Role& current = roles[op];
    if (current == role || current == Role::kOther) return;
    current = current == Role::kNone ? role : Role::kOther;
    stack.push_back(op);
  };
  // Per op of the list, whether an op of the list reads its output (kept for the tensors below).
  thread_local std::vector<uint8_t> consumed_of;
  consumed_of.resize(ops.size());
  auto read_inside = [&](TensorId t) {
    for (OpId c : problem.consumers[t]) {
      if (in_list(c)) return true;
    }
    return false;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpId op = ops[i];
    consumed_of[i] = read_inside(problem.ops[op].output);
    if (consumed_of[i] != 0) continue;
    const OpKind kind = problem.ops[op].kind;
    assign(op, kind == OpKind::Pointwise ? Role::kEpilogue : kind == OpKind::MatMul ? Role::kKLoop : Role::kOther);
    if (terms.k_star == 0 && kind == OpKind::MatMul) terms.k_star = problem.ReductionLength(op);
  }
  while (!stack.empty()) {
    const OpId op = stack.back();
    stack.pop_back();
    const Op& o = problem.ops[op];
    const Role role = roles[op];
    for (size_t slot = 0; slot < o.inputs.size(); ++slot) {
      const OpId p = problem.producer[o.inputs[slot]];
      if (!in_list(p)) continue;
      const OpKind kind = problem.ops[p].kind;
      Role next = Role::kOther;
      if (role == Role::kEpilogue) {
        next = kind == OpKind::Pointwise ? Role::kEpilogue : kind == OpKind::MatMul ? Role::kKLoop : Role::kOther;
      } else if (role == Role::kKLoop) {
        next = slot == 0 ? Role::kLhsSide : Role::kRhsSide;
      } else if ((role == Role::kLhsSide || role == Role::kRhsSide) && o.kind == OpKind::Pointwise) {
        next = role;
      }
      if (next == Role::kKLoop && terms.k_star == 0) terms.k_star = problem.ReductionLength(p);
      assign(p, next);
    }
  }
  auto listed = [](const std::vector<TensorId>& tensors, TensorId t) {
    for (TensorId u : tensors) {
      if (u == t) return true;
    }
    return false;
  };
  // Each boundary tensor once, at the first op of the list that reads it; a tensor retained in
  // is marked seen from the start, as it counts nothing.
  thread_local std::vector<uint8_t> seen;  // per tensor; reset below
  if (seen.size() < problem.tensors.size()) seen.resize(problem.tensors.size(), 0);
  thread_local std::vector<TensorId> seen_list;
  seen_list.clear();
  for (TensorId t : retained_in) {
    if (t < 0 || static_cast<size_t>(t) >= problem.tensors.size() || seen[t] != 0) continue;
    seen[t] = 1;
    seen_list.push_back(t);
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpId op = ops[i];
    const Op& o = problem.ops[op];
    const TensorId out = o.output;
    const bool consumed = consumed_of[i] != 0;
    if (!consumed && !listed(retain, out)) terms.writes += static_cast<double>(problem.tensors[out].size());
    // A Layout sink loads its output's region at every tile (L4).
    if (!consumed && o.kind == OpKind::Layout) terms.once += static_cast<double>(problem.tensors[out].size());
    for (size_t slot = 0; slot < o.inputs.size(); ++slot) {
      const TensorId t = o.inputs[slot];
      // A Layout op's output is loaded as a boundary tensor (L2).
      const OpId producer = problem.producer[t];
      const bool gathered = in_list(producer) && problem.ops[producer].kind == OpKind::Layout;
      if (seen[t] != 0 || (in_list(producer) && !gathered)) continue;
      seen[t] = 1;
      seen_list.push_back(t);
      Request request = Request::kUnknown;
      bool agreed = true;
      for (OpId c : problem.consumers[t]) {
        if (!in_list(c)) continue;
        const Op& reader = problem.ops[c];
        for (size_t s = 0; s < reader.inputs.size(); ++s) {
          if (reader.inputs[s] != t) continue;
          const Request r = RequestOf(roles[c], reader.kind, static_cast<int>(s));
          if (r == Request::kUnknown || (request != Request::kUnknown && r != request)) agreed = false;
          request = r;
        }
      }
      if (!agreed) continue;
      const double size = static_cast<double>(problem.tensors[t].size());
      const double k = static_cast<double>(terms.k_star);
      switch (request) {
        case Request::kOnce: terms.once += size; break;
        case Request::kRowsK: terms.lhs += size; terms.lhs_k += k; break;
        case Request::kKCols: terms.rhs += size; terms.rhs_k += k; break;
        case Request::kKPerTile: terms.per_tile += size; break;
        case Request::kUnknown: break;
      }
    }
  }
  for (OpId op : ops) {
    roles[op] = Role::kNone;
    listed_op[op] = 0;
  }
  for (TensorId t : seen_list) seen[t] = 0;
  return terms;
}

}  // namespace annealer
