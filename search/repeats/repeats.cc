#include "search/repeats/repeats.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "eval/cost/hash_mix.h"
#include "search/repeats/layout.h"

namespace annealer {

namespace {

uint64_t Mix(uint64_t h, uint64_t v) { return HashCombine(h, v); }

uint64_t HashOpLocal(const Op& op, const Tensor& out) {
  const uint64_t kind = op.kind == OpKind::MatMul ? 1 : op.kind == OpKind::Pointwise ? 2 : 3;
  uint64_t h = Mix(kind, std::bit_cast<uint64_t>(op.base_cost));
  h = Mix(h, static_cast<uint64_t>(out.width));
  return Mix(h, static_cast<uint64_t>(out.height));
}

uint64_t HashProblem(const Problem& p) {
  uint64_t h = Mix(p.ops.size(), p.tensors.size());
  for (const Tensor& t : p.tensors) h = Mix(Mix(h, static_cast<uint64_t>(t.width)), static_cast<uint64_t>(t.height));
  for (const Op& op : p.ops) {
    h = Mix(h, HashOpLocal(op, p.tensors[op.output]));
    for (const TensorId t : op.inputs) h = Mix(h, static_cast<uint64_t>(t));
    h = Mix(h, static_cast<uint64_t>(op.output));
  }
  return h;
}

// Longest path from the sources, in ops, over the ops for which `inside` holds (all: the graph).
template <typename Inside>
std::vector<int> Levels(const Problem& problem, const std::vector<OpId>& topological, Inside inside) {
  std::vector<int> level(problem.ops.size(), 0);
  for (const OpId op : topological) {
    for (const TensorId t : problem.ops[op].inputs) {
      const OpId from = problem.producer[t];
      if (from != kNoOp && inside(from)) level[op] = std::max(level[op], level[from] + 1);
    }
  }
  return level;
}

// Post-order DFS from `roots`, into the producers for which `inside` holds, deepest producer
// first (ties: operand order). Deepest first keeps layers contiguous: the path through the
// previous layer is the deepest input of a layer, so the previous layer is emitted completely
// before the current layer's shallow (weight-only) ops. `index(op)` addresses `level` and
// `seen` (an op's id for the whole graph, its offset for a range).
template <typename Inside, typename Index>
void DeepestFirstPostOrder(const Problem& problem, const std::vector<int>& level, const std::vector<OpId>& roots,
                           Inside inside, Index index, std::vector<char>& seen, std::vector<OpId>& out) {
  std::vector<std::pair<OpId, std::vector<OpId>>> stack;
  auto producers = [&](OpId op) {
    std::vector<OpId> from;
    for (const TensorId t : problem.ops[op].inputs) {
      const OpId p = problem.producer[t];
      if (p != kNoOp && inside(p) && std::find(from.begin(), from.end(), p) == from.end()) from.push_back(p);
    }
    std::stable_sort(from.begin(), from.end(), [&](OpId a, OpId b) { return level[index(a)] > level[index(b)]; });
    std::reverse(from.begin(), from.end());  // popped from the back
    return from;
  };
  for (const OpId root : roots) {
    if (seen[index(root)]) continue;
    seen[index(root)] = 1;
    stack.emplace_back(root, producers(root));
    while (!stack.empty()) {
      if (stack.back().second.empty()) {
        out.push_back(stack.back().first);
        stack.pop_back();
        continue;
      }
      const OpId next = stack.back().second.back();
      stack.back().second.pop_back();
      if (seen[index(next)]) continue;
      seen[index(next)] = 1;
      stack.emplace_back(next, producers(next));
    }
  }
}

}  // namespace

Layout MakeLayout(const Problem& problem) {
  const int n = static_cast<int>(problem.ops.size());
  const std::vector<int> level = Levels(problem, problem.topological_order, [](OpId) { return true; });
  // Input-cone hashes order the sinks by structure rather than by id.
  std::vector<uint64_t> cone(n, 0);
  for (const OpId op : problem.topological_order) {
    uint64_t h = HashOpLocal(problem.ops[op], problem.tensors[problem.ops[op].output]);
    for (const TensorId t : problem.ops[op].inputs) {
      const OpId from = problem.producer[t];
      h = Mix(h, from == kNoOp ? Mix(problem.tensors[t].width, problem.tensors[t].height) : cone[from]);
    }
    cone[op] = h;
  }
  std::vector<OpId> sinks;
  for (OpId op = 0; op < n; ++op) {
    if (problem.consumers[problem.ops[op].output].empty()) sinks.push_back(op);
  }
  std::sort(sinks.begin(), sinks.end(), [&](OpId a, OpId b) {
    return std::tie(level[a], cone[a], a) < std::tie(level[b], cone[b], b);
  });
  Layout layout;
  std::vector<char> seen(n, 0);
  layout.order.reserve(n);
  DeepestFirstPostOrder(problem, level, sinks, [](OpId) { return true; }, [](OpId op) { return op; }, seen,
                        layout.order);
  return LayoutOfOrder(problem, std::move(layout.order));
}

Layout LayoutOfOrder(const Problem& problem, std::vector<OpId> order) {
  const int n = static_cast<int>(problem.ops.size());
  Layout layout;
  layout.order = std::move(order);
  layout.pos.assign(n, 0);
  for (int p = 0; p < n; ++p) layout.pos[layout.order[p]] = p;
  std::vector<int> diff(n + 2, 0);
  for (TensorId t = 0; t < static_cast<TensorId>(problem.tensors.size()); ++t) {
    if (problem.producer[t] == kNoOp || problem.consumers[t].empty()) continue;
    const int a = layout.pos[problem.producer[t]];
    int b = a;
    for (const OpId c : problem.consumers[t]) b = std::max(b, layout.pos[c]);
    if (b > a) {
      ++diff[a + 1];
      --diff[b + 1];
    }
  }
  layout.width.assign(n + 1, 0);
  int running = 0;
  for (int p = 0; p <= n; ++p) {
    running += diff[p];
    layout.width[p] = running;
  }
  return layout;
}

// The ops at positions [a, b) of the layout in canonical order: a post-order DFS from the
// range's sinks (ordered by the hash of their input cone inside the range, then by position),
// deepest producer first by levels counted inside the range. Depends on the range's structure,
// not on ids, except for ties between sinks of equal cones.
std::vector<OpId> CanonicalOrder(const Problem& problem, const Layout& layout, int a, int b) {
  auto inside = [&](OpId op) { return layout.pos[op] >= a && layout.pos[op] < b; };
  const std::vector<OpId> range(layout.order.begin() + a, layout.order.begin() + b);
  // Indexed by offset in the range, not by op: a range costs its size, not the graph's.
  std::vector<int> level_local(b - a, 0);
  std::vector<uint64_t> cone(b - a, 0);
  for (int k = a; k < b; ++k) {
    const OpId op = layout.order[k];
    uint64_t h = HashOpLocal(problem.ops[op], problem.tensors[problem.ops[op].output]);
    for (const TensorId t : problem.ops[op].inputs) {
      const OpId from = problem.producer[t];
      if (from != kNoOp && inside(from)) {
        const int f = layout.pos[from] - a;
        level_local[k - a] = std::max(level_local[k - a], level_local[f] + 1);
        h = Mix(h, cone[f]);
      } else {
        h = Mix(h, Mix(0x5eed, Mix(problem.tensors[t].width, problem.tensors[t].height)));
      }
    }
    cone[k - a] = h;
  }
  std::vector<OpId> sinks;
  for (const OpId op : range) {
    bool consumed_inside = false;
    for (const OpId c : problem.consumers[problem.ops[op].output]) consumed_inside |= inside(c);
    if (!consumed_inside) sinks.push_back(op);
  }
  std::sort(sinks.begin(), sinks.end(), [&](OpId x, OpId y) {
    return std::tie(cone[layout.pos[x] - a], layout.pos[x]) < std::tie(cone[layout.pos[y] - a], layout.pos[y]);
  });
  std::vector<char> seen(b - a, 0);
  std::vector<OpId> out;
  out.reserve(b - a);
  DeepestFirstPostOrder(problem, level_local, sinks, inside, [&](OpId op) { return layout.pos[op] - a; }, seen, out);
  return out;
}

namespace {

struct Repetition {
  int start = 0;    // first segment
  int period = 0;   // segments per block
  int repeats = 0;  // blocks
  int64_t covered = 0;
};

class Detector {
 public:
  Detector(const Problem& problem, const Layout& layout, const RepeatOptions& options, int max_width)
      : layout_(layout), options_(options) {
    const int n = static_cast<int>(problem.ops.size());
    begin_.push_back(0);
    for (int p = 1; p < n; ++p) {
      if (layout.width[p] <= max_width) begin_.push_back(p);
    }
    begin_.push_back(n);
    const int m = segments();
    signature_.resize(m);
    for (int s = 0; s < m; ++s) {
      const std::vector<OpId> ops = CanonicalOrder(problem, layout, begin_[s], begin_[s + 1]);
      signature_[s] = HashProblem(ExtractSubproblem(problem, ops).problem);
    }
  }

