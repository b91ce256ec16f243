// The oracle follows docs/cost-model.md section by section; the comments cite the
// rule each block implements. Checks run in a fixed order so that fast paths can report the
// same first violation: per subgraph, the structural rules of eval/model/subgraph_structure.h, then
// W per step; then, for the sequence: V7 of that subgraph (L1 for a Layout op's input); after
// the last subgraph V1 (coverage), V9. The structural rules are shared with the fast path; the
// pricing (everything from the slice derivation on) is this file's own, step by step.
#include "eval/oracle.h"

#include "eval/model/subgraph_structure.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <charconv>
#include <exception>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>
#include <tuple>

namespace annealer {

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Half-open row and column ranges of a tensor.
struct Region {
  Elements r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  Elements size() const { return (r1 - r0) * (c1 - c0); }
  Elements rows() const { return r1 - r0; }
  Elements cols() const { return c1 - c0; }
  auto operator<=>(const Region&) const = default;
};

// Identity is (tensor, region): the roles (H1) of identical requests are merged, not compared.
struct SliceRequest {
  TensorId tensor;
  uint8_t roles;  // SliceRole bits; beside the id, in what would be padding
  Region region;
  auto operator<=>(const SliceRequest& other) const {
    if (const auto c = tensor <=> other.tensor; c != 0) return c;
    return region <=> other.region;
  }
  bool operator==(const SliceRequest& other) const {
    return tensor == other.tensor && region == other.region;
  }
};

struct ComputeCharge {
  OpId op;
  Region region;
  double amount;
};

// How an op's output region is being demanded in a step (spec D1-D3, C2-C4).
enum class Demand {
  kEpilogue,   // downstream of the k-loop: fires once per tile at the last k-step
  kStripLhs,   // produces (part of) the LHS strip of a k-loop MatMul, spread over k-steps
  kStripRhs,   // produces (part of) the RHS strip of a k-loop MatMul
  kFull,       // feeds an upstream MatMul, which needs its full reduction range every step
};

SubgraphResult Fail(Verdict verdict, std::string rule, std::string detail) {
  SubgraphResult result;
  result.verdict = verdict;
  result.violation.rule = std::move(rule);
  result.violation.detail = std::move(detail);
  return result;
}

std::string Str(int64_t v) { return std::to_string(v); }

class SubgraphOracle {
 public:
  SubgraphOracle(const Problem& problem, const Subgraph& subgraph,
                 const std::vector<TensorId>& retained_in, const StepObserver* on_step = nullptr)
      : problem_(problem), subgraph_(subgraph), retained_in_(retained_in), on_step_(on_step) {}

  SubgraphResult Run() {
    std::optional<Violation> violation = AnalyseSubgraph(problem_, subgraph_, structure_);
    if (!violation) violation = CheckRetainedIn(problem_, retained_in_);
    if (violation) {
      SubgraphResult result;
      result.verdict = Verdict::kInvalid;
      result.violation = std::move(*violation);
      return result;
    }
    return Simulate();
  }

 private:
  bool Produced(TensorId t) const { return structure_.Produces(problem_, t); }
  bool ConsumedInside(TensorId t) const { return structure_.ConsumesInside(problem_, t); }
  bool RetainedIn(TensorId t) const {
    return std::find(retained_in_.begin(), retained_in_.end(), t) != retained_in_.end();
  }
  bool RetainedOut(TensorId t) const {
    return std::find(subgraph_.retain.begin(), subgraph_.retain.end(), t) != subgraph_.retain.end();
  }

  void Charge(OpId op, Region region, double amount) { charges_.push_back({op, region, amount}); }

