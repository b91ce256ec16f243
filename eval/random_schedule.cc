#include "eval/random_schedule.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "eval/model/traversal.h"

namespace annealer {

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool Chance(std::mt19937_64& rng, double p) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p;
}

template <typename T>
const T& Pick(std::mt19937_64& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

int64_t Uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

class ProblemBuilder {
 public:
  ProblemBuilder(std::mt19937_64& rng, const RandomProblemOptions& options)
      : rng_(rng), options_(options) {}

  Elements Side() {
    const Elements n = options_.native;
    if (Chance(rng_, options_.odd_side_probability)) return Uniform(rng_, std::max<Elements>(1, n / 4), 3 * n);
    const Elements halves = Pick(rng_, std::vector<Elements>{2, 2, 2, 3, 4, 4, 6});
    return std::max<Elements>(1, halves * n / 2);
  }

  TensorId Input(Elements h, Elements w) {
    problem_.tensors.push_back({w, h});
    return static_cast<TensorId>(problem_.tensors.size() - 1);
  }
  const Tensor& T(TensorId t) const { return problem_.tensors[t]; }

  TensorId Pointwise(std::vector<TensorId> inputs) {
    const TensorId out = Input(T(inputs[0]).height, T(inputs[0]).width);
    problem_.ops.push_back({OpKind::Pointwise, std::move(inputs), out, Cost()});
    produced_.push_back(out);
    return out;
  }
  TensorId MatMul(TensorId lhs, TensorId rhs) {
    const TensorId out = Input(T(lhs).height, T(rhs).width);
    problem_.ops.push_back({OpKind::MatMul, {lhs, rhs}, out, Cost()});
    produced_.push_back(out);
    return out;
  }
  double Cost() { return static_cast<double>(Uniform(rng_, 10, 2000)); }
  // A Layout op on x: a transpose, a row slice, a column slice or any shape (spec L2).
  TensorId Layout(TensorId x) {
    const Tensor in = T(x);
    TensorId out = 0;
    switch (Uniform(rng_, 0, 3)) {
      case 0: out = Input(in.width, in.height); break;
      case 1: out = Input(Uniform(rng_, 1, in.height), in.width); break;
      case 2: out = Input(in.height, Uniform(rng_, 1, in.width)); break;
      default: out = Input(Side(), Side()); break;
    }
    problem_.ops.push_back({OpKind::Layout, {x}, out, 0});
    produced_.push_back(out);
    return out;
  }

  // A tensor of the same shape as `t` other than t: an existing one when `reuse`, else new.
  TensorId SameShape(TensorId t, bool reuse) {
    if (reuse) {
      std::vector<TensorId> same;
      for (TensorId u = 0; u < static_cast<TensorId>(problem_.tensors.size()); ++u) {
        if (u != t && T(u) == T(t)) same.push_back(u);
      }
      if (!same.empty()) return Pick(rng_, same);
    }
    return Input(T(t).height, T(t).width);
  }
  // An RHS for `lhs`: an existing tensor of height K when `reuse`, else a new input.
  TensorId RhsFor(TensorId lhs, bool reuse) {
    if (reuse) {
      std::vector<TensorId> fit;
      for (TensorId u = 0; u < static_cast<TensorId>(problem_.tensors.size()); ++u) {
        if (u != lhs && T(u).height == T(lhs).width) fit.push_back(u);
      }
      if (!fit.empty()) return Pick(rng_, fit);
    }
    return Input(T(lhs).width, Side());
  }
  TensorId AnyOp(TensorId x, double matmul_probability, double reuse_probability) {
    if (options_.layout_probability > 0 && Chance(rng_, options_.layout_probability)) return Layout(x);
    if (Chance(rng_, matmul_probability)) {
      if (Chance(rng_, 0.25)) {  // x as the RHS
        const TensorId lhs = Input(Side(), T(x).height);
        return MatMul(lhs, x);
      }
      return MatMul(x, RhsFor(x, Chance(rng_, reuse_probability)));
    }
    if (Chance(rng_, 0.4)) return Pointwise({x, SameShape(x, Chance(rng_, reuse_probability))});
    return Pointwise({x});
  }
  TensorId AnyTensor() {
    if (!produced_.empty() && Chance(rng_, 0.8)) return Pick(rng_, produced_);
    return static_cast<TensorId>(Uniform(rng_, 0, static_cast<int64_t>(problem_.tensors.size()) - 1));
  }

  Problem Build(DagShape shape) {
    const int num_ops = static_cast<int>(Uniform(rng_, options_.min_ops, options_.max_ops));
    TensorId x = Input(Side(), Side());
    while (static_cast<int>(problem_.ops.size()) < num_ops) {
      DagShape step = shape;
      if (shape == DagShape::kMixed) {
        step = Pick(rng_, std::vector<DagShape>{DagShape::kChain, DagShape::kDiamond,
                                                DagShape::kFanOut, DagShape::kMatMulChain,
                                                DagShape::kSharedInput, DagShape::kMultiSink});
        if (Chance(rng_, 0.3)) x = AnyTensor();
      }
      // The shapes without AnyOp take their Layout ops before the block they build on x.
      const bool block = step == DagShape::kDiamond || step == DagShape::kSharedInput ||
                         step == DagShape::kMultiSink;
      if (block && options_.layout_probability > 0 && Chance(rng_, options_.layout_probability)) {
        x = Layout(x);
        if (static_cast<int>(problem_.ops.size()) >= num_ops) break;
      }
      switch (step) {
        case DagShape::kChain: x = AnyOp(x, 0.4, 0.1); break;
        case DagShape::kMatMulChain: x = AnyOp(x, 1.0, 0.2); break;
        case DagShape::kFanOut: x = AnyOp(AnyTensor(), 0.3, 0.3); break;
        case DagShape::kDiamond: {
          TensorId a, b;
          if (Chance(rng_, 0.3) && T(x).width == T(x).height) {  // residual: x @ W + x
            a = MatMul(x, Input(T(x).width, T(x).width));
            x = Pointwise({a, x});
            break;
          }
          if (Chance(rng_, 0.5)) {
            a = Pointwise({x});
            b = Chance(rng_, 0.5) ? Pointwise({x}) : Pointwise({x, SameShape(x, true)});
          } else {  // two MatMuls with one output shape
            const TensorId rhs1 = RhsFor(x, false);
            a = MatMul(x, rhs1);
            b = MatMul(x, Chance(rng_, 0.5) ? rhs1 : Input(T(rhs1).height, T(rhs1).width));
          }
          x = Pointwise({a, b});
          break;
        }
        case DagShape::kSharedInput: {
          const TensorId shared = RhsFor(x, false);
          const TensorId a = MatMul(x, shared);
          const TensorId other = Input(Side(), T(x).width);
          const TensorId b = MatMul(other, shared);
          x = Chance(rng_, 0.5) ? a : b;
          break;
        }
        case DagShape::kMultiSink: {
          const int sinks = static_cast<int>(Uniform(rng_, 2, 3));
          std::vector<TensorId> outs;
          for (int s = 0; s < sinks; ++s) outs.push_back(Pointwise({x}));
          x = Pick(rng_, outs);
          break;
        }
        case DagShape::kMixed: break;
      }
    }
    const Elements n = options_.native;
    problem_.native = n;
    problem_.slow_memory_bandwidth = static_cast<double>(Uniform(rng_, 1, 50));
    problem_.fast_memory_capacity = n * n * Uniform(rng_, 2, 12) + Uniform(rng_, 0, n * n);
    const std::string error = problem_.Finalize();
    if (!error.empty()) throw std::logic_error("RandomProblem built a bad graph: " + error);
    return std::move(problem_);
  }

 private:
  std::mt19937_64& rng_;
  const RandomProblemOptions& options_;
  Problem problem_;
  std::vector<TensorId> produced_;
};

}  // namespace

