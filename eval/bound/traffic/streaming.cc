#include "eval/bound/traffic/streaming.h"

namespace annealer::bound_internal {

bool g_streamed_activations = true;

bool StreamedActivationSide(const Problem& problem, OpId x, int slot) {
  if (!g_streamed_activations) return false;
  const Op& op = problem.ops[x];
  if (op.kind != OpKind::MatMul || op.inputs[0] == op.inputs[1]) return false;
  if (problem.ReductionLength(x) <= problem.native) return false;
  const TensorId t = op.inputs[slot];
  const OpId p = problem.producer[t];
  if (p == kNoOp || problem.ops[p].kind != OpKind::Pointwise) return false;
  if (problem.tensors[t].size() + 1 <= problem.fast_memory_capacity) return false;
  for (OpId c : problem.consumers[t]) {
    const Op& reader = problem.ops[c];
    if (reader.kind != OpKind::MatMul || reader.inputs[slot] != t || reader.inputs[1 - slot] == t) return false;
  }
  return true;
}

double StreamedActivations(const Problem& problem, OpId x) {
  const Op& op = problem.ops[x];
  const Tensor& out = problem.tensors[op.output];
  const Elements n = problem.native;
  double elements = 0;
  for (int slot = 0; slot < 2; ++slot) {
    if (!StreamedActivationSide(problem, x, slot)) continue;
    const TensorId t = op.inputs[slot];
    const Elements tiles = slot == 0 ? CeilDiv(out.width, n) : CeilDiv(out.height, n);
    elements += static_cast<double>(problem.tensors[t].size() * tiles) /
                static_cast<double>(problem.consumers[t].size());
  }
  return elements;
}

Streaming StreamingBound(const Problem& problem, const Analysis& a, const std::vector<char>* forced_writes) {
  const int num_ops = static_cast<int>(problem.ops.size());
  const Elements n = problem.native;
  // H6: on a chip with a weight path the problem here is WeightPathRelaxed's, and a subgraph's
  // memory time max(w / Bw, o / B) is at least (w + o) / (B + Bw): the loads count at the sum.
  const double bandwidth = problem.slow_memory_bandwidth + problem.chip.weight_bandwidth;
  std::vector<double> compute(num_ops);
  Streaming result;
  for (OpId x = 0; x < num_ops; ++x) {
    compute[x] = problem.ops[x].base_cost * static_cast<double>(problem.NativeTiles(x));
  }
  // Per op, the loads and writes an instance makes of tensors no other op touches: T-only, its
  // graph inputs (streamed per column / row tile when a MatMul has K > n, P5) and its graph
  // output (at the writing instance); other, those inputs once (P3); and the least factor of its
  // non-T modes (P7, P13), infinite when it has none. Layout ops claim nothing.
  std::vector<double> own_t(num_ops, 0), own_n(num_ops, 0),
      factor_n(num_ops, std::numeric_limits<double>::infinity());
  std::vector<char> claims(num_ops, 0);
  // Heavy ops, their gains and the side the other kind of instance pays on.
  std::vector<double> gain(num_ops, 0);
  std::vector<char> other_on_memory(num_ops, 0);
  std::vector<double> retain_load(num_ops, 0);  // P15: produced inputs / B of a T-only MatMul
  std::vector<char> retainer(num_ops, 0);        // heavy only with them
  bool any_heavy = false;
  for (OpId x = 0; x < num_ops; ++x) {
    const Op& op = problem.ops[x];
    if (op.kind == OpKind::Layout) continue;
    claims[x] = 1;
    const Tensor& out = problem.tensors[op.output];
    const bool k_split = op.kind == OpKind::MatMul && problem.ReductionLength(x) > n;
    Elements streamed = 0, once = 0;
    for (int slot = 0; slot < static_cast<int>(op.inputs.size()); ++slot) {
      const TensorId t = op.inputs[slot];
      if (problem.producer[t] != kNoOp || problem.consumers[t].size() != 1) continue;
      const Elements size = problem.tensors[t].size();
      once += size;
      streamed += k_split ? size * (slot == 0 ? CeilDiv(out.width, n) : CeilDiv(out.height, n)) : size;
    }
    // P32: a Pointwise op whose output every schedule writes from a sink instance claims that
    // instance, as for a graph output.
    const bool graph_output = problem.IsGraphOutput(op.output) ||
                              (forced_writes != nullptr && op.kind == OpKind::Pointwise && (*forced_writes)[op.output]);
    if (graph_output) streamed += out.size();
    own_t[x] = static_cast<double>(streamed) / bandwidth;
    if (k_split) own_t[x] += StreamedActivations(problem, x) / bandwidth;
    own_n[x] = static_cast<double>(once) / bandwidth;
    double least_factor = std::numeric_limits<double>::infinity();
    for (int m = 0; m < kModes && !graph_output; ++m) {
      if (m != kT && a.HasMode(x, m)) least_factor = std::min(least_factor, static_cast<double>(a.Factor(x, m)));
    }
    factor_n[x] = least_factor;
    if (op.kind != OpKind::MatMul || op.inputs[0] == op.inputs[1]) continue;
    double g = own_t[x] - compute[x];
    bool memory_side = false;
    if (least_factor < std::numeric_limits<double>::infinity()) {
      const double memory_n = own_n[x] - compute[x];
      const double compute_n = (least_factor - 1) * compute[x];
      g = std::min(g, std::max(memory_n, compute_n));
      memory_side = compute_n < g;
    }
    if (least_factor == std::numeric_limits<double>::infinity()) {
      // P15: a T-only MatMul also loads its produced inputs in each subgraph unless the one
      // before retains them; one that may gain only with them is a candidate ("retainer").
      Elements produced = 0;
      for (size_t slot = 0; slot < op.inputs.size(); ++slot) {
        const TensorId t = op.inputs[slot];
        const OpId p = problem.producer[t];
        if (p == kNoOp || problem.ops[p].kind == OpKind::Layout) continue;
        if (slot == 1 && op.inputs[0] == t) continue;
        if (k_split && StreamedActivationSide(problem, x, static_cast<int>(slot))) continue;  // P19 claims it
        produced += problem.tensors[t].size();
      }
      retain_load[x] = static_cast<double>(produced) / bandwidth;
      if (g <= 0 && g + retain_load[x] > 0) {
        g += retain_load[x];
        retainer[x] = 1;
      }
    }
    if (g > 0) {
      gain[x] = g;
      other_on_memory[x] = memory_side;
      any_heavy = true;
    }
  }
  // What each op's picked instance claims, as lines in the weight a of the subgraphs that pay
  // a C_S + (1 - a) M_S (those without an activated instance paying on memory; the others pay
  // M_S): the least over where that instance can be.
  const auto fill_lines = [&](const std::vector<char>& activated, const std::vector<char>& hidden) {
    result.lines.assign(num_ops, {});
    for (OpId y = 0; y < num_ops; ++y) {
      auto& lines = result.lines[y];
      if (!claims[y]) {
        lines.push_back({0, 0});
        continue;
      }
      const bool other = factor_n[y] < std::numeric_limits<double>::infinity();
      const double c = compute[y];
      const Line t_mixed{own_t[y], c};                        // a c + (1 - a) W_T
      const Line n_mixed{own_n[y], other ? factor_n[y] * c : 0};  // a f c + (1 - a) W_N
      if (hidden[y]) {  // beside an activated op paying on memory: its own loads; or elsewhere
        lines.push_back({own_t[y], own_t[y]});
        if (other) lines.push_back({own_n[y], own_n[y]});
        if (!activated[y]) lines.push_back(t_mixed);
        if (other && !(activated[y] && other_on_memory[y])) lines.push_back(n_mixed);
      } else if (activated[y]) {  // pays on memory, or on compute away from them
        lines.push_back({own_t[y], own_t[y]});
        if (other) lines.push_back(other_on_memory[y] ? Line{own_n[y], own_n[y]} : n_mixed);
      } else {  // away from them, unless it pays on memory beside one (then it is heavy)
        lines.push_back(t_mixed);
        if (other) lines.push_back(n_mixed);
        if (gain[y] > 0) {
          lines.push_back({own_t[y], own_t[y]});
          if (other && other_on_memory[y]) lines.push_back({own_n[y], own_n[y]});
        }
      }
    }
  };
  result.beside_memory.assign(num_ops, 0);
  if (!any_heavy) {
    fill_lines(std::vector<char>(num_ops, 0), std::vector<char>(num_ops, 0));
    result.value = BestOverWeight(result.lines, [](OpId) { return true; });
    return result;
  }

  bool keeps_shape = true;  // every Pointwise op's inputs have its output's shape (the reader checks)
  for (const Op& op : problem.ops) {
    if (op.kind != OpKind::Pointwise) continue;
    const Tensor& out = problem.tensors[op.output];
    for (TensorId t : op.inputs) {
      const Tensor& in = problem.tensors[t];
      keeps_shape = keeps_shape && in.width == out.width && in.height == out.height;
    }
  }
  struct WorldClass {
    std::vector<OpId> requirers;  // heavy ops that may pay on memory in this class
    std::vector<OpId> hiders;     // members that may sit beside them without paying on memory
    std::vector<OpId> members;    // every op of the class
  };
  std::vector<WorldClass> classes;
  const auto find = [](std::vector<int>& parent, int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  // The worlds: one per reduction length and output shape of a MatMul (one per reduction
  // length when some Pointwise op changes shape).
  std::vector<OpId> world_of;
  {
    std::vector<std::array<Elements, 3>> seen;
    for (OpId x = 0; x < num_ops; ++x) {
      if (problem.ops[x].kind != OpKind::MatMul) continue;
      const Tensor& t = problem.tensors[problem.ops[x].output];
      const std::array<Elements, 3> key{problem.ReductionLength(x), keeps_shape ? t.height : 0,
                                        keeps_shape ? t.width : 0};
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      world_of.push_back(x);
    }
  }
  std::vector<char> u(num_ops, 0), f(num_ops, 0), e(num_ops, 0), relevant(num_ops, 0);
  std::vector<int> local(num_ops), class_of_root(num_ops, -1);
  for (OpId w : world_of) {
    const Elements k_star = problem.ReductionLength(w);
    const Tensor& shape = problem.tensors[problem.ops[w].output];
    auto same_shape = [&](OpId y) {
      const Tensor& t = problem.tensors[problem.ops[y].output];
      return !keeps_shape || (t.width == shape.width && t.height == shape.height);
    };
    for (OpId y = 0; y < num_ops; ++y) {
      const Op& op = problem.ops[y];
      f[y] = op.kind == OpKind::MatMul && problem.ReductionLength(y) == k_star && same_shape(y);
      e[y] = op.kind == OpKind::Pointwise && same_shape(y);
    }
    // U: a producer of an F candidate's input (a MatMul; also a Pointwise op when K* <= n, V11),
    // and every op feeding a U op (reverse topological order).
    const auto& order = problem.topological_order;
    bool any_relevant = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const OpId y = *it;
      const OpKind kind = problem.ops[y].kind;
      const bool strip_kind = kind == OpKind::MatMul || (kind == OpKind::Pointwise && k_star <= n);
      u[y] = 0;
      // Only an op with a mode upstream of the k-loop can be in U (P1, P2 already ruled the
      // others out: a MatMul whose whole weight cannot fit, a Pointwise op into K > n).
      if (factor_n[y] < std::numeric_limits<double>::infinity()) {
        for (OpId c : problem.consumers[problem.ops[y].output]) {
          if ((f[c] && strip_kind) || u[c]) u[y] = 1;
        }
      }
      relevant[y] = gain[y] > 0 && (f[y] || (u[y] && other_on_memory[y]));
      any_relevant = any_relevant || relevant[y];
    }
    if (!any_relevant) continue;
    for (int i = 0; i < num_ops; ++i) local[i] = i;
    for (OpId c = 0; c < num_ops; ++c) {
      for (TensorId t : problem.ops[c].inputs) {
        const OpId p = problem.producer[t];
        if (p == kNoOp) continue;
        const OpKind pk = problem.ops[p].kind;
        const bool into_f = pk == OpKind::MatMul || pk == OpKind::Layout || (pk == OpKind::Pointwise && k_star <= n);
        const bool edge = (f[c] && into_f) || (e[c] && (f[p] || e[p] || pk == OpKind::Layout)) || u[c];
        if (edge) local[find(local, p)] = find(local, c);
      }
    }
    std::fill(class_of_root.begin(), class_of_root.end(), -1);
    for (OpId y = 0; y < num_ops; ++y) {
      if (relevant[y]) class_of_root[find(local, y)] = 0;
    }
    for (OpId y = 0; y < num_ops; ++y) {
      const int root = find(local, y);
      if (class_of_root[root] < 0) continue;  // no relevant op: no class
      if (class_of_root[root] == 0) {         // 1-based index once assigned
        class_of_root[root] = static_cast<int>(classes.size()) + 1;
        classes.push_back({});
      }
      WorldClass& c = classes[class_of_root[root] - 1];
      if (relevant[y]) c.requirers.push_back(y);
      // A heavy op pays on memory wherever it sits in this class: in F only (T-only), or
      // upstream with its other kind paying on memory. Any other member may hide.
      const bool pays = gain[y] > 0 && (f[y] || u[y]) && (!u[y] || other_on_memory[y]);
      if (!pays) c.hiders.push_back(y);
      c.members.push_back(y);
    }
  }
  // P15 needs a retainer alone among the requirers of its class, its produced inputs neither
  // produced nor read by another member (then a subgraph holding it loads them for it alone);
  // else it requires nothing (it stays heavy: beside an activated op it claims only its own
  // loads).
  std::vector<char> solitary(num_ops, 0);
  for (WorldClass& c : classes) {
    for (OpId y : c.requirers) {
      if (factor_n[y] < std::numeric_limits<double>::infinity() || retain_load[y] <= 0) continue;
      bool alone = c.requirers.size() == 1;
      const auto& in = problem.ops[y].inputs;
      for (OpId m : c.members) {
        if (m == y || !alone) continue;
        // A member that produces one of them could make it ephemeral; one that reads it could
        // share its load.
        const TensorId out = problem.ops[m].output;
        if (std::find(in.begin(), in.end(), out) != in.end()) alone = false;
        for (TensorId t : problem.ops[m].inputs) {
          if (problem.producer[t] != kNoOp && std::find(in.begin(), in.end(), t) != in.end()) alone = false;
        }
      }
      solitary[y] = alone;
    }
    if (std::any_of(c.requirers.begin(), c.requirers.end(), [&](OpId y) { return retainer[y] && !solitary[y]; })) {
      c.requirers.erase(std::remove_if(c.requirers.begin(), c.requirers.end(),
                                       [&](OpId y) { return retainer[y] && !solitary[y]; }),
                        c.requirers.end());
    }
  }
  // Activation units: the classes an activated op requires, joined through shared requirers.
  const int num_classes = static_cast<int>(classes.size());
  std::vector<int> unit(num_classes);
  for (int i = 0; i < num_classes; ++i) unit[i] = i;
  {
    std::vector<int> first_class(num_ops, -1);
    for (int i = 0; i < num_classes; ++i) {
      for (OpId x : classes[i].requirers) {
        if (first_class[x] < 0) {
          first_class[x] = i;
        } else {
          unit[find(unit, i)] = find(unit, first_class[x]);
        }
      }
    }
  }
  std::vector<std::vector<int>> units(num_classes);
  for (int i = 0; i < num_classes; ++i) units[find(unit, i)].push_back(i);
  // Which units to activate: first those with a positive gain of their own, then toggles that
  // raise the sum, a few passes. Every choice is a bound; this only picks a good one.
  std::vector<int> active_count(num_ops, 0), hidden_count(num_ops, 0);
  std::vector<char> on(num_classes, 0);
  const auto value_of = [&](OpId y) {
    return hidden_count[y] > 0 ? 0.0 : compute[y] + (active_count[y] > 0 ? gain[y] : 0.0);
  };
  const auto toggle = [&](int root, int delta) {
    for (int i : units[root]) {
      for (OpId x : classes[i].requirers) active_count[x] += delta;
      for (OpId y : classes[i].hiders) hidden_count[y] += delta;
    }
    on[root] = delta > 0;
  };
  std::vector<uint32_t> stamp(num_ops, 0);
  uint32_t generation = 0;
  const auto touched = [&](int root) {  // the sum over the unit's ops, each once
    double sum = 0;
    ++generation;
    for (int i : units[root]) {
      for (const auto* list : {&classes[i].requirers, &classes[i].hiders}) {
        for (OpId y : *list) {
          if (stamp[y] == generation) continue;
          stamp[y] = generation;
          sum += value_of(y);
        }
      }
    }
    return sum;
  };
  for (int pass = 0; pass < 4; ++pass) {
    bool changed = false;
    for (int root = 0; root < num_classes; ++root) {
      if (units[root].empty()) continue;
      const double before = touched(root);
      toggle(root, on[root] ? -1 : 1);
      if (touched(root) > before + 1e-9) {
        changed = true;
      } else {
        toggle(root, on[root] ? -1 : 1);  // undo
      }
    }
    if (!changed) break;
  }
  // The claims of the chosen units: lines, P15's term and the best weight.
  const auto finish = [&]() {
    std::vector<char> activated(num_ops, 0), hidden(num_ops, 0);
    result.activated = 0;
    result.retention = nullptr;
    result.beside_memory.assign(num_ops, 0);
    for (OpId y = 0; y < num_ops; ++y) {
      activated[y] = active_count[y] > 0;
      hidden[y] = hidden_count[y] > 0;
      result.activated += activated[y] && !hidden[y] ? 1 : 0;
      result.beside_memory[y] = activated[y] || hidden[y] || gain[y] > 0;
    }
    fill_lines(activated, hidden);

    // P15: an activated T-only MatMul y alone among its class's requirers, its produced inputs
    // read by no other member, loads them in every subgraph that holds it (each pays M_S, and
    // nothing else there claims them) unless the subgraph before holds their producer and retains
    // them (R1, V8). The subgraphs before distinct such y are distinct "hosts". A host without
    // slack is the subgraph of the picked instance of an activated op (paying on memory) whose
    // class holds a producer, or of a producer's picked instance: at most F of them. Any other
    // host has an unclaimed activated instance paying on memory (M_S >= its own loads) or an
    // unclaimed producer instance (a c_p in a C_S + (1 - a) M_S subgraph).
    std::vector<double> alone_load;
    std::vector<char> is_producer(num_ops, 0);
    for (OpId y = 0; y < num_ops; ++y) {
      if (!solitary[y] || !activated[y] || hidden[y]) continue;
      for (TensorId t : problem.ops[y].inputs) {
        const OpId p = problem.producer[t];
        if (p != kNoOp && problem.ops[p].kind != OpKind::Layout) is_producer[p] = 1;
      }
      alone_load.push_back(retain_load[y]);
    }
    if (!alone_load.empty()) {
      double host_memory = std::numeric_limits<double>::infinity();
      double host_compute = std::numeric_limits<double>::infinity();
      int free_hosts = 0;
      std::vector<char> counted(num_ops, 0);
      for (OpId p = 0; p < num_ops; ++p) {
        if (!is_producer[p]) continue;
        ++free_hosts;
        host_compute = std::min(host_compute, compute[p]);
      }
      for (int i = 0; i < num_classes; ++i) {
        if (!on[find(unit, i)]) continue;
        bool holds_producer = false;
        for (OpId m : classes[i].members) holds_producer = holds_producer || is_producer[m];
        if (!holds_producer) continue;
        for (OpId x : classes[i].requirers) {
          host_memory = std::min({host_memory, own_t[x], other_on_memory[x] ? own_n[x] : own_t[x]});
          if (!counted[x]) {
            counted[x] = 1;
            ++free_hosts;
          }
        }
      }
      result.retention = [alone_load, host_memory, host_compute, free_hosts](double w) {
        double sum = 0, most = 0;
        for (double load : alone_load) {
          const double lambda = std::min({load, host_memory, w * host_compute});
          sum += lambda;
          most = std::max(most, lambda);
        }
        return std::max(0.0, sum - static_cast<double>(free_hosts) * most);
      };
    }
    result.value = BestOverWeight(result.lines, [](OpId) { return true; }, result.retention);
  };
  finish();
  // An activated retainer claims only its own loads: without P15's term it loses. Keep the
  // better of the choice above and the same without units whose requirers are all retainers.
  bool any_retainer_unit = false;
  for (int root = 0; root < num_classes; ++root) {
    if (!on[root] || units[root].empty()) continue;
    bool all_retainers = true;
    for (int i : units[root]) {
      for (OpId x : classes[i].requirers) all_retainers = all_retainers && retainer[x];
    }
    if (!all_retainers) continue;
    toggle(root, -1);
    any_retainer_unit = true;
  }
  if (any_retainer_unit) {
    Streaming with = std::move(result);
    result = Streaming{};
    finish();
    if (with.value >= result.value) result = std::move(with);
  }
  return result;
}

}  // namespace annealer::bound_internal
