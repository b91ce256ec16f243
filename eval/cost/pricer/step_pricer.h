// The pricer of one context (eval/cost/subgraph_cost.h's CostSubgraph): a subgraph at a
// granularity and traversal after a retained-in set. It turns the context into templates of
// every step's requests and charges (step_templates.cc: which slices of which tensors a step
// loads, holds and computes, symbolic in the step's row, column and k-step), prices one step
// from them (step_prices.cc: the oracle's D, C, M and W rules on the instantiated slices), and
// adds the steps up, one by one or by classes of equal steps (subgraph_cost.cc).
// Internal to eval/cost: nothing outside the pricer's three files includes it.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "eval/cost/pricer/pricing_shortcuts.h"
#include "eval/model/evaluation.h"
#include "eval/model/problem.h"
#include "eval/model/schedule.h"
#include "eval/model/subgraph_structure.h"

namespace annealer::pricing {

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline std::string Str(int64_t v) { return std::to_string(v); }

inline SubgraphResult Fail(Verdict verdict, std::string rule, std::string detail) {
  SubgraphResult result;
  result.verdict = verdict;
  result.violation.rule = std::move(rule);
  result.violation.detail = std::move(detail);
  return result;
}

// Which index an interval follows. kFixed is [0, bound); the others are
// [i * step, min(i * step + step, bound)) for the tile row, tile column or k-step index i.
enum class Axis : uint8_t { kTileRows, kTileCols, kReduction, kFixed };

struct IntervalTemplate {
  Axis axis = Axis::kFixed;
  Elements bound = 0;  // the smallest end met on the way (grid edge, K*, tensor sides)
  bool operator==(const IntervalTemplate&) const = default;
};

struct Region {
  Elements r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  Elements rows() const { return r1 - r0; }
  Elements cols() const { return c1 - c0; }
  Elements size() const { return rows() * cols(); }
  bool operator==(const Region&) const = default;
};

// When a template is present: every k-step (fed by the k-loop), the tile's last k-step
// (fed by an epilogue op), or both.
enum Presence : uint8_t { kEveryStep = 1, kLastStep = 2 };

enum class ChargeKind : uint8_t { kKLoop, kStripLhs, kStripRhs, kFull, kEpilogue };

struct RequestTemplate {
  TensorId tensor;
  IntervalTemplate rows, cols;
  uint8_t presence;
  uint8_t roles;  // SliceRole bits (H1); 0 when the chip has no rules
};

struct ChargeTemplate {
  OpId op;
  IntervalTemplate rows, cols;
  ChargeKind kind;
  uint8_t presence;
  double base;
};

enum class Demand : uint8_t { kEpilogue, kStripLhs, kStripRhs, kFull };

struct StepCoord {
  int64_t row = 0, col = 0, j = 0;
};

// No default initializers: the class tables below hold up to 24 of them and only the classes
// that occur are ever filled or read.
struct StepPrice {
  double compute;
  double memory;
  Elements working_set;
  RoleUse roles;              // H1; zero when the chip has no rules
  double prefetchable;        // H5: the part of memory that may move into the step before
  Elements weight_slices;     // H6: the weight FIFO's content; zero without a weight path
};

// The part of a step's price that reads only the step's own requests (not the step before):
// PriceByClasses prices a tile class's first step after each move into it, with the same
// requests every time.
struct StepOwnPart {
  bool known = false;
  double compute = 0;
  Elements slices = 0, weight_slices = 0;
  RoleUse use;
};

// Insertion sort: template lists are short, and std::stable_sort would allocate a buffer.
template <typename T, typename Key>
void StableSortBy(std::vector<T>& v, Key key) {
  for (size_t i = 1; i < v.size(); ++i) {
    for (size_t j = i; j > 0 && key(v[j]) < key(v[j - 1]); --j) std::swap(v[j], v[j - 1]);
  }
}

struct FeedKey {
  TensorId t;
  IntervalTemplate rows, cols;
  Demand demand;
  uint8_t presence;
  uint8_t role;
  bool operator==(const FeedKey&) const = default;
};

// The pricer's buffers, kept per thread so that pricing a subgraph allocates nothing once the
// buffers have grown (the cold path runs millions of times in a search).
struct PricerScratch {
  SubgraphStructure structure;
  std::vector<RequestTemplate> requests, merged_requests;
  std::vector<int> request_group_begin, request_group_end;
  std::vector<ChargeTemplate> charges, merged_charges;
  std::vector<int> charge_group_begin, charge_group_end;
  std::vector<Region> whole;
  std::vector<char> weight;
  // Per request template: alive at a step that is not the tile's last k-step, and at the last.
  std::vector<char> alive_mid, alive_last;
  // Per request template: the step indices its slice follows (bit 0 the tile row, 1 the tile
  // column, 2 the k-step; none for a fixed side; see PriceStep).
  std::vector<uint8_t> follows;
  // The request templates' sides apart, for RequestSizes; and its output.
  std::vector<uint8_t> row_axis, col_axis;
  std::vector<Elements> row_bound, col_bound;
  std::vector<Elements> sizes;
  // Whether a tensor has several request templates or an op several charge templates (D5 and
  // C5 then compare slices), and whether a template is on the weight path (H6).
  bool multi_request_groups = false, multi_charge_groups = false, any_weight = false;
  std::vector<FeedKey> fed;
  std::vector<Region> cur_regions, prev_regions;
  std::vector<char> cur_alive, prev_alive;
  std::vector<uint8_t> cur_roles, prev_roles;
  std::vector<Region> seen_regions;
  std::vector<double> seen_amounts;