ChipRules RandomChipRules(const Problem& problem, std::mt19937_64& rng) {
  ChipRules rules;
  const Elements capacity = problem.fast_memory_capacity;
  auto role_capacity = [&]() -> Elements {
    if (Chance(rng, 0.35)) return 0;
    return Uniform(rng, std::max<Elements>(1, capacity / 8), capacity);
  };
  rules.staging_capacity = role_capacity();
  rules.accumulator_capacity = role_capacity();
  rules.vector_capacity = role_capacity();
  rules.double_staging = Chance(rng, 0.5);
  rules.double_accumulator = Chance(rng, 0.5);
  rules.double_vector = Chance(rng, 0.5);
  auto base = [&]() -> Elements {
    if (Chance(rng, 0.5)) return 1;
    Elements b = Elements{1} << Uniform(rng, 1, 3);
    while (b > problem.native) b /= 2;
    return b;
  };
  rules.base_w = base();
  rules.base_h = base();
  rules.base_k = base();
  rules.accumulator_factor = Elements{1} << Uniform(rng, 0, 2);
  rules.wide_writeback = Chance(rng, 0.3);
  rules.prefetch = (rules.double_staging || rules.double_vector) && Chance(rng, 0.6);
  return rules;
}

void RandomWeightPath(const Problem& problem, std::mt19937_64& rng, ChipRules& rules) {
  rules.weight_bandwidth = static_cast<double>(Uniform(rng, 1, 100));
  const Elements capacity = problem.fast_memory_capacity;
  rules.weight_fifo_capacity = Chance(rng, 0.3) ? 0 : Uniform(rng, std::max<Elements>(1, capacity / 16), capacity);
  rules.prefetch = false;
}