  // Walks upstream from a demanded output region (spec D3, D4, C3). `role` is how the op that
  // reads t uses it (H1): a MatMul operand is staged, a Pointwise operand is a vector slice.
  void Feed(TensorId t, Region region, Demand demand, Elements k_len, uint8_t role) {
    const Tensor& tensor = problem_.tensors[t];
    region.r1 = std::min(region.r1, tensor.height);
    region.c1 = std::min(region.c1, tensor.width);
    // The same demand twice in a step adds the same requests and charges again, which D5 and
    // C5 count once: walk it once. (Without this, a chain of k x k taps, each fed by the nine
    // taps before it, is walked once per path: exponential in the chain's depth.)
    const FeedKey key{t, region, static_cast<int>(demand), k_len, role};
    if (std::find(fed_.begin(), fed_.end(), key) != fed_.end()) return;
    fed_.push_back(key);
    if (structure_.Gathered(problem_, t)) {  // D4, L2
      requests_.push_back({t, role, region});
      return;
    }
    if (demand == Demand::kEpilogue) return;  // produced by an epilogue op or a k-loop MatMul
    const OpId p = problem_.producer[t];
    const Op& op = problem_.ops[p];
    const Elements n = problem_.native;
    const Elements reduction = structure_.reduction;
    switch (demand) {
      case Demand::kStripLhs:
        Charge(p, region,
               op.base_cost * static_cast<double>(CeilDiv(region.rows(), n) * CeilDiv(reduction, n)) *
                   static_cast<double>(k_len) / static_cast<double>(reduction));
        break;
      case Demand::kStripRhs:
        Charge(p, region,
               op.base_cost * static_cast<double>(CeilDiv(reduction, n) * CeilDiv(region.cols(), n)) *
                   static_cast<double>(k_len) / static_cast<double>(reduction));
        break;
      default:
        Charge(p, region,
               op.base_cost * static_cast<double>(CeilDiv(region.rows(), n) * CeilDiv(region.cols(), n)));
        break;
    }
    if (op.kind == OpKind::Pointwise) {
      for (TensorId in : op.inputs) Feed(in, region, demand, k_len, kVectorRole);
    } else {
      const Elements k_op = problem_.ReductionLength(p);
      Feed(op.inputs[0], {region.r0, region.r1, 0, k_op}, Demand::kFull, k_len, kStagingRole);
      Feed(op.inputs[1], {0, k_op, region.c0, region.c1}, Demand::kFull, k_len, kStagingRole);
    }
  }

  SliceRequest Whole(TensorId t) const {
    const Tensor& tensor = problem_.tensors[t];
    return SliceRequest{t, 0, {0, tensor.height, 0, tensor.width}};
  }

  // H1: identical requests (sorted, adjacent) merge into the first of their run, which
  // std::unique keeps, with the roles of all of them.
  void MergeRoles() {
    for (size_t i = requests_.size(); i-- > 1;) {
      if (requests_[i] == requests_[i - 1]) requests_[i - 1].roles |= requests_[i].roles;
    }
  }

  // H1: a whole-tensor request that covers partial ones (D5) plays their roles too.
  void CoverRoles(const std::vector<TensorId>& wholly_requested) {
    for (const SliceRequest& q : requests_) {
      if (q == Whole(q.tensor)) continue;
      if (std::find(wholly_requested.begin(), wholly_requested.end(), q.tensor) == wholly_requested.end()) continue;
      std::lower_bound(requests_.begin(), requests_.end(), Whole(q.tensor))->roles |= q.roles;
    }
  }

