// P55's sink writes (eval/bound/sums/upstream/strip_sink_writes.h).
#include "eval/bound/sums/upstream/strip_sink_writes.h"

#include <map>
#include <utility>
#include <vector>

namespace annealer::bound_internal {

bool g_strip_sink_writes = true;

namespace {
constexpr size_t kMaxClosure = 4096;  // past it, no write (the closure is not worked out)
}  // namespace

void StripSinkWrites(const Problem& p, UpstreamSums& part) {
  if (!g_strip_sink_writes || p.chip.two_paths()) return;
  // Per claimant its Pointwise closure, or empty when too large to walk.
  std::vector<std::vector<OpId>> closure(part.claimants.size());
  std::map<std::pair<Elements, Elements>, std::vector<size_t>> by_shape;
  std::vector<char> seen(p.ops.size(), 0);
  for (size_t i = 0; i < part.claimants.size(); ++i) {
    const OpId s = part.claimants[i].sum;
    const Tensor& out = p.tensors[p.ops[s].output];
    by_shape[{out.height, out.width}].push_back(i);
    std::vector<OpId>& reach = closure[i];
    reach.push_back(s);
    seen[s] = 1;
    for (size_t at = 0; at < reach.size() && reach.size() <= kMaxClosure; ++at) {
      for (OpId z : p.consumers[p.ops[reach[at]].output]) {
        if (p.ops[z].kind == OpKind::Pointwise && !seen[z]) {
          seen[z] = 1;
          reach.push_back(z);
        }
      }
    }
    for (OpId o : reach) seen[o] = 0;
    if (reach.size() > kMaxClosure) reach.clear();
  }
  std::vector<int> count(p.ops.size(), 0);
  for (const auto& [shape, members] : by_shape) {
    for (size_t i : members) {
      for (OpId o : closure[i]) ++count[o];
    }
    for (size_t i : members) {
      UpstreamSums::Claimant& cl = part.claimants[i];
      const Tensor& out = p.tensors[p.ops[cl.sum].output];
      bool alone = !closure[i].empty();
      for (OpId o : closure[i]) alone = alone && count[o] == 1;
      if (alone && cl.written == 0 && out.size() > p.fast_memory_capacity) {
        cl.sink_write = static_cast<double>(out.size()) / p.slow_memory_bandwidth;
      }
    }
    for (size_t i : members) {
      for (OpId o : closure[i]) --count[o];
    }
  }
}

}  // namespace annealer::bound_internal