  // The last context analysed within a ContextReuse scope (eval/cost/context_reuse.h): `structure`
  // holds its granularity-free part when `generation` is the scope's, and the templates above
  // (with the step-independent terms below) are those of `retained_in` when `templates` is set.
  uint64_t generation = 0;
  const Problem* problem = nullptr;
  std::vector<OpId> ops;
  std::vector<TensorId> retain, retained_in;
  std::optional<Violation> context_violation;
  bool templates = false;
  Elements resident = 0;
  int written_sinks = 0, vector_sinks = 0, wide_sinks = 0;
  uint8_t double_buffered = 0;
};

inline PricerScratch& ThreadScratch() {
  thread_local PricerScratch scratch;
  return scratch;
}

class StepPricer {
 public:
  StepPricer(const Problem& problem, const Subgraph& subgraph,
             const std::vector<TensorId>& retained_in)
      : problem_(problem), subgraph_(subgraph), retained_in_(retained_in) {}

  // Returns the failure, or nullopt when the subgraph is well formed and analysed. The checks
  // are AnalyseSubgraph's in its parts (eval/model/subgraph_structure.h), so that the granularity-free
  // part of a context priced just before in the same ContextReuse scope is not derived again.
  std::optional<SubgraphResult> Analyse();

  bool step_classes_apply() const { return step_classes_apply_; }

  SubgraphResult PriceByClasses();
  SubgraphResult PriceStepByStep();

 private:
  bool Produced(TensorId t) const { return structure_.Produces(problem_, t); }
  bool ConsumedInside(TensorId t) const { return structure_.ConsumesInside(problem_, t); }
  bool RetainedIn(TensorId t) const {
    return std::find(retained_in_.begin(), retained_in_.end(), t) != retained_in_.end();
  }
  bool RetainedOut(TensorId t) const {
    return std::find(subgraph_.retain.begin(), subgraph_.retain.end(), t) !=
           subgraph_.retain.end();
  }

  void BuildTemplates();
  // The part of BuildTemplates that reads neither the granularity nor the traversal.
  void BuildContextTemplates();
  void Feed(TensorId t, IntervalTemplate rows, IntervalTemplate cols, Demand demand,
            uint8_t presence, uint8_t role);
  bool NeverEmpty(const IntervalTemplate& interval) const {
    switch (interval.axis) {
      case Axis::kTileRows: return (rows_ - 1) * g_.h < interval.bound;
      case Axis::kTileCols: return (cols_ - 1) * g_.w < interval.bound;
      case Axis::kReduction: return (k_steps_ - 1) * k_ < interval.bound;
      case Axis::kFixed: return interval.bound > 0;
    }
    return false;
  }
  // Whether the equality of interval a at one step and interval b at another (or the same)
  // step is decided by the two steps' classes, for never-empty intervals of one side (rows or
  // columns) of two templates of one tensor or one op.
  bool Meets(const IntervalTemplate& a, const IntervalTemplate& b) const;