  SubgraphResult Simulate() {
    const Granularity g = subgraph_.granularity;
    const Elements reduction = structure_.reduction;
    const Elements k = reduction > 0 ? g.k : 1;
    const int64_t k_steps = reduction > 0 ? CeilDiv(reduction, k) : 1;
    const int64_t tiles = structure_.rows * structure_.cols;
    const Tensor& z = problem_.tensors[problem_.ops[structure_.sinks[0]].output];
    const double bandwidth = problem_.slow_memory_bandwidth;

    // Working-set terms that do not depend on the step (R5): retained tensors at full size,
    // each counted once.
    Elements resident = 0;
    for (TensorId t : retained_in_) resident += problem_.tensors[t].size();
    for (TensorId t : subgraph_.retain) {
      if (!RetainedIn(t)) resident += problem_.tensors[t].size();
    }
    int written_sinks = 0;
    for (OpId s : structure_.sinks) written_sinks += RetainedOut(problem_.ops[s].output) ? 0 : 1;
    int accumulators = 0;  // W4: k-loop MatMuls whose output stays inside, when n_k > 1
    if (k_steps > 1) {
      for (OpId m : structure_.k_loop_matmuls) {
        accumulators += ConsumedInside(problem_.ops[m].output) ? 1 : 0;
      }
    }
    // The chip's rules (H1-H6).
    const ChipRules& chip = problem_.chip;
    const bool rules_on = chip.any();
    int vector_sinks = 0;  // H1: Pointwise and Layout sinks hold their tile in the vector buffer
    int wide_sinks = 0;    // H4: written k-loop MatMul sinks, with wide write-back
    for (OpId s : structure_.sinks) {
      vector_sinks += problem_.ops[s].kind != OpKind::MatMul ? 1 : 0;
      wide_sinks += chip.wide_writeback && problem_.ops[s].kind == OpKind::MatMul &&
                    !RetainedOut(problem_.ops[s].output);
    }
    const uint8_t double_buffered = (chip.double_staging ? kStagingRole : 0) | (chip.double_vector ? kVectorRole : 0);
    double slack = 0;  // H5: what the previous step of this subgraph leaves for prefetch

    SubgraphResult result;
    SubgraphReport& report = result.report;
    report.tiles = tiles;
    report.k_steps = k_steps;
    std::vector<SliceRequest> previous;
    int64_t step = 0;
    for (int64_t position = 0; position < tiles; ++position) {
      const int64_t tile = subgraph_.traversal ? (*subgraph_.traversal)[position] : position;
      const Region out{(tile / structure_.cols) * g.h, std::min((tile / structure_.cols + 1) * g.h, z.height),
                       (tile % structure_.cols) * g.w, std::min((tile % structure_.cols + 1) * g.w, z.width)};
      for (int64_t j = 0; j < k_steps; ++j, ++step) {
        const bool last = j == k_steps - 1;
        const Elements k0 = j * k;
        const Elements k1 = std::min(k0 + k, reduction);
        requests_.clear();
        charges_.clear();
        fed_.clear();

        // D2, C2: the k-loop MatMuls stream an LHS and an RHS slice every step.
        for (OpId m : structure_.k_loop_matmuls) {
          const Op& op = problem_.ops[m];
          Charge(m, out,
                 op.base_cost * static_cast<double>(k1 - k0) / static_cast<double>(reduction));
          Feed(op.inputs[0], {out.r0, out.r1, k0, k1}, Demand::kStripLhs, k1 - k0, kStagingRole);
          Feed(op.inputs[1], {k0, k1, out.c0, out.c1}, Demand::kStripRhs, k1 - k0, kStagingRole);
        }
        // D1, C1, C4: epilogue ops fire once per tile, at its last k-step.
        if (last) {
          for (OpId e : structure_.epilogue_ops) {
            const Op& op = problem_.ops[e];
            Charge(e, out, op.base_cost);
            for (TensorId in : op.inputs) Feed(in, out, Demand::kEpilogue, 0, kVectorRole);
          }
        }

        // L4: a Layout sink (alone) loads its tile of the output, which M2 then writes.
        if (last && structure_.layout_sink) {
          Feed(problem_.ops[structure_.sinks[0]].output, out, Demand::kEpilogue, 0, kVectorRole);
        }

        // C5: a region computed twice in one step is charged once.
        std::sort(charges_.begin(), charges_.end(), [](const auto& a, const auto& b) {
          return std::tie(a.op, a.region, a.amount) < std::tie(b.op, b.region, b.amount);
        });
        double compute = 0;
        RoleUse roles;
        for (size_t i = 0; i < charges_.size(); ++i) {
          const bool last_of_key = i + 1 == charges_.size() || charges_[i + 1].op != charges_[i].op ||
                                   charges_[i + 1].region != charges_[i].region;
          if (!last_of_key) continue;
          compute += charges_[i].amount;  // the largest charge of that key
          // H1: every MatMul's output region produced in this step sits in the accumulator.
          if (rules_on && problem_.ops[charges_[i].op].kind == OpKind::MatMul) {
            roles.accumulator += charges_[i].region.size();
          }
        }

        // D5: identical requests count once; a whole-tensor request covers partial ones.
        // H1: the merged copy plays every role of the requests it stands for.
        std::sort(requests_.begin(), requests_.end());
        if (rules_on) MergeRoles();
        requests_.erase(std::unique(requests_.begin(), requests_.end()), requests_.end());
        auto whole = [&](TensorId t) {
          const Tensor& tensor = problem_.tensors[t];
          return SliceRequest{t, 0, {0, tensor.height, 0, tensor.width}};
        };
        std::vector<TensorId> wholly_requested;
        for (const SliceRequest& q : requests_) {
          if (q == whole(q.tensor)) wholly_requested.push_back(q.tensor);
        }
        if (rules_on && !wholly_requested.empty()) CoverRoles(wholly_requested);
        std::erase_if(requests_, [&](const SliceRequest& q) {
          return q != whole(q.tensor) &&
                 std::find(wholly_requested.begin(), wholly_requested.end(), q.tensor) !=
                     wholly_requested.end();
        });

        // M1: loads, skipping retained tensors and slices held over from the previous step.
        Elements loaded = 0;
        Elements prefetchable = 0;  // H5: loads of slices whose every role is double-buffered
        Elements slices = 0;
        Elements weight_loaded = 0;  // H6: loads on the weight path
        Elements weight_slices = 0;  // H6: what the weight FIFO holds in this step
        for (const SliceRequest& q : requests_) {
          // R2; a Layout op of this subgraph gathers its output again (L2), as any op run
          // again ignores the retained copy of its output.
          if (RetainedIn(q.tensor) && !Produced(q.tensor)) continue;
          const bool reused = std::binary_search(previous.begin(), previous.end(), q) ||
                              std::binary_search(previous.begin(), previous.end(), whole(q.tensor));
          if (problem_.OnWeightPath(q.tensor)) {  // H6: not in the fast memory, nor in a role
            weight_slices += q.region.size();
            if (!reused) weight_loaded += q.region.size();
            continue;
          }
          slices += q.region.size();
          if (!reused) loaded += q.region.size();
          if (rules_on) {  // H1, H5
            if (q.roles & kStagingRole) roles.staging += q.region.size();
            if (q.roles & kVectorRole) roles.vector += q.region.size();
            if (!reused && (q.roles & double_buffered) == q.roles) prefetchable += q.region.size();
          }
        }
        // M2: every sink that is not retained writes its tile at the tile's last k-step; H4
        // widens a k-loop MatMul sink's tile.
        const Elements sink_tiles = written_sinks * out.size();
        Elements written = last ? sink_tiles : 0;
        if (rules_on) {
          if (last) written += wide_sinks * (chip.accumulator_factor - 1) * out.size();
          roles.vector += vector_sinks * out.size();
        }

        // Rule W.
        const Elements working_set = slices + resident + sink_tiles + accumulators * out.size();
        report.peak_working_set = std::max(report.peak_working_set, working_set);
        if (working_set > problem_.fast_memory_capacity) {
          return Fail(Verdict::kOutOfMemory, "W",
                      "step " + Str(step) + " (tile " + Str(tile) + ", k-step " + Str(j) +
                          ") needs a working set of " + Str(working_set) + " > capacity " +
                          Str(problem_.fast_memory_capacity));
        }
        if (rules_on) {  // H1, H2, H4
          if (std::optional<std::string> overflow = RoleOverflow(chip, roles, step, tile, j)) {
            return Fail(Verdict::kOutOfMemory, "H1", std::move(*overflow));
          }
          if (std::optional<std::string> overflow = WeightFifoOverflow(chip, weight_slices, step, tile, j)) {
            return Fail(Verdict::kOutOfMemory, "H6", std::move(*overflow));  // H6's FIFO
          }
        }

        // M3; H6: the weight path runs beside the slow memory's.
        const double memory = StepMemory(chip, bandwidth, weight_loaded, loaded + written);
        double exposed = memory;
        if (chip.prefetch) {  // H5: within the subgraph, from the step just before
          const PrefetchSplit split =
              ApplyPrefetch(compute, memory, static_cast<double>(prefetchable) / bandwidth, slack);
          exposed = split.exposed;
          slack = split.slack;
        }
        report.compute_time += compute;
        report.memory_time += memory;
        report.latency += std::max(compute, exposed);  // T1
        if (on_step_) {
          RoleFootprints footprints = rules_on ? Footprints(chip, roles) : RoleFootprints{};
          footprints.weight_fifo = weight_slices;  // H6; 0 without a weight path
          (*on_step_)({step, tile, j, compute, exposed, working_set, footprints});
        }
        previous.swap(requests_);
      }
    }
    return result;
  }