namespace {

std::vector<int> TopologicalRank(const Problem& problem) {
  std::vector<int> rank(problem.ops.size());
  for (size_t i = 0; i < problem.topological_order.size(); ++i) {
    rank[problem.topological_order[i]] = static_cast<int>(i);
  }
  return rank;
}

void SortByRank(const std::vector<int>& rank, std::vector<OpId>& ops) {
  std::sort(ops.begin(), ops.end(), [&](OpId a, OpId b) { return rank[a] < rank[b]; });
}

bool Has(const std::vector<OpId>& v, OpId x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::vector<OpId> Sinks(const Problem& problem, const std::vector<OpId>& ops) {
  std::vector<OpId> sinks;
  for (OpId op : ops) {
    bool inside = false;
    for (OpId c : problem.consumers[problem.ops[op].output]) inside = inside || Has(ops, c);
    if (!inside) sinks.push_back(op);
  }
  return sinks;
}

std::vector<TensorId> BoundaryInputs(const Problem& problem, const std::vector<OpId>& ops) {
  std::vector<TensorId> inputs;
  for (OpId op : ops) {
    for (TensorId in : problem.ops[op].inputs) {
      const OpId p = problem.producer[in];
      if ((p == kNoOp || !Has(ops, p)) && std::find(inputs.begin(), inputs.end(), in) == inputs.end()) {
        inputs.push_back(in);
      }
    }
  }
  return inputs;
}

Elements PowerOfTwoAtMost(std::mt19937_64& rng, Elements limit, bool prefer_large) {
  std::vector<Elements> options;
  for (Elements p = 1; p <= limit; p *= 2) options.push_back(p);
  if (options.empty()) return 1;
  if (prefer_large && Chance(rng, 0.6)) {
    const size_t top = options.size() - 1;
    return options[top - std::min<size_t>(top, Uniform(rng, 0, 2))];
  }
  return Pick(rng, options);
}

}  // namespace

Problem RandomProblem(std::mt19937_64& rng, DagShape shape, const RandomProblemOptions& options) {
  return ProblemBuilder(rng, options).Build(shape);
}

void RandomizeSettings(const Problem& problem, Subgraph& subgraph, std::mt19937_64& rng,
                       const RandomScheduleOptions& options) {
  const Elements n = problem.native;
  const int num_ops = static_cast<int>(problem.ops.size());
  bool well_formed = !subgraph.ops.empty();
  for (OpId op : subgraph.ops) well_formed = well_formed && op >= 0 && op < num_ops;
  Elements min_k = n;
  Elements height = n, width = n;
  bool has_matmul = false;
  if (well_formed) {
    for (OpId op : subgraph.ops) {
      if (problem.ops[op].kind == OpKind::MatMul) {
        has_matmul = true;
        min_k = std::min(min_k, problem.ReductionLength(op));
      }
    }
    const std::vector<OpId> sinks = Sinks(problem, subgraph.ops);
    const Tensor& z = problem.tensors[problem.ops[sinks.empty() ? subgraph.ops[0] : sinks[0]].output];
    height = z.height;
    width = z.width;
  }
  Granularity g;
  g.w = PowerOfTwoAtMost(rng, n, true);
  g.h = PowerOfTwoAtMost(rng, n, true);
  g.k = has_matmul ? (Chance(rng, 0.4) ? std::min(min_k, n) : PowerOfTwoAtMost(rng, std::min(min_k, n), false))
                   : 1;
  if (g.k < 1) g.k = 1;
  // Coarsen until the step count is affordable for the oracle.
  auto steps = [&] {
    return CeilDiv(height, g.h) * CeilDiv(width, g.w) * (has_matmul ? CeilDiv(std::max<Elements>(min_k, 1), g.k) : 1);
  };
  while (steps() > options.max_steps) {
    if (g.w < n && (g.w <= g.h || g.h >= n)) g.w *= 2;
    else if (g.h < n) g.h *= 2;
    else if (has_matmul && g.k * 2 <= std::min(min_k, n)) g.k *= 2;
    else break;
  }
  subgraph.granularity = g;

  const int64_t rows = CeilDiv(height, g.h), cols = CeilDiv(width, g.w);
  const int traversal_kind = static_cast<int>(Uniform(rng, 0, 9));
  if (traversal_kind < 4) {
    subgraph.traversal.reset();
  } else if (traversal_kind < 7) {
    subgraph.traversal = MakeTraversal(Pick(rng, std::vector<TraversalPattern>(
                                                     std::begin(kAllTraversalPatterns),
                                                     std::end(kAllTraversalPatterns))),
                                       rows, cols);
  } else {
    std::vector<int64_t> order(rows * cols);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    subgraph.traversal = std::move(order);
  }

  if (well_formed && Chance(rng, options.extra_retain_probability)) {
    const TensorId t = problem.ops[Pick(rng, subgraph.ops)].output;
    if (std::find(subgraph.retain.begin(), subgraph.retain.end(), t) == subgraph.retain.end()) {
      subgraph.retain.push_back(t);
    }
  }

  if (Chance(rng, options.invalid_probability)) {
    switch (Uniform(rng, 0, 7)) {
      case 0: subgraph.granularity.w = 2 * n; break;                         // V2
      case 1: subgraph.granularity.k = has_matmul ? min_k * 2 : 2 * n; break;  // V3 or V2
      case 2:                                                                 // V10
        if (subgraph.traversal && !subgraph.traversal->empty()) {
          subgraph.traversal->back() = subgraph.traversal->front();
        } else {
          subgraph.traversal = std::vector<int64_t>{0};
          if (rows * cols == 1) subgraph.traversal->push_back(0);
        }
        break;
      case 3:  // V8: a graph input or a tensor not produced here
        subgraph.retain.push_back(static_cast<TensorId>(Uniform(rng, 0, static_cast<int64_t>(problem.tensors.size()) - 1)));
        break;
      case 4: std::reverse(subgraph.ops.begin(), subgraph.ops.end()); break;  // V6 when chained
      case 5: subgraph.retain.clear(); break;                                 // V7 later, maybe
      case 6: subgraph.granularity.h = std::max<Elements>(1, g.h / 4); break;  // more steps, maybe OOM
      default: subgraph.granularity.w = std::max<Elements>(1, g.w / 2); break;
    }
  }
}

Schedule RandomSchedule(const Problem& problem, std::mt19937_64& rng,
                        const RandomScheduleOptions& options) {
  const int num_ops = static_cast<int>(problem.ops.size());
  const std::vector<int> rank = TopologicalRank(problem);

  // A random topological order (Kahn's with a random ready op).
  std::vector<int> missing(num_ops, 0);
  for (OpId op = 0; op < num_ops; ++op) {
    for (TensorId in : problem.ops[op].inputs) missing[op] += problem.producer[in] != kNoOp;
  }
  std::vector<OpId> ready, order;
  for (OpId op = 0; op < num_ops; ++op) {
    if (missing[op] == 0) ready.push_back(op);
  }
  while (!ready.empty()) {
    const size_t i = std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
    const OpId op = ready[i];
    ready.erase(ready.begin() + i);
    order.push_back(op);
    for (OpId c : problem.consumers[problem.ops[op].output]) {
      if (--missing[c] == 0) ready.push_back(c);
    }
  }

  // Partition: an op joins the open subgraph when it reads a tensor produced there.
  std::vector<std::vector<OpId>> parts;
  for (OpId op : order) {
    bool connected = false;
    bool blocked = false;  // joining would break L1 (no draw: the same draws without Layout ops)
    if (!parts.empty()) {
      for (TensorId in : problem.ops[op].inputs) {
        const OpId p = problem.producer[in];
        const bool inside = p != kNoOp && Has(parts.back(), p);
        connected = connected || inside;
        if (!inside) continue;
        if (problem.ops[op].kind == OpKind::Layout) blocked = true;
        for (OpId reader : problem.consumers[in]) {
          blocked = blocked || problem.ops[reader].kind == OpKind::Layout;
        }
      }
    }
    if (connected && !blocked && Chance(rng, options.fuse_probability)) {
      parts.back().push_back(op);
    } else {
      parts.push_back({op});
    }
  }

  Schedule schedule;
  for (auto& ops : parts) {
    Subgraph s;
    s.ops = std::move(ops);
    schedule.subgraphs.push_back(std::move(s));
  }

  // Recomputation on purpose, then repair data availability in order.
  for (Subgraph& s : schedule.subgraphs) {
    if (!Chance(rng, options.recompute_probability)) continue;
    const std::vector<TensorId> inputs = BoundaryInputs(problem, s.ops);
    std::vector<OpId> producers;
    for (TensorId t : inputs) {
      if (problem.producer[t] != kNoOp) producers.push_back(problem.producer[t]);
    }
    if (producers.empty()) continue;
    s.ops.push_back(Pick(rng, producers));
    SortByRank(rank, s.ops);
  }
  std::vector<char> written(problem.tensors.size(), 0);
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    written[t] = problem.producer[t] == kNoOp;
  }
  for (size_t i = 0; i < schedule.subgraphs.size(); ++i) {
    Subgraph& s = schedule.subgraphs[i];
    for (int guard = 0; guard < num_ops; ++guard) {
      bool changed = false;
      for (TensorId t : BoundaryInputs(problem, s.ops)) {
        if (written[t]) continue;
        Subgraph* previous = i > 0 ? &schedule.subgraphs[i - 1] : nullptr;
        if (previous && Has(previous->ops, problem.producer[t])) {
          if (std::find(previous->retain.begin(), previous->retain.end(), t) == previous->retain.end()) {
            previous->retain.push_back(t);
          }
          continue;
        }
        s.ops.push_back(problem.producer[t]);  // recompute it here
        SortByRank(rank, s.ops);
        changed = true;
        break;
      }
      if (!changed) break;
    }
    for (OpId op : Sinks(problem, s.ops)) written[problem.ops[op].output] = 1;
  }

