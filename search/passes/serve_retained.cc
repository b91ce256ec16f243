#include "search/passes/serve_retained.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "eval/cost/incremental.h"
#include "search/moves/move_kit.h"
#include "search/moves/moves.h"
#include "search/fit/fit.h"
#include "search/subgraph_tools.h"

namespace annealer {
namespace {

// A loader tried per (subgraph, tensor): enough for ViT's twelve key projections of a block, and
// a bound on the work where a tensor has hundreds of readers.
constexpr int kMaxLoaders = 32;

bool Makes(const Problem& problem, const Subgraph& s, TensorId t) {
  return std::any_of(s.ops.begin(), s.ops.end(), [&](OpId op) { return problem.ops[op].output == t; });
}

bool Reads(const Problem& problem, const Subgraph& s, TensorId t) {
  for (OpId op : s.ops) {
    const auto& in = problem.ops[op].inputs;
    if (std::find(in.begin(), in.end(), t) != in.end()) return true;
  }
  return false;
}

// j loads t and can take it retained instead: no Layout op of j reads it (L1 gathers from slow
// memory), j passes nothing on by retention, and nothing j reads comes retained from before it
// (that would be lost where j goes).
bool Loader(const Problem& problem, const Schedule& schedule, int j, TensorId t) {
  const Subgraph& s = schedule.subgraphs[j];
  if (!s.retain.empty() || Makes(problem, s, t)) return false;
  bool reads = false;
  for (OpId op : s.ops) {
    const auto& in = problem.ops[op].inputs;
    if (std::find(in.begin(), in.end(), t) == in.end()) continue;
    if (problem.IsLayout(op)) return false;
    reads = true;
  }
  if (!reads) return false;
  if (j > 0) {
    for (TensorId r : schedule.subgraphs[j - 1].retain) {
      if (Reads(problem, s, r) && !Makes(problem, s, r)) return false;
    }
  }
  return true;
}

// The replacement (i's new form first, j's last) runs where i was, j's pieces right after it;
// the subgraphs between them keep their order.
ScheduleEdit ServeEdit(int i, int j, std::vector<Subgraph> replacement) {
  ScheduleEdit edit;
  const int size = static_cast<int>(replacement.size());
  edit.replacement = std::move(replacement);
  if (j > i) {
    edit.begin = i;
    edit.end = j + 1;
    edit.kept_at = size;
    edit.kept_begin = i + 1;
    edit.kept_end = j;
  } else {
    edit.begin = j;
    edit.end = i + 1;
    edit.kept_at = 0;
    edit.kept_begin = j + 1;
    edit.kept_end = i;
  }
  return edit;
}

bool Holds(const Subgraph& sg, OpId op) { return std::find(sg.ops.begin(), sg.ops.end(), op) != sg.ops.end(); }

// Where j cannot move whole (it retains for the subgraph after it), the part of j that reads t:
// the MatMul r reading it and the chain of one-input Pointwise ops below r inside j (FCN-ResNet50's
// downsample and its scale before the residual sum). Empty when there is no such part, when r
// reads anything else made in j or retained into it, or when the part is all of j.
std::vector<OpId> ReaderPart(const Problem& problem, const Subgraph& sg, TensorId t,
                             const std::vector<TensorId>& retained_in) {
  OpId r = -1;
  for (OpId op : sg.ops) {
    const auto& in = problem.ops[op].inputs;
    if (std::find(in.begin(), in.end(), t) == in.end()) continue;
    if (r >= 0 || problem.ops[op].kind != OpKind::MatMul) return {};
    r = op;
  }
  if (r < 0) return {};
  for (TensorId x : problem.ops[r].inputs) {
    if (x == t) continue;
    if (Makes(problem, sg, x) || std::find(retained_in.begin(), retained_in.end(), x) != retained_in.end()) return {};
  }
  std::vector<OpId> part = {r};
  for (OpId cur = r;;) {
    OpId next = -1;
    int inside = 0;
    for (OpId c : problem.consumers[problem.ops[cur].output]) {
      if (Holds(sg, c)) {
        ++inside;
        next = c;
      }
    }
    if (inside != 1 || problem.ops[next].kind != OpKind::Pointwise || problem.ops[next].inputs.size() != 1) break;
    part.push_back(next);
    cur = next;
  }
  if (part.size() == sg.ops.size()) return {};
  return part;
}

// t = p(s) is servable by running p again where p is a Pointwise op of subgraph `sg` whose only
// input s is made in `sg` and read nowhere else (retaining s drops no write a later subgraph
// needs, R3), and t is read outside `sg` (so `sg` writes it and a loader exists).
bool ServableByRecompute(const Problem& problem, const Subgraph& sg, OpId p) {
  const Op& op = problem.ops[p];
  if (op.kind != OpKind::Pointwise || op.inputs.size() != 1) return false;
  const TensorId s = op.inputs[0];
  if (problem.IsGraphOutput(s) || problem.IsGraphOutput(op.output) || !Makes(problem, sg, s)) return false;
  auto in_sg = [&](OpId c) { return Holds(sg, c); };
  const auto& s_readers = problem.consumers[s];
  const auto& t_readers = problem.consumers[op.output];
  return std::all_of(s_readers.begin(), s_readers.end(), in_sg) && !std::all_of(t_readers.begin(), t_readers.end(), in_sg);
}

}  // namespace

Schedule ServeLoadsByRetention(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                               const std::function<bool()>& stop) {
  if (!MergeReadersApplies(problem)) return start;
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  for (int i = 0; i < static_cast<int>(evaluator.schedule().subgraphs.size()); ++i) {
    if (!evaluator.schedule().subgraphs[i].retain.empty()) continue;
    // A copy: proposals splice the evaluator's schedule.
    const std::vector<OpId> ops = evaluator.schedule().subgraphs[i].ops;
    for (OpId op : ops) {
      const TensorId t = problem.ops[op].output;
      if (problem.consumers[t].size() < 3 || problem.IsGraphOutput(t)) continue;
      const int n = static_cast<int>(evaluator.schedule().subgraphs.size());
      Latency best_total = current.total;
      std::optional<ScheduleEdit> best;
      int tried = 0;
      for (int j = 0; j < n && tried < kMaxLoaders; ++j) {
        if (stop && stop()) return evaluator.schedule();
        if (j == i || !Loader(problem, evaluator.schedule(), j, t)) continue;
        ++tried;
        const Schedule& now = evaluator.schedule();
        Subgraph server = now.subgraphs[i];
        server.retain = {t};
        Subgraph loader = now.subgraphs[j];
        // The loader's tiles may grow once t no longer crosses slow memory.
        if (auto fit = FitSubgraph(pricer, loader.ops, {t}, {}, &loader, false, stop)) loader = fit->subgraph;
        ScheduleEdit edit = ServeEdit(i, j, {std::move(server), std::move(loader)});
        const Candidate& c = evaluator.Propose(edit);
        if (c.valid && c.total < best_total) {
          best_total = c.total;
          best = std::move(edit);
        }
        evaluator.Revert();
      }
      if (!best) continue;
      const Candidate& c = evaluator.Propose(std::move(*best));
      if (c.valid && c.total < current.total) {
        evaluator.Commit();
        current = c;
        break;  // i now retains t; the server moved at most one place down
      }
      evaluator.Revert();
    }
  }
  return evaluator.schedule();
}

Schedule ServeLoadsByRecompute(const Problem& problem, const SubgraphPricer& pricer, const Schedule& start,
                               const std::function<bool()>& stop) {
  if (!MergeReadersApplies(problem)) return start;
  IncrementalEvaluator evaluator(problem, pricer.cache());
  Candidate current = evaluator.Reset(start);
  if (!current.valid) return start;
  const std::vector<int> rank = TopologicalRanks(problem);
  auto fit = [&](const std::vector<OpId>& ops, const std::vector<TensorId>& in, const std::vector<TensorId>& out,
                 const Subgraph* from) -> std::optional<Subgraph> {
    auto r = FitSubgraph(pricer, ops, in, out, from, false, stop);
    if (!r) return std::nullopt;
    return r->subgraph;
  };
  auto absorb_edit = [&](const Schedule& now, int i, OpId p) -> std::optional<ScheduleEdit> {
    const auto& subs = now.subgraphs;
    const int n = static_cast<int>(subs.size());
    const Op& op = problem.ops[p];
    if (i + 1 >= n || op.kind != OpKind::Pointwise || op.inputs.size() != 1) return std::nullopt;
    const TensorId s = op.inputs[0];
    if (!subs[i].retain.empty() || Holds(subs[i], p) || !Holds(subs[i + 1], p)) return std::nullopt;
    for (OpId c : problem.consumers[s]) {
      if (c != p && !Holds(subs[i], c)) return std::nullopt;
    }
    int last = i + 1;
    for (int k = i + 2; k < n; ++k) {
      if (Holds(subs[k], p)) last = k;
    }
    if (last == i + 1) return std::nullopt;  // no later copy: the loop below serves that form
    std::vector<OpId> with_p = subs[i].ops;
    with_p.push_back(p);
    auto server = fit(SortTopologically(rank, std::move(with_p)), move_kit::RetainedInto(now, i), {s}, &subs[i]);
    if (!server) return std::nullopt;
    auto next = fit(subs[i + 1].ops, {s}, subs[i + 1].retain, &subs[i + 1]);
    if (!next) return std::nullopt;
    ScheduleEdit edit;
    edit.begin = i;
    edit.end = last + 1;
    edit.replacement = {*server, *next};
    for (int k = i + 2; k <= last; ++k) {
      if (!Holds(subs[k], p)) {
        edit.replacement.push_back(subs[k]);
        continue;
      }
      std::vector<OpId> rest;
      for (OpId o : subs[k].ops) {
        if (o != p) rest.push_back(o);
      }
      if (rest.empty()) return std::nullopt;
      auto loader = fit(rest, move_kit::RetainedInto(now, k), subs[k].retain, &subs[k]);
      if (!loader) return std::nullopt;
      edit.replacement.push_back(*loader);
    }
    return edit;
  };
  // The subgraphs each op runs in, rebuilt after a commit. A loader of t holds a reader of t, so
  // only those subgraphs are tried, in schedule order as a scan of them all would (that scan per
  // (i, p) was most of the pass on ViT-B/16: 1,916 ops, ~900 subgraphs).
  std::vector<std::vector<int>> runs_in;
  bool runs_in_stale = true;
  std::vector<int> holders;
  auto readers_of = [&](TensorId t) -> const std::vector<int>& {
    if (runs_in_stale) {
      SubgraphsHoldingInto(evaluator.schedule(), problem.ops.size(), runs_in);
      runs_in_stale = false;
    }
    holders.clear();
    for (OpId c : problem.consumers[t]) holders.insert(holders.end(), runs_in[c].begin(), runs_in[c].end());
    std::sort(holders.begin(), holders.end());
    holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
    return holders;
  };
  for (int i = 0; i < static_cast<int>(evaluator.schedule().subgraphs.size()); ++i) {
    // A copy: proposals splice the evaluator's schedule.
    const std::vector<OpId> ops = evaluator.schedule().subgraphs[i].ops;
    // p runs in the subgraph after i, from s that i makes and writes, and again in later
    // subgraphs (the search's form of FCN-ResNet50's residual ReLU: alone before the k-split
    // conv1, again before the next residual sum): i runs p too, writes t and keeps s for i + 1;
    // the later copies of p load t instead. The loop below then finds nothing left to serve.
    for (OpId q : ops) {
      const TensorId s = problem.ops[q].output;
      if (problem.IsGraphOutput(s)) continue;
      bool committed = false;
      for (OpId p : problem.consumers[s]) {
        if (stop && stop()) return evaluator.schedule();
        if (std::optional<ScheduleEdit> edit = absorb_edit(evaluator.schedule(), i, p)) {
          const Candidate& c = evaluator.Propose(std::move(*edit));
          if (c.valid && c.total < current.total) {
            evaluator.Commit();
            runs_in_stale = true;
            current = c;
            committed = true;
            break;
          }
          evaluator.Revert();
        }
      }
      if (committed) break;
    }
    if (!evaluator.schedule().subgraphs[i].retain.empty()) continue;
    for (OpId p : ops) {
      if (!ServableByRecompute(problem, evaluator.schedule().subgraphs[i], p)) continue;
      const TensorId s = problem.ops[p].inputs[0];
      const TensorId t = problem.ops[p].output;
      // i keeps s for the subgraph after it: its tiles may have to shrink (R5).
      const Schedule& before = evaluator.schedule();
      const auto server = fit(before.subgraphs[i].ops, move_kit::RetainedInto(before, i), {s}, &before.subgraphs[i]);
      if (!server) continue;
      Latency best_total = current.total;
      std::optional<ScheduleEdit> best;
      int tried = 0;
      for (int j : readers_of(t)) {
        if (tried >= kMaxLoaders) break;
        if (stop && stop()) return evaluator.schedule();
        if (j == i) continue;
        const Schedule& now = evaluator.schedule();
        // The loader: j whole, or (after i) the part of j that reads t, the rest of j staying
        // where j was and loading what the part makes. Most j are neither: j is copied only
        // once it is a loader (on ViT-B/16 the copies were half of the pass), and before any
        // proposal, which may move the evaluator's subgraphs.
        const Subgraph& at_j = now.subgraphs[j];
        std::optional<Subgraph> rest;
        std::vector<OpId> part;
        const bool whole = Loader(problem, now, j, t);
        if (!whole) {
          if (j < i || Makes(problem, at_j, t)) continue;
          part = ReaderPart(problem, at_j, t, move_kit::RetainedInto(now, j));
          if (part.empty()) continue;
          std::vector<OpId> others;
          for (OpId o : at_j.ops) {
            if (std::find(part.begin(), part.end(), o) == part.end()) others.push_back(o);
          }
          rest = fit(others, move_kit::RetainedInto(now, j), at_j.retain, &at_j);
          if (!rest) continue;
        }
        Subgraph loader = at_j;
        if (!whole) {
          loader.ops = std::move(part);
          loader.retain.clear();
        }
        ++tried;
        auto consider = [&](std::vector<Subgraph> replacement) {
          if (rest) replacement.push_back(*rest);
          ScheduleEdit edit = ServeEdit(i, j, std::move(replacement));
          if (rest) --edit.kept_at;  // the rest of j stays after the subgraphs between
          const Candidate& c = evaluator.Propose(edit);
          if (c.valid && c.total < best_total) {
            best_total = c.total;
            best = std::move(edit);
          }
          evaluator.Revert();
        };
        // p runs again inside the loader, from s retained ...
        std::vector<OpId> with_p = loader.ops;
        with_p.push_back(p);
        if (auto joined = fit(SortTopologically(rank, std::move(with_p)), {s}, {}, &loader)) {
          consider({*server, *joined});
        }
        // ... or alone between them, keeping t for the loader (where the loader cannot hold p: a
        // k-split MatMul reading t, V11).
        if (auto alone = fit({p}, {s}, {t}, nullptr)) {
          if (auto served = fit(loader.ops, {t}, {}, &loader)) consider({*server, *alone, *served});
        }
      }
      if (!best) continue;
      const Candidate& c = evaluator.Propose(std::move(*best));
      if (c.valid && c.total < current.total) {
        evaluator.Commit();
        runs_in_stale = true;
        current = c;
        break;  // i now retains s
      }
      evaluator.Revert();
    }
  }
  return evaluator.schedule();
}

}  // namespace annealer