  int segments() const { return static_cast<int>(begin_.size()) - 1; }
  int Begin(int segment) const { return begin_[segment]; }

  // The repetitions chosen in [lo, hi), greedily by ops covered, then in the parts left.
  void Find(int lo, int hi, std::vector<Repetition>& found) const {
    const Repetition best = Best(lo, hi);
    if (best.covered == 0) return;
    found.push_back(best);
    Find(lo, best.start, found);
    Find(best.start + best.period * best.repeats, hi, found);
  }

 private:
  int64_t Ops(int s, int e) const { return begin_[e] - begin_[s]; }

  Repetition Best(int lo, int hi) const {
    Repetition best;
    for (int period = 1; period <= (hi - lo) / 2 && period <= options_.max_block_ops; ++period) {
      int i = lo;
      while (i + period < hi) {
        if (signature_[i] != signature_[i + period]) {
          ++i;
          continue;
        }
        int j = i;
        while (j + period < hi && signature_[j] == signature_[j + period]) ++j;
        const int run = j - i;  // signature_[k] == signature_[k + period] for k in [i, j)
        if (run >= period) {
          const int repeats = run / period + 1;
          // Any phase within the run repeats as often; cut where the order is narrowest.
          int start = i;
          for (int o = 1; o <= run % period; ++o) {
            if (layout_.width[begin_[i + o]] < layout_.width[begin_[start]]) start = i + o;
          }
          const int64_t ops = Ops(start, start + period);
          if (ops <= options_.max_block_ops) {
            int64_t merge = std::max<int64_t>(1, (options_.min_block_ops + ops - 1) / ops);
            merge = std::min<int64_t>({merge, std::max<int64_t>(1, options_.max_block_ops / ops), repeats / 2});
            merge = std::max<int64_t>(merge, 1);
            const int blocks = static_cast<int>(repeats / merge);
            const int64_t covered = blocks * merge * ops;
            // Tiny blocks repeated a few times (two equal ops) would only cut the graph apart.
            if (blocks >= 2 && merge * ops >= options_.min_block_ops && covered > best.covered) {
              best = {start, static_cast<int>(period * merge), blocks, covered};
            }
          }
        }
        i = j + 1;
      }
    }
    return best;
  }