  const Problem& problem_;
  const Subgraph& subgraph_;
  const std::vector<TensorId>& retained_in_;
  const StepObserver* on_step_;
  SubgraphStructure structure_;
  std::vector<SliceRequest> requests_;
  std::vector<ComputeCharge> charges_;
  // This step's Feed calls: a handful per op of the subgraph, so a flat list (cleared, not
  // freed, each step) beats a tree.
  using FeedKey = std::tuple<TensorId, Region, int, Elements, uint8_t>;
  std::vector<FeedKey> fed_;
};

}  // namespace

SubgraphResult EvaluateSubgraphOracle(const Problem& problem, const Subgraph& subgraph,
                                      const std::vector<TensorId>& retained_in) {
  return SubgraphOracle(problem, subgraph, retained_in).Run();
}

SubgraphResult EvaluateSubgraphOracleSteps(const Problem& problem, const Subgraph& subgraph,
                                           const std::vector<TensorId>& retained_in,
                                           const StepObserver& on_step) {
  return SubgraphOracle(problem, subgraph, retained_in, &on_step).Run();
}

namespace {

// Every subgraph's EvaluateSubgraphOracle, on `threads` threads taking chunks in turn; the first
// exception a thread meets is rethrown after all joined.
std::vector<SubgraphResult> EvaluateSubgraphsOnThreads(const Problem& problem, const Schedule& schedule,
                                                       int threads) {
  const int n = static_cast<int>(schedule.subgraphs.size());
  std::vector<SubgraphResult> results(n);
  constexpr int kChunk = 16;
  std::atomic<int> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto work = [&] {
    try {
      static const std::vector<TensorId> kNothing;
      for (int begin = next.fetch_add(kChunk); begin < n; begin = next.fetch_add(kChunk)) {
        for (int i = begin; i < std::min(n, begin + kChunk); ++i) {
          const std::vector<TensorId>& in = i > 0 ? schedule.subgraphs[i - 1].retain : kNothing;
          results[i] = EvaluateSubgraphOracle(problem, schedule.subgraphs[i], in);
        }
      }
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      next.store(n);
    }
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& helper : helpers) helper.join();
  if (error) std::rethrow_exception(error);
  return results;
}

}  // namespace