  // Interval i of a template axis, exactly as the oracle derives it.
  void Instantiate(const IntervalTemplate& t, const StepCoord& s, Elements& lo, Elements& hi) const {
    switch (t.axis) {
      case Axis::kTileRows: lo = s.row * g_.h; hi = std::min(lo + g_.h, t.bound); return;
      case Axis::kTileCols: lo = s.col * g_.w; hi = std::min(lo + g_.w, t.bound); return;
      case Axis::kReduction: lo = s.j * k_; hi = std::min(lo + k_, t.bound); return;
      case Axis::kFixed: lo = 0; hi = t.bound; return;
    }
  }
  // The same by table, without a branch on the axis: an axis's index (row, column, k-step, or
  // 0 for kFixed) times its step (0 for kFixed) starts the interval, which ends `extent_` later
  // (unbounded for kFixed) or at the bound. Set by BuildTemplates for the granularity.
  struct AxisCoords {
    int64_t index[4];
  };
  static AxisCoords CoordsOf(const StepCoord& s) { return {{s.row, s.col, s.j, 0}}; }
  void InstantiateFast(const IntervalTemplate& t, const AxisCoords& c, Elements& lo, Elements& hi) const {
    const int a = static_cast<int>(t.axis);
    lo = c.index[a] * axis_step_[a];
    hi = std::min(lo + axis_extent_[a], t.bound);
  }
  Region RegionFast(const IntervalTemplate& rows, const IntervalTemplate& cols, const AxisCoords& c) const {
    Region r;
    InstantiateFast(rows, c, r.r0, r.r1);
    InstantiateFast(cols, c, r.c0, r.c1);
    return r;
  }
  Elements axis_step_[4] = {0, 0, 0, 0};
  Elements axis_extent_[4] = {0, 0, 0, 0};
  Region RegionOf(const IntervalTemplate& rows, const IntervalTemplate& cols,
                  const StepCoord& s) const {
    Region r;
    Instantiate(rows, s, r.r0, r.r1);
    Instantiate(cols, s, r.c0, r.c1);
    return r;
  }

  // The deduplicated requests of a step (spec D5): alive[i] says whether request template i
  // survives, regions[i] its slice, roles[i] the roles of every request it stands for (H1;
  // filled only when the chip has rules).
  void Requests(const StepCoord& s, std::vector<Region>& regions, std::vector<char>& alive,
                std::vector<uint8_t>& roles) const;
  // Prices step `s` whose requests are (regions, alive, roles), after a step with (prev_regions,
  // prev_alive) or after no step (has_prev false).
  // `own`, if given: the step's own part, read from it if known, else stored in it.
  // `prev_step`, if given (reuse_by_indices_ only): the step before, whose requests are then
  // not read.
  StepPrice Price(const StepCoord& s, const std::vector<Region>& regions,
                  const std::vector<char>& alive, const std::vector<uint8_t>& roles, bool has_prev,
                  const std::vector<Region>& prev_regions,
                  const std::vector<char>& prev_alive, StepOwnPart* own = nullptr,
                  const StepCoord* prev_step = nullptr, const Elements* sizes = nullptr) const;
  // reuse_by_indices_ only: the size of each request's slice at step s into scratch_.sizes, 0
  // for a request not alive there (one template per tensor: D5 removes none). Price then reads
  // the sizes instead of the regions.
  void RequestSizes(const StepCoord& s) const;
  // The rule the step breaks (W, then H1), or nullopt.
  std::optional<SubgraphResult> StepFailure(const StepPrice& price, int64_t step, int64_t tile, int64_t j) const {
    if (price.working_set > problem_.fast_memory_capacity) {
      return Fail(Verdict::kOutOfMemory, "W",
                  ViolationWordsOff::Wanted() ? OutOfMemoryDetail(step, tile, j, price.working_set) : std::string());
    }
    if (rules_on_) {
      if (std::optional<std::string> overflow = RoleOverflow(problem_.chip, price.roles, step, tile, j)) {
        return Fail(Verdict::kOutOfMemory, "H1", std::move(*overflow));
      }
      if (std::optional<std::string> overflow = WeightFifoOverflow(problem_.chip, price.weight_slices, step, tile, j)) {
        return Fail(Verdict::kOutOfMemory, "H6", std::move(*overflow));
      }
    }
    return std::nullopt;
  }
  bool StepFails(const StepPrice& price) const {
    return price.working_set > problem_.fast_memory_capacity ||
           (rules_on_ && (RoleOverflow(problem_.chip, price.roles, 0, 0, 0).has_value() ||
                          WeightFifoOverflow(problem_.chip, price.weight_slices, 0, 0, 0).has_value()));
  }