  const Layout& layout_;
  const RepeatOptions& options_;
  std::vector<int> begin_;  // first position of each segment, then the end
  std::vector<uint64_t> signature_;
};

}  // namespace

int RepeatPlan::repeated_blocks() const {
  int total = 0;
  for (const RepeatBlock& b : blocks) total += count[b.class_id] >= 2;
  return total;
}

int RepeatPlan::repeated_ops() const {
  int total = 0;
  for (const RepeatBlock& b : blocks) {
    if (count[b.class_id] >= 2) total += static_cast<int>(b.sub.op_ids.size());
  }
  return total;
}

RepeatPlan PlanFromRanges(const Problem& problem, const Layout& layout,
                          const std::vector<std::pair<int, int>>& best_ranges) {
  RepeatPlan plan;
  std::unordered_map<uint64_t, std::vector<int>> classes_by_hash;
  for (size_t i = 0; i < best_ranges.size(); ++i) {
    int a = best_ranges[i].first;
    int b = best_ranges[i].second;
    Subproblem sub = ExtractSubproblem(problem, CanonicalOrder(problem, layout, a, b));
    // Condition (a) of eval/model/subproblem.h; the last block exports nothing, so this ends.
    while (!ExportsAreSinks(problem, sub)) {
      if (i + 1 == best_ranges.size()) throw std::logic_error("PlanFromRanges: the last block exports a tensor");
      b = best_ranges[++i].second;
      sub = ExtractSubproblem(problem, CanonicalOrder(problem, layout, a, b));
    }
    RepeatBlock block;
    block.begin = a;
    block.end = b;
    std::vector<int>& candidates = classes_by_hash[HashProblem(sub.problem)];
    block.class_id = -1;
    for (const int c : candidates) {
      if (plan.blocks[plan.representative[c]].sub.problem == sub.problem) block.class_id = c;
    }
    if (block.class_id < 0) {
      block.class_id = static_cast<int>(plan.representative.size());
      candidates.push_back(block.class_id);
      plan.representative.push_back(static_cast<int>(plan.blocks.size()));
      plan.count.push_back(0);
    }
    ++plan.count[block.class_id];
    block.sub = std::move(sub);
    plan.blocks.push_back(std::move(block));
  }
  // H6: a block must see each tensor on the path the whole graph sends it (condition (d) of
  // eval/model/subproblem.h), else its schedule would be priced differently there.
  for (const RepeatBlock& block : plan.blocks) {
    if (!SameWeightPaths(problem, block.sub)) return {};
  }
  plan.primary_classes = plan.classes();
  return plan;
}

RepeatPlan FindRepeatedBlocks(const Problem& problem, const RepeatOptions& options) {
  const int n = static_cast<int>(problem.ops.size());
  if (n < 4) return {};
  const Layout layout = MakeLayout(problem);
  // The narrowest cuts first; a wider threshold cuts finer, so when a layer boundary is wider
  // than the head's or the tail's cuts, a later threshold still finds the layers.
  std::vector<int> widths(layout.width.begin() + 1, layout.width.begin() + n);
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  constexpr int kThresholds = 3;
  // Repetitions as position ranges: blocks [start + k * ops, start + (k + 1) * ops), k < repeats.
  struct Run {
    int start, ops, repeats;
  };
  std::vector<Run> runs;
  int64_t best_covered = 0;
  for (int w = 0; w < std::min<int>(kThresholds, widths.size()); ++w) {
    const Detector detector(problem, layout, options, widths[w]);
    std::vector<Repetition> found;
    detector.Find(0, detector.segments(), found);
    int64_t covered = 0;
    for (const Repetition& r : found) covered += r.covered;
    if (covered <= best_covered) continue;
    best_covered = covered;
    runs.clear();
    for (const Repetition& r : found) {
      const int start = detector.Begin(r.start);
      runs.push_back({start, detector.Begin(r.start + r.period) - start, r.repeats});
    }
  }
  if (runs.empty()) return {};
  // A run's first or last layer can be cut differently from the others (the first layer reads a
  // graph input where the others read a computed tensor, so its order inside can differ), which
  // leaves it out of the run although as a whole it is equal, and the run's phase may then be
  // off (blocks from the middle of one layer to the middle of the next). So: for every phase at
  // a narrowest cut within one block, move the run there and extend it by whole blocks on both
  // sides while they are equal to the run's block; keep the phase that covers the most.
  auto same_as = [&](int a, int b, const Problem& reference) {
    if (a < 0 || b > n) return false;
    const Subproblem sub = ExtractSubproblem(problem, CanonicalOrder(problem, layout, a, b));
    return sub.problem == reference;
  };
  // Largest runs first: a smaller run found in what a larger one left (e.g. sub-layers inside
  // the first layer) gives way when the larger run extends over it.
  constexpr int kPhases = 4;
  std::sort(runs.begin(), runs.end(), [](const Run& x, const Run& y) {
    return std::make_pair(x.ops * x.repeats, -x.start) > std::make_pair(y.ops * y.repeats, -y.start);
  });
  auto end_of = [](const Run& run) { return run.start + run.ops * run.repeats; };
  std::vector<Run> final_runs;
  std::vector<std::vector<Run>> final_ties;  // per final run: its other phases covering as much
  for (const Run& original : runs) {
    int floor = 0;
    int ceiling = n;
    bool overlaps = false;
    for (const Run& kept : final_runs) {
      overlaps |= kept.start < end_of(original) && original.start < end_of(kept);
      if (end_of(kept) <= original.start) floor = std::max(floor, end_of(kept));
      if (kept.start >= end_of(original)) ceiling = std::min(ceiling, kept.start);
    }
    if (overlaps) continue;
    int narrowest = layout.width[original.start];
    for (int q = original.start; q < original.start + original.ops; ++q) narrowest = std::min(narrowest, layout.width[q]);
    Run best = original;
    std::vector<Run> phases;
    int tried = 0;
    for (int q = original.start; q < original.start + original.ops && tried < kPhases; ++q) {
      if (layout.width[q] != narrowest) continue;
      ++tried;
      Run run{q, original.ops, original.repeats - (q > original.start ? 1 : 0)};
      const Problem reference =
          ExtractSubproblem(problem, CanonicalOrder(problem, layout, run.start, run.start + run.ops)).problem;
      while (run.start - run.ops >= floor && same_as(run.start - run.ops, run.start, reference)) {
        run.start -= run.ops;
        ++run.repeats;
      }
      while (run.start + run.ops * (run.repeats + 1) <= ceiling &&
             same_as(run.start + run.ops * run.repeats, run.start + run.ops * (run.repeats + 1), reference)) {
        ++run.repeats;
      }
      // Ties: the phase in step with what precedes the run (the graph's start or the previous
      // run's end), which is where layers begin when nothing else tells.
      const bool in_step = (run.start - floor) % run.ops == 0;
      const bool best_in_step = (best.start - floor) % best.ops == 0;
      if (run.repeats > best.repeats || (run.repeats == best.repeats && in_step && !best_in_step)) best = run;
      phases.push_back(run);
    }
    // Neither phase is right everywhere (docs/search.md, "Phase ties of the repeated-block
    // start"): the others that cover as much are kept for the alternatives.
    std::vector<Run> ties;
    for (const Run& run : phases) {
      if (run.repeats == best.repeats && run.start != best.start) ties.push_back(run);
    }
    final_runs.push_back(best);
    final_ties.push_back(std::move(ties));
  }
  std::vector<int> by_start(final_runs.size());
  for (size_t i = 0; i < by_start.size(); ++i) by_start[i] = static_cast<int>(i);
  std::sort(by_start.begin(), by_start.end(),
            [&](int x, int y) { return final_runs[x].start < final_runs[y].start; });
  // The position ranges of the blocks of runs in order; none when two runs overlap (a moved run
  // can reach into a neighbour that was bounded by its other phase).
  auto ranges_of = [&](const std::vector<Run>& chosen) {
    std::vector<std::pair<int, int>> ranges;
    int cursor = 0;
    for (const Run& run : chosen) {
      if (run.start < cursor) return std::vector<std::pair<int, int>>{};
      if (cursor < run.start) ranges.emplace_back(cursor, run.start);
      for (int k = 0; k < run.repeats; ++k) ranges.emplace_back(run.start + k * run.ops, run.start + (k + 1) * run.ops);
      cursor = end_of(run);
    }
    if (cursor < n) ranges.emplace_back(cursor, n);
    return ranges;
  };
  std::vector<Run> chosen;
  for (const int i : by_start) chosen.push_back(final_runs[i]);
  RepeatPlan plan = PlanFromRanges(problem, layout, ranges_of(chosen));
  // Solving apart pays only when most of the graph repeats.
  if (plan.repeated_ops() * 2 < n) return {};
  if (options.phase_alternatives <= 0) return plan;
  // The other partitions: every tied run moved to its next phase at once, then each tied run
  // alone to each of its other phases.
  std::vector<std::vector<Run>> partitions;
  std::vector<Run> all_moved;
  int tied_runs = 0;
  for (const int i : by_start) {
    all_moved.push_back(final_ties[i].empty() ? final_runs[i] : final_ties[i][0]);
    tied_runs += !final_ties[i].empty();
  }
  if (tied_runs > 1) partitions.push_back(all_moved);
  for (size_t k = 0; k < by_start.size(); ++k) {
    for (const Run& tie : final_ties[by_start[k]]) {
      std::vector<Run> one = chosen;
      one[k] = tie;
      partitions.push_back(std::move(one));
    }
  }
  std::unordered_map<uint64_t, std::vector<int>> classes_by_hash;
  for (int c = 0; c < plan.classes(); ++c) {
    classes_by_hash[HashProblem(plan.blocks[plan.representative[c]].sub.problem)].push_back(c);
  }
  std::vector<std::pair<int, int>> known;  // ranges of the blocks so far
  for (const RepeatBlock& b : plan.blocks) known.emplace_back(b.begin, b.end);
  for (const std::vector<Run>& partition : partitions) {
    if (plan.alternatives >= options.phase_alternatives) break;
    const std::vector<std::pair<int, int>> ranges = ranges_of(partition);
    if (ranges.empty()) continue;
    RepeatPlan other;
    try {
      other = PlanFromRanges(problem, layout, ranges);
    } catch (const std::logic_error&) {
      continue;  // its last block would export a tensor: no such partition
    }
    if (other.blocks.empty()) continue;
    bool added = false;
    for (RepeatBlock& block : other.blocks) {
      if (std::find(known.begin(), known.end(), std::pair{block.begin, block.end}) != known.end()) continue;
      known.emplace_back(block.begin, block.end);
      added = true;
      std::vector<int>& candidates = classes_by_hash[HashProblem(block.sub.problem)];
      block.class_id = -1;
      for (const int c : candidates) {
        if (plan.ClassBlock(c).sub.problem == block.sub.problem) block.class_id = c;
      }
      if (block.class_id < 0) {
        block.class_id = plan.classes();
        candidates.push_back(block.class_id);
        plan.representative.push_back(static_cast<int>(plan.alternative_blocks.size()));
        plan.count.push_back(0);
      }
      if (block.class_id >= plan.primary_classes) ++plan.count[block.class_id];
      plan.alternative_blocks.push_back(std::move(block));
    }
    plan.alternatives += added;
  }
  std::stable_sort(plan.alternative_blocks.begin(), plan.alternative_blocks.end(),
                   [](const RepeatBlock& x, const RepeatBlock& y) { return x.begin < y.begin; });
  // The representatives of the alternatives' classes, after the sort.
  for (int c = plan.primary_classes; c < plan.classes(); ++c) plan.representative[c] = -1;
  for (size_t i = 0; i < plan.alternative_blocks.size(); ++i) {
    const int c = plan.alternative_blocks[i].class_id;
    if (c >= plan.primary_classes && plan.representative[c] < 0) plan.representative[c] = static_cast<int>(i);
  }
  return plan;
}

Schedule WithoutFinalRetention(Schedule schedule) {
  if (!schedule.subgraphs.empty()) schedule.subgraphs.back().retain.clear();
  schedule.reported_latencies.reset();
  return schedule;
}

Schedule ComposeBlockSchedules(const std::vector<const RepeatBlock*>& chain,
                               const std::vector<Schedule>& class_schedules) {
  Schedule composed;
  for (const RepeatBlock* block : chain) {
    const Schedule mapped = MapScheduleToFull(block->sub, WithoutFinalRetention(class_schedules.at(block->class_id)));
    composed.subgraphs.insert(composed.subgraphs.end(), mapped.subgraphs.begin(), mapped.subgraphs.end());
  }
  return composed;
}

Schedule ComposeBlockSchedules(const RepeatPlan& plan, const std::vector<Schedule>& class_schedules) {
  std::vector<const RepeatBlock*> chain;
  for (const RepeatBlock& block : plan.blocks) chain.push_back(&block);
  return ComposeBlockSchedules(chain, class_schedules);
}

std::vector<const RepeatBlock*> CheapestChain(const RepeatPlan& plan, const std::vector<Latency>& totals,
                                              const std::vector<char>& solved) {
  std::vector<const RepeatBlock*> primary;
  Latency primary_total = 0;
  for (const RepeatBlock& block : plan.blocks) {
    primary.push_back(&block);
    primary_total += totals.at(block.class_id);
  }
  if (plan.alternative_blocks.empty() || plan.blocks.empty()) return primary;
  const int n = plan.blocks.back().end;
  // Blocks by first position, the chosen partition's first: on equal sums its chain stays.
  std::vector<std::vector<const RepeatBlock*>> from(n + 1);
  for (const RepeatBlock& block : plan.blocks) from[block.begin].push_back(&block);
  for (const RepeatBlock& block : plan.alternative_blocks) {
    if (solved.at(block.class_id)) from[block.begin].push_back(&block);
  }
  std::vector<Latency> lowest(n + 1, -1);
  std::vector<const RepeatBlock*> via(n + 1, nullptr);
  lowest[0] = 0;
  for (int p = 0; p < n; ++p) {
    if (lowest[p] < 0) continue;
    for (const RepeatBlock* block : from[p]) {
      const Latency total = lowest[p] + totals.at(block->class_id);
      if (lowest[block->end] < 0 || total < lowest[block->end]) {
        lowest[block->end] = total;
        via[block->end] = block;
      }
    }
  }
  if (lowest[n] < 0 || lowest[n] >= primary_total * (1 - 1e-12)) return primary;
  std::vector<const RepeatBlock*> chain;
  for (int p = n; p > 0; p = via[p]->begin) chain.push_back(via[p]);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

}  // namespace annealer