Evaluation EvaluateOracle(const Problem& problem, const Schedule& schedule, int threads) {
  std::vector<SubgraphResult> evaluated;
  if (threads > 1 && schedule.subgraphs.size() >= kOracleThreadsFrom) {
    evaluated = EvaluateSubgraphsOnThreads(problem, schedule, threads);
  }
  Evaluation evaluation;
  const int num_tensors = static_cast<int>(problem.tensors.size());
  const int num_ops = static_cast<int>(problem.ops.size());
  std::vector<char> in_slow_memory(num_tensors, 0);
  for (TensorId t = 0; t < num_tensors; ++t) in_slow_memory[t] = problem.producer[t] == kNoOp;
  std::vector<char> covered(num_ops, 0);
  std::vector<TensorId> retained_in;
  std::vector<char> in_subgraph(num_ops, 0);  // marks of the current subgraph's ops, cleared after it
  auto fail = [&](Verdict verdict, Violation violation) {
    evaluation.verdict = verdict;
    evaluation.violation = std::move(violation);
    evaluation.subgraphs.clear();
    evaluation.total = 0;
    return evaluation;
  };

  for (int i = 0; i < static_cast<int>(schedule.subgraphs.size()); ++i) {
    const Subgraph& subgraph = schedule.subgraphs[i];
    SubgraphResult result =
        evaluated.empty() ? EvaluateSubgraphOracle(problem, subgraph, retained_in) : std::move(evaluated[i]);
    if (!result.ok()) {
      result.violation.subgraph = i;
      return fail(result.verdict, result.violation);
    }
    // V7: every boundary input is in slow memory or retained by the previous subgraph.
    for (OpId op : subgraph.ops) in_subgraph[op] = 1;
    for (OpId op : subgraph.ops) {
      for (TensorId in : problem.ops[op].inputs) {
        const OpId p = problem.producer[in];
        if (p != kNoOp && in_subgraph[p]) continue;
        // L1: a Layout op gathers from slow memory; a retained copy does not serve it.
        if (problem.ops[op].kind == OpKind::Layout) {
          if (!in_slow_memory[in]) {
            return fail(Verdict::kInvalid,
                        {"L1", i,
                         "Layout op " + std::to_string(op) + " reads tensor " + std::to_string(in) +
                             ", which is not in slow memory"});
          }
          continue;
        }
        const bool retained =
            std::find(retained_in.begin(), retained_in.end(), in) != retained_in.end();
        if (!in_slow_memory[in] && !retained) {
          return fail(Verdict::kInvalid,
                      {"V7", i,
                       "input tensor " + std::to_string(in) + " of op " + std::to_string(op) +
                           " is neither in slow memory nor retained by the previous subgraph"});
        }
      }
    }
    // Sinks not retained are written back (spec A.4, R3).
    for (OpId op : subgraph.ops) {
      covered[op] = 1;
      const TensorId out = problem.ops[op].output;
      bool consumed_inside = false;
      for (OpId c : problem.consumers[out]) consumed_inside = consumed_inside || in_subgraph[c];
      const bool retained =
          std::find(subgraph.retain.begin(), subgraph.retain.end(), out) != subgraph.retain.end();
      if (!consumed_inside && !retained) in_slow_memory[out] = 1;
    }
    for (OpId op : subgraph.ops) in_subgraph[op] = 0;
    retained_in = subgraph.retain;
    evaluation.total += result.report.latency;
    evaluation.subgraphs.push_back(result.report);
  }

  for (OpId op = 0; op < num_ops; ++op) {
    if (!covered[op]) {
      return fail(Verdict::kInvalid,
                  {"V1", -1, "op " + std::to_string(op) + " appears in no subgraph"});
    }
  }
  for (TensorId t = 0; t < num_tensors; ++t) {
    if (problem.IsGraphOutput(t) && !in_slow_memory[t]) {
      return fail(Verdict::kInvalid,
                  {"V9", -1,
                   "graph output tensor " + std::to_string(t) +
                       " is never written to slow memory"});
    }
  }

  evaluation.warnings = LatencyWarnings(schedule, evaluation.subgraphs);
  return evaluation;
}

std::vector<Latency> SubgraphLatencies(const Evaluation& evaluation) {
  std::vector<Latency> latencies;
  latencies.reserve(evaluation.subgraphs.size());
  for (const SubgraphReport& report : evaluation.subgraphs) latencies.push_back(report.latency);
  return latencies;
}

}  // namespace annealer