  // Prices step `s` after step `prev` (or after nothing). The requests of a step are a function
  // of its coordinates alone (for this pricer's context and granularity), so PriceByClasses'
  // representative steps keep those of the last two steps it derived in the cur and prev
  // buffers (`cur_step_`, `prev_step_`) and derive only the others: a tile class's first step
  // is priced after up to four moves, a middle step after the first.
  StepPrice PriceStep(const StepCoord& s, const StepCoord* prev);
  std::optional<StepCoord> cur_step_, prev_step_;
  StepOwnPart cur_own_;  // of the step whose requests are in the cur buffers, once priced

  std::string OutOfMemoryDetail(int64_t step, int64_t tile, int64_t j, Elements ws) const {
    return "step " + Str(step) + " (tile " + Str(tile) + ", k-step " + Str(j) +
           ") needs a working set of " + Str(ws) + " > capacity " +
           Str(problem_.fast_memory_capacity);
  }

  const Problem& problem_;
  const Subgraph& subgraph_;
  const std::vector<TensorId>& retained_in_;
  PricerScratch& scratch_ = ThreadScratch();
  Granularity g_;

  SubgraphStructure& structure_ = scratch_.structure;
  std::vector<OpId>& sinks_ = structure_.sinks;
  std::vector<OpId>& k_loop_matmuls_ = structure_.k_loop_matmuls;
  std::vector<OpId>& epilogue_ops_ = structure_.epilogue_ops;
  Elements reduction_ = 0;
  int64_t rows_ = 0, cols_ = 0, k_steps_ = 1;
  Elements k_ = 1;
  Elements z_height_ = 0, z_width_ = 0;

  // Step-independent terms (spec R5, M2, W4).
  Elements resident_ = 0;
  int written_sinks_ = 0;
  int accumulators_ = 0;
  // The chip's rules (H1-H6): whether any is on, the sinks whose tile is in the vector buffer,
  // the written k-loop MatMul sinks widened by H4, the roles H5 may prefetch.
  bool rules_on_ = problem_.chip.any();
  int vector_sinks_ = 0;
  int wide_sinks_ = 0;
  uint8_t double_buffered_ = 0;

  std::vector<RequestTemplate>& requests_ = scratch_.requests;  // sorted by tensor
  std::vector<int>& request_group_end_ = scratch_.request_group_end;  // end of the tensor's run
  std::vector<int>& request_group_begin_ = scratch_.request_group_begin;
  std::vector<ChargeTemplate>& charges_ = scratch_.charges;  // sorted by op
  std::vector<int>& charge_group_begin_ = scratch_.charge_group_begin;
  std::vector<int>& charge_group_end_ = scratch_.charge_group_end;
  std::vector<Region>& whole_ = scratch_.whole;  // per request template: its whole tensor
  std::vector<char>& weight_ = scratch_.weight;  // per request template: on the weight path (H6)
  std::vector<char>& alive_mid_ = scratch_.alive_mid;
  std::vector<char>& alive_last_ = scratch_.alive_last;
  std::vector<uint8_t>& follows_ = scratch_.follows;
  // PriceStep tells a held-over slice by the step indices (see there): step classes apply, no
  // chip rules or weight path, one request template per tensor.
  bool reuse_by_indices_ = false;
  bool shortcuts_ = true;  // PricingShortcutsOff::Allowed() when the granularity was set
  bool step_classes_apply_ = false;
  bool reuse_templates_ = false;  // the scratch holds this context's templates (see Analyse)

  std::vector<FeedKey>& fed_ = scratch_.fed;

  // Scratch for pricing.
  std::vector<Region>& cur_regions_ = scratch_.cur_regions;
  std::vector<Region>& prev_regions_ = scratch_.prev_regions;
  std::vector<char>& cur_alive_ = scratch_.cur_alive;
  std::vector<char>& prev_alive_ = scratch_.prev_alive;
  std::vector<uint8_t>& cur_roles_ = scratch_.cur_roles;
  std::vector<uint8_t>& prev_roles_ = scratch_.prev_roles;
  // Distinct charge regions of one op within a step (C5).
  std::vector<Region>& seen_regions_ = scratch_.seen_regions;
  std::vector<double>& seen_amounts_ = scratch_.seen_amounts;
};

}  // namespace annealer::pricing
