#include "eval/cost/evaluate_fast.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "eval/cost/cost_cache.h"
#include "eval/cost/subgraph_cost.h"
#include "eval/model/flat_problem.h"

namespace annealer {

Evaluation EvaluateFast(const Problem& problem, const Schedule& schedule, CostCache* cache) {
  Evaluation evaluation;
  // The flat DAG facts: the cache's (derived once per problem), or rebuilt here without one
  // (the cold path spends far more on pricing anyway).
  const FlatProblem* flat = cache ? cache->Flat(problem) : nullptr;
  if (flat == nullptr) {
    thread_local FlatProblem local_flat;
    local_flat.Build(problem);
    flat = &local_flat;
  }
  const int num_ops = flat->num_ops;
  const int num_tensors = flat->num_tensors;
  // Per-thread buffers: no allocation per call once grown. Per tensor: whether it is in slow
  // memory (a byte array, copied in one go per call), and the stamps of the last subgraph that
  // produced it inside and consumed it inside (so V7 and the written outputs need no op-level
  // lookups). Stamps only ever increase, so a stale stamp of an earlier call or problem never
  // matches.
  struct TensorStamps {
    uint32_t produced_inside;
    uint32_t consumed_inside;
  };
  thread_local std::vector<TensorStamps> stamps_buffer;
  thread_local std::vector<char> slow_buffer;
  thread_local std::vector<char> covered_buffer;
  thread_local uint32_t stamp_counter = 0;
  std::vector<TensorStamps>& tensor = stamps_buffer;
  std::vector<char>& in_slow_memory = slow_buffer;
  std::vector<char>& covered = covered_buffer;
  uint32_t stamp = stamp_counter;
  if (tensor.size() < static_cast<size_t>(num_tensors)) tensor.resize(num_tensors, TensorStamps{0, 0});
  in_slow_memory.assign(flat->graph_input_or_unproduced.begin(), flat->graph_input_or_unproduced.end());
  covered.assign(num_ops, 0);
  int covered_ops = 0;
  // With a cache, every subgraph is looked up in one batch first (overlapped memory accesses);
  // without one each is priced in the loop, so an early failure stops the pricing.
  thread_local std::vector<SubgraphResult> cached_results;
  thread_local std::vector<SmallSequenceFacts> cached_facts;
  if (cache) cache->LookupOrComputeAll(problem, schedule, cached_results, cached_facts);
  SubgraphResult priced;
  const int32_t* input_begin = flat->input_begin.data();
  const TensorId* input_tensor = flat->input_tensor.data();
  const TensorId* output = flat->output.data();
  static const std::vector<TensorId> kNothing;
  const std::vector<TensorId>* retained_in = &kNothing;
  auto fail = [&](Verdict verdict, Violation violation) {
    stamp_counter = stamp;
    evaluation.verdict = verdict;
    evaluation.violation = std::move(violation);
    evaluation.subgraphs.clear();
    evaluation.total = 0;
    return evaluation;
  };
  evaluation.subgraphs.reserve(schedule.subgraphs.size());
  for (int i = 0; i < static_cast<int>(schedule.subgraphs.size()); ++i) {
    const Subgraph& subgraph = schedule.subgraphs[i];
    if (!cache) priced = CostSubgraph(problem, subgraph, *retained_in);
    const SubgraphResult& result = cache ? cached_results[i] : priced;
    if (!result.ok()) {
      Violation violation = result.violation;
      violation.subgraph = i;
      return fail(result.verdict, std::move(violation));
    }
    // With the cached facts: every boundary input in slow memory or retained passes V7 (a
    // failure is re-derived below, for the oracle's message), and the writes are known.
    const SmallSequenceFacts* facts = cache && cached_facts[i].known() ? &cached_facts[i] : nullptr;
    if (facts) {
      for (const TensorId* t = facts->boundary_begin(); t != facts->boundary_end(); ++t) {
        if (!in_slow_memory[*t] &&
            std::find(retained_in->begin(), retained_in->end(), *t) == retained_in->end()) {
          facts = nullptr;
          break;
        }
      }
    }
    if (facts) {
      for (OpId op : subgraph.ops) {
        covered_ops += covered[op] == 0;
        covered[op] = 1;
      }
      for (const TensorId* t = facts->writes_begin(); t != facts->writes_end(); ++t) {
        in_slow_memory[*t] = 1;
      }
    } else {
      if (++stamp == 0) {
        for (TensorStamps& state : tensor) state.produced_inside = state.consumed_inside = 0;
        stamp = 1;
      }
      // Op ids are in range here: the local checks passed.
      for (OpId op : subgraph.ops) tensor[output[op]].produced_inside = stamp;
      // V7, in the oracle's order (op by op, input by input); inputs produced inside are marked
      // consumed inside on the way.
      for (OpId op : subgraph.ops) {
        for (int32_t x = input_begin[op]; x < input_begin[op + 1]; ++x) {
          const TensorId in = input_tensor[x];
          TensorStamps& state = tensor[in];
          if (state.produced_inside == stamp) {
            state.consumed_inside = stamp;
          } else if (flat->layout[op]) {
            if (!in_slow_memory[in]) {  // L1: a retained copy does not serve a Layout op
              return fail(Verdict::kInvalid,
                          {"L1", i,
                           "Layout op " + std::to_string(op) + " reads tensor " + std::to_string(in) +
                               ", which is not in slow memory"});
            }
          } else if (!in_slow_memory[in] &&
                     std::find(retained_in->begin(), retained_in->end(), in) == retained_in->end()) {
            return fail(Verdict::kInvalid,
                        {"V7", i,
                         "input tensor " + std::to_string(in) + " of op " + std::to_string(op) +
                             " is neither in slow memory nor retained by the previous subgraph"});
          }
        }
      }
      // Outputs nobody inside consumes and the subgraph does not retain go to slow memory.
      for (OpId op : subgraph.ops) {
        covered_ops += covered[op] == 0;
        covered[op] = 1;
        const TensorId out = output[op];
        if (tensor[out].consumed_inside != stamp &&
            std::find(subgraph.retain.begin(), subgraph.retain.end(), out) == subgraph.retain.end()) {
          in_slow_memory[out] = 1;
        }
      }
    }
    retained_in = &subgraph.retain;
    evaluation.total += result.report.latency;
    evaluation.subgraphs.push_back(result.report);
  }
  stamp_counter = stamp;
  if (covered_ops < num_ops) {
    for (OpId op = 0; op < num_ops; ++op) {
      if (!covered[op]) {
        return fail(Verdict::kInvalid, {"V1", -1, "op " + std::to_string(op) + " appears in no subgraph"});
      }
    }
  }
  for (TensorId t : flat->graph_outputs) {
    if (!in_slow_memory[t]) {
      return fail(Verdict::kInvalid,
                  {"V9", -1,
                   "graph output tensor " + std::to_string(t) + " is never written to slow memory"});
    }
  }
  evaluation.warnings = LatencyWarnings(schedule, evaluation.subgraphs);
  return evaluation;
}

}  // namespace annealer