  for (Subgraph& s : schedule.subgraphs) RandomizeSettings(problem, s, rng, options);
  return schedule;
}

ScheduleEdit RandomEdit(const Problem& problem, const Schedule& schedule, std::mt19937_64& rng,
                        const RandomScheduleOptions& options) {
  const int n = static_cast<int>(schedule.subgraphs.size());
  if (n == 0) throw std::invalid_argument("RandomEdit needs a schedule with a subgraph");
  const std::vector<int> rank = TopologicalRank(problem);
  const int num_ops = static_cast<int>(problem.ops.size());
  auto sortable = [&](const std::vector<OpId>& ops) {
    for (OpId op : ops) {
      if (op < 0 || op >= num_ops) return false;
    }
    return true;
  };
  ScheduleEdit edit;
  const int i = static_cast<int>(Uniform(rng, 0, n - 1));
  switch (Uniform(rng, -2, 6)) {
    case -2:
    case -1:
    case 0:
    case 1: {  // new settings for one subgraph
      edit.begin = i;
      edit.end = i + 1;
      Subgraph s = schedule.subgraphs[i];
      if (Chance(rng, 0.3)) s.retain.clear();
      RandomizeSettings(problem, s, rng, options);
      edit.replacement.push_back(std::move(s));
      break;
    }
    case 2: {  // merge with the next one
      if (i + 1 >= n) return RandomEdit(problem, schedule, rng, options);
      edit.begin = i;
      edit.end = i + 2;
      Subgraph s = schedule.subgraphs[i + 1];
      for (OpId op : schedule.subgraphs[i].ops) {
        if (!Has(s.ops, op)) s.ops.push_back(op);
      }
      if (sortable(s.ops)) SortByRank(rank, s.ops);
      RandomizeSettings(problem, s, rng, options);
      edit.replacement.push_back(std::move(s));
      break;
    }
    case 3: {  // split in two
      const Subgraph& s = schedule.subgraphs[i];
      if (s.ops.size() < 2) return RandomEdit(problem, schedule, rng, options);
      const size_t cut = static_cast<size_t>(Uniform(rng, 1, static_cast<int64_t>(s.ops.size()) - 1));
      Subgraph a, b;
      a.ops.assign(s.ops.begin(), s.ops.begin() + cut);
      b.ops.assign(s.ops.begin() + cut, s.ops.end());
      b.retain = s.retain;
      if (sortable(a.ops)) {
        // Retain what the second part reads from the first, as a schedule repair would.
        for (TensorId t : BoundaryInputs(problem, b.ops)) {
          if (problem.producer[t] != kNoOp && Has(a.ops, problem.producer[t]) && Chance(rng, 0.8)) {
            a.retain.push_back(t);
          }
        }
      }
      RandomizeSettings(problem, a, rng, options);
      RandomizeSettings(problem, b, rng, options);
      edit.begin = i;
      edit.end = i + 1;
      edit.replacement = {std::move(a), std::move(b)};
      break;
    }
    case 4: {  // erase
      edit.begin = i;
      edit.end = i + 1;
      break;
    }
    case 5: {  // insert a copy elsewhere (recomputation)
      const int at = static_cast<int>(Uniform(rng, 0, n));
      edit.begin = edit.end = at;
      Subgraph s = schedule.subgraphs[i];
      RandomizeSettings(problem, s, rng, options);
      edit.replacement.push_back(std::move(s));
      break;
    }
    default: {  // move one subgraph by a few places
      const int j = static_cast<int>(std::clamp<int64_t>(i + Uniform(rng, -3, 3), 0, n - 1));
      const int lo = std::min(i, j), hi = std::max(i, j);
      edit.begin = lo;
      edit.end = hi + 1;
      // The subgraph at i moves to j; the ones between shift by one towards i.
      for (int x = lo; x <= hi; ++x) {
        int from = x;
        if (i < j) from = x == hi ? i : x + 1;
        if (i > j) from = x == lo ? i : x - 1;
        edit.replacement.push_back(schedule.subgraphs[from]);
      }
      break;
    }
  }
  return edit;
}

}  // namespace annealer
