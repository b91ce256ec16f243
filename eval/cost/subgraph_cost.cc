// See subgraph_cost.h for the method. The structural checks are the oracle's own
// (eval/model/subgraph_structure.h), so both report the same first violation.
#include "eval/cost/subgraph_cost.h"

#include "eval/cost/context_reuse.h"
#include "eval/cost/pricing_stop.h"
#include "eval/model/subgraph_structure.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>

namespace annealer {

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
std::string Str(int64_t v) { return std::to_string(v); }

SubgraphResult Fail(Verdict verdict, std::string rule, std::string detail) {
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

PricerScratch& ThreadScratch() {
  thread_local PricerScratch scratch;
  return scratch;
}

class SubgraphPricer {
 public:
  SubgraphPricer(const Problem& problem, const Subgraph& subgraph,
                 const std::vector<TensorId>& retained_in)
      : problem_(problem), subgraph_(subgraph), retained_in_(retained_in) {}

  // Returns the failure, or nullopt when the subgraph is well formed and analysed. The checks
  // are AnalyseSubgraph's in its parts (eval/model/subgraph_structure.h), so that the granularity-free
  // part of a context priced just before in the same ContextReuse scope is not derived again.
  std::optional<SubgraphResult> Analyse() {
    PricerScratch& m = scratch_;
    const uint64_t generation = ContextReuse::Current();
    const bool same_context = generation != 0 && m.generation == generation && m.problem == &problem_ &&
                              m.ops == subgraph_.ops && m.retain == subgraph_.retain;
    if (!same_context) {
      m.generation = 0;
      m.templates = false;
      m.context_violation = AnalyseContext(problem_, subgraph_, structure_);
      if (generation != 0) {
        m.generation = generation;
        m.problem = &problem_;
        m.ops.assign(subgraph_.ops.begin(), subgraph_.ops.end());
        m.retain.assign(subgraph_.retain.begin(), subgraph_.retain.end());
      }
    }
    const std::optional<Violation>& context = m.context_violation;
    std::optional<Violation> violation;
    if (context && context->rule == "V1") {
      violation = context;
    } else if ((violation = CheckGranularityRange(problem_, subgraph_.granularity))) {
    } else if (context) {
      violation = context;
    } else {
      violation = AnalyseGranularity(problem_, subgraph_, structure_);
    }
    if (!violation) violation = CheckRetainedIn(problem_, retained_in_);
    if (violation) {
      return Fail(Verdict::kInvalid, std::move(violation->rule), std::move(violation->detail));
    }
    reuse_templates_ = same_context && m.templates && m.retained_in == retained_in_;
    g_ = subgraph_.granularity;
    reduction_ = structure_.reduction;
    rows_ = structure_.rows;
    cols_ = structure_.cols;
    z_height_ = structure_.output_height;
    z_width_ = structure_.output_width;
    BuildTemplates();
    return std::nullopt;
  }

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
  bool NeverEmpty(const IntervalTemplate& interval) const;
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

// The oracle's Feed (spec D3, D4, C3) on symbolic intervals.
void SubgraphPricer::Feed(TensorId t, IntervalTemplate rows, IntervalTemplate cols,
                          Demand demand, uint8_t presence, uint8_t role) {
  if (!rules_on_) role = 0;  // without rules, templates merge exactly as they always did
  const Tensor& tensor = problem_.tensors[t];
  rows.bound = std::min(rows.bound, tensor.height);
  cols.bound = std::min(cols.bound, tensor.width);
  // A second identical walk adds only identical templates (merged anyway): skip it, which
  // also keeps diamond-heavy subgraphs linear.
  const FeedKey key{t, rows, cols, demand, presence, role};
  if (std::find(fed_.begin(), fed_.end(), key) != fed_.end()) return;
  fed_.push_back(key);
  if (structure_.Gathered(problem_, t)) {  // D4, L2
    // R2; a Layout op of the subgraph gathers its output even when a copy is retained in.
    if (!RetainedIn(t) || Produced(t)) requests_.push_back({t, rows, cols, presence, role});
    return;
  }
  if (demand == Demand::kEpilogue) return;
  const OpId p = problem_.producer[t];
  const Op& op = problem_.ops[p];
  const ChargeKind kind = demand == Demand::kStripLhs   ? ChargeKind::kStripLhs
                          : demand == Demand::kStripRhs ? ChargeKind::kStripRhs
                                                        : ChargeKind::kFull;
  charges_.push_back({p, rows, cols, kind, presence, op.base_cost});
  if (op.kind == OpKind::Pointwise) {
    for (TensorId in : op.inputs) Feed(in, rows, cols, demand, presence, kVectorRole);
  } else {
    const Elements k_op = problem_.ReductionLength(p);
    Feed(op.inputs[0], rows, {Axis::kFixed, k_op}, Demand::kFull, presence, kStagingRole);
    Feed(op.inputs[1], {Axis::kFixed, k_op}, cols, Demand::kFull, presence, kStagingRole);
  }
}

bool SubgraphPricer::NeverEmpty(const IntervalTemplate& interval) const {
  switch (interval.axis) {
    case Axis::kTileRows: return (rows_ - 1) * g_.h < interval.bound;
    case Axis::kTileCols: return (cols_ - 1) * g_.w < interval.bound;
    case Axis::kReduction: return (k_steps_ - 1) * k_ < interval.bound;
    case Axis::kFixed: return interval.bound > 0;
  }
  return false;
}

void SubgraphPricer::BuildTemplates() {
  k_ = reduction_ > 0 ? g_.k : 1;
  k_steps_ = reduction_ > 0 ? CeilDiv(reduction_, k_) : 1;
  // InstantiateFast's tables: kFixed is [0 * 0, min(0 + max, bound)) = [0, bound).
  axis_step_[0] = axis_extent_[0] = g_.h;
  axis_step_[1] = axis_extent_[1] = g_.w;
  axis_step_[2] = axis_extent_[2] = k_;
  axis_step_[3] = 0;
  axis_extent_[3] = std::numeric_limits<Elements>::max();
  PricerScratch& m = scratch_;
  if (reuse_templates_) {
    resident_ = m.resident;
    written_sinks_ = m.written_sinks;
    vector_sinks_ = m.vector_sinks;
    wide_sinks_ = m.wide_sinks;
    double_buffered_ = m.double_buffered;
  } else {
    m.templates = false;
    BuildContextTemplates();
    if (m.generation != 0) {  // within a scope, and m holds this context's structure
      m.templates = true;
      m.retained_in.assign(retained_in_.begin(), retained_in_.end());
      m.resident = resident_;
      m.written_sinks = written_sinks_;
      m.vector_sinks = vector_sinks_;
      m.wide_sinks = wide_sinks_;
      m.double_buffered = double_buffered_;
    }
  }
  if (k_steps_ > 1) {
    for (OpId m : k_loop_matmuls_) accumulators_ += ConsumedInside(problem_.ops[m].output) ? 1 : 0;
  }
  const int num_requests = static_cast<int>(requests_.size());
  const int num_charges = static_cast<int>(charges_.size());

  // Step classes are exact when no interval is ever empty and, within a tensor's requests and
  // within an op's charges, whether two slices of two steps are equal is decided by the steps'
  // classes (see Meets).
  bool classes = true;
  for (int i = 0; i < num_requests && classes; ++i) {
    classes = NeverEmpty(requests_[i].rows) && NeverEmpty(requests_[i].cols);
    for (int x = request_group_begin_[i]; x < i && classes; ++x) {
      classes = Meets(requests_[x].rows, requests_[i].rows) && Meets(requests_[x].cols, requests_[i].cols);
    }
  }
  for (int i = 0; i < num_charges && classes; ++i) {
    classes = NeverEmpty(charges_[i].rows) && NeverEmpty(charges_[i].cols);
    for (int x = charge_group_begin_[i]; x < i && classes; ++x) {
      classes = Meets(charges_[x].rows, charges_[i].rows) && Meets(charges_[x].cols, charges_[i].cols);
    }
  }
  step_classes_apply_ = classes;
  shortcuts_ = PricingShortcutsOff::Allowed();
  reuse_by_indices_ = shortcuts_ && classes && !rules_on_ && !scratch_.any_weight && !scratch_.multi_request_groups;
}

bool SubgraphPricer::Meets(const IntervalTemplate& a, const IntervalTemplate& b) const {
  // Intervals that are never empty: index i of a moving axis is [i * step, min(i * step + step,
  // bound)), clipped at the last index only ((count - 1) * step < bound), so distinct indices
  // give distinct intervals. Two intervals of one axis are equal exactly when their indices are
  // and, at the last index, their clipped ends are: both class facts (a changed index is a move
  // class, the last index an edge or last-k-step class).
  if (a.axis == b.axis) return true;
  if (a.axis != Axis::kFixed && b.axis != Axis::kFixed) return false;  // e.g. rows vs k-range
  // A fixed interval [0, f) and a moving one: only the moving axis's first interval, [0,
  // min(step, bound)), can equal it; index 0 is no class, so they must never be equal, or the
  // axis must have that one index.
  const IntervalTemplate& moving = a.axis == Axis::kFixed ? b : a;
  const Elements fixed_end = a.axis == Axis::kFixed ? a.bound : b.bound;
  Elements step = 0;
  int64_t count = 0;
  switch (moving.axis) {
    case Axis::kTileRows: step = g_.h; count = rows_; break;
    case Axis::kTileCols: step = g_.w; count = cols_; break;
    case Axis::kReduction: step = k_; count = k_steps_; break;
    case Axis::kFixed: return true;
  }
  return std::min(step, moving.bound) != fixed_end || count == 1;
}

void SubgraphPricer::BuildContextTemplates() {
  requests_.clear();
  charges_.clear();
  fed_.clear();
  for (TensorId t : retained_in_) resident_ += problem_.tensors[t].size();
  for (TensorId t : subgraph_.retain) {
    if (!RetainedIn(t)) resident_ += problem_.tensors[t].size();
  }
  for (OpId s : sinks_) written_sinks_ += RetainedOut(problem_.ops[s].output) ? 0 : 1;
  if (rules_on_) {  // the oracle's H1, H4, H5 terms
    const ChipRules& chip = problem_.chip;
    for (OpId s : sinks_) {
      vector_sinks_ += problem_.ops[s].kind != OpKind::MatMul ? 1 : 0;
      wide_sinks_ += chip.wide_writeback && problem_.ops[s].kind == OpKind::MatMul &&
                     !RetainedOut(problem_.ops[s].output);
    }
    double_buffered_ = (chip.double_staging ? kStagingRole : 0) | (chip.double_vector ? kVectorRole : 0);
  }

  const IntervalTemplate tile_rows{Axis::kTileRows, z_height_};
  const IntervalTemplate tile_cols{Axis::kTileCols, z_width_};
  const IntervalTemplate k_range{Axis::kReduction, reduction_};
  // D2, C2: the k-loop MatMuls, every step.
  for (OpId m : k_loop_matmuls_) {
    const Op& op = problem_.ops[m];
    charges_.push_back({m, tile_rows, tile_cols, ChargeKind::kKLoop, kEveryStep, op.base_cost});
    Feed(op.inputs[0], tile_rows, k_range, Demand::kStripLhs, kEveryStep, kStagingRole);
    Feed(op.inputs[1], k_range, tile_cols, Demand::kStripRhs, kEveryStep, kStagingRole);
  }
  // D1, C1, C4: epilogue ops at the tile's last k-step.
  for (OpId e : epilogue_ops_) {
    const Op& op = problem_.ops[e];
    charges_.push_back({e, tile_rows, tile_cols, ChargeKind::kEpilogue, kLastStep, op.base_cost});
    for (TensorId in : op.inputs) Feed(in, tile_rows, tile_cols, Demand::kEpilogue, kLastStep, kVectorRole);
  }

  // L4: a Layout sink (alone) loads its tile of the output, which M2 then writes.
  if (structure_.layout_sink) {
    Feed(problem_.ops[sinks_[0]].output, tile_rows, tile_cols, Demand::kEpilogue, kLastStep, kVectorRole);
  }

  // Merge identical request templates (their presences add up; H1's roles too when the
  // presences or the roles agree, else a template present only at the last step would lend its
  // role to every step) and group by tensor.
  StableSortBy(requests_, [](const RequestTemplate& r) { return r.tensor; });
  std::vector<RequestTemplate>& merged = scratch_.merged_requests;
  merged.clear();
  for (const RequestTemplate& r : requests_) {
    bool found = false;
    for (size_t i = merged.size(); i-- > 0 && merged[i].tensor == r.tensor;) {
      if (merged[i].rows == r.rows && merged[i].cols == r.cols &&
          (merged[i].roles == r.roles || merged[i].presence == r.presence)) {
        merged[i].presence |= r.presence;
        merged[i].roles |= r.roles;
        found = true;
        break;
      }
    }
    if (!found) merged.push_back(r);
  }
  requests_.swap(merged);
  const int num_requests = static_cast<int>(requests_.size());
  request_group_begin_.resize(num_requests);
  request_group_end_.resize(num_requests);
  whole_.resize(num_requests);
  weight_.resize(num_requests);
  alive_mid_.resize(num_requests);
  alive_last_.resize(num_requests);
  follows_.resize(num_requests);
  scratch_.row_axis.resize(num_requests);
  scratch_.col_axis.resize(num_requests);
  scratch_.row_bound.resize(num_requests);
  scratch_.col_bound.resize(num_requests);
  scratch_.sizes.resize(num_requests);
  scratch_.multi_request_groups = false;
  scratch_.any_weight = false;
  for (int i = 0; i < num_requests;) {
    int end = i;
    while (end < num_requests && requests_[end].tensor == requests_[i].tensor) ++end;
    const char on_weight_path = problem_.OnWeightPath(requests_[i].tensor);
    scratch_.multi_request_groups = scratch_.multi_request_groups || end - i > 1;
    scratch_.any_weight = scratch_.any_weight || on_weight_path;
    for (int x = i; x < end; ++x) {
      alive_mid_[x] = (requests_[x].presence & kEveryStep) != 0;
      auto follow = [](Axis a) -> uint8_t { return a == Axis::kFixed ? 0 : uint8_t{1} << static_cast<int>(a); };
      follows_[x] = follow(requests_[x].rows.axis) | follow(requests_[x].cols.axis);
      scratch_.row_axis[x] = static_cast<uint8_t>(requests_[x].rows.axis);
      scratch_.col_axis[x] = static_cast<uint8_t>(requests_[x].cols.axis);
      scratch_.row_bound[x] = requests_[x].rows.bound;
      scratch_.col_bound[x] = requests_[x].cols.bound;
      alive_last_[x] = (requests_[x].presence & (kEveryStep | kLastStep)) != 0;
      request_group_begin_[x] = i;
      request_group_end_[x] = end;
      const Tensor& tensor = problem_.tensors[requests_[x].tensor];
      whole_[x] = {0, tensor.height, 0, tensor.width};
      weight_[x] = on_weight_path;
    }
    i = end;
  }

  StableSortBy(charges_, [](const ChargeTemplate& c) { return c.op; });
  std::vector<ChargeTemplate>& merged_charges = scratch_.merged_charges;
  merged_charges.clear();
  for (const ChargeTemplate& c : charges_) {
    bool found = false;
    for (size_t i = merged_charges.size(); i-- > 0 && merged_charges[i].op == c.op;) {
      if (merged_charges[i].rows == c.rows && merged_charges[i].cols == c.cols &&
          merged_charges[i].kind == c.kind) {
        merged_charges[i].presence |= c.presence;
        found = true;
        break;
      }
    }
    if (!found) merged_charges.push_back(c);
  }
  charges_.swap(merged_charges);
  const int num_charges = static_cast<int>(charges_.size());
  charge_group_begin_.resize(num_charges);
  charge_group_end_.resize(num_charges);
  scratch_.multi_charge_groups = false;
  for (int i = 0; i < num_charges;) {
    int end = i;
    while (end < num_charges && charges_[end].op == charges_[i].op) ++end;
    scratch_.multi_charge_groups = scratch_.multi_charge_groups || end - i > 1;
    for (int x = i; x < end; ++x) {
      charge_group_begin_[x] = i;
      charge_group_end_[x] = end;
    }
    i = end;
  }

  cur_regions_.resize(num_requests);
  prev_regions_.resize(num_requests);
  cur_alive_.resize(num_requests);
  prev_alive_.resize(num_requests);
  cur_roles_.resize(num_requests);
  prev_roles_.resize(num_requests);
}

void SubgraphPricer::Requests(const StepCoord& s, std::vector<Region>& regions,
                              std::vector<char>& alive, std::vector<uint8_t>& roles) const {
  const bool last = s.j == k_steps_ - 1;
  const int num_requests = static_cast<int>(requests_.size());
  // alive[i] = (presence & kEveryStep) || (last && (presence & kLastStep)), from the tables.
  const char* on = last ? alive_last_.data() : alive_mid_.data();
  const RequestTemplate* r = requests_.data();
  Region* out = regions.data();
  char* live = alive.data();
  const AxisCoords c = CoordsOf(s);
  for (int i = 0; i < num_requests; ++i) {
    live[i] = on[i];
    if (on[i]) out[i] = RegionFast(r[i].rows, r[i].cols, c);
  }
  if (rules_on_) {
    for (int i = 0; i < num_requests; ++i) roles[i] = r[i].roles;
  }
  if (!scratch_.multi_request_groups && shortcuts_) return;
  // D5 within each tensor: identical slices once, a whole-tensor slice covers the others.
  for (int b = 0; b < num_requests;) {
    const int e = request_group_end_[b];
    if (e - b > 1) {
      bool whole = false;
      for (int i = b; i < e; ++i) {
        if (!alive[i]) continue;
        for (int x = b; x < i; ++x) {
          if (alive[x] && regions[x] == regions[i]) {
            alive[i] = 0;
            if (rules_on_) roles[x] |= roles[i];  // H1: the copy kept plays both roles
            break;
          }
        }
        if (alive[i] && regions[i] == whole_[i]) whole = true;
      }
      if (whole) {
        int kept = b;  // the one whole copy left after the loop above
        while (!(alive[kept] && regions[kept] == whole_[kept])) ++kept;
        for (int i = b; i < e; ++i) {
          if (alive[i] && regions[i] != whole_[i]) {
            alive[i] = 0;
            if (rules_on_) roles[kept] |= roles[i];
          }
        }
      }
    }
    b = e;
  }
}

StepPrice SubgraphPricer::Price(const StepCoord& s, const std::vector<Region>& regions,
                                const std::vector<char>& alive, const std::vector<uint8_t>& roles,
                                bool has_prev,
                                const std::vector<Region>& prev_regions,
                                const std::vector<char>& prev_alive, StepOwnPart* own,
                                const StepCoord* prev_step, const Elements* sizes) const {
  const bool last = s.j == k_steps_ - 1;
  const Elements n = problem_.native;
  const Elements k0 = s.j * k_;
  const Elements k_len = std::min(k0 + k_, reduction_) - k0;

  // M1: loads, skipping slices held over from the previous step.
  Elements loaded = 0;
  Elements slices = 0;
  RoleUse use;
  Elements prefetchable = 0;
  Elements weight_loaded = 0, weight_slices = 0;  // H6
  // The sums of the step's own part are of integers (any order gives the same) or, for
  // compute, the same loop as when it is not known.
  const bool known = own != nullptr && own->known;
  const int num_requests = static_cast<int>(requests_.size());
  const bool plain = shortcuts_ && !rules_on_ && !scratch_.any_weight;
  if (plain && !scratch_.multi_request_groups) {
    // No roles, no weight path, one template per tensor: the loop below with its branches
    // decided. (`slices` is summed even when known: the same integers, replaced below.)
    const Region* cur = regions.data();
    const char* live = alive.data();
    if (sizes != nullptr) {
      // As below, a request not alive having size 0.
      if (has_prev) {
        const StepCoord& p = *prev_step;
        const int moved = (p.row != s.row ? 1 : 0) | (p.col != s.col ? 2 : 0) | (p.j != s.j ? 4 : 0);
        const char* was = p.j == k_steps_ - 1 ? alive_last_.data() : alive_mid_.data();
        const uint8_t* follows = follows_.data();
        for (int i = 0; i < num_requests; ++i) {
          slices += sizes[i];
          if (!was[i] || (follows[i] & moved) != 0) loaded += sizes[i];
        }
      } else {
        for (int i = 0; i < num_requests; ++i) slices += sizes[i];
        loaded = slices;
      }
    } else if (has_prev && prev_step != nullptr) {
      // Step classes apply, so no slice is empty and two steps' slices of one template are
      // equal exactly when the indices it follows are (Meets). The other reuse, a whole-tensor
      // slice before, needs nothing more: a side following an index is the whole side only at
      // index 0 with min(step, bound) = side, and a never-empty interval then has that one
      // index ((count - 1) * step < bound <= side <= step), so the slice did not move.
      const StepCoord& p = *prev_step;
      const int moved = (p.row != s.row ? 1 : 0) | (p.col != s.col ? 2 : 0) | (p.j != s.j ? 4 : 0);
      const char* was = p.j == k_steps_ - 1 ? alive_last_.data() : alive_mid_.data();
      const uint8_t* follows = follows_.data();
      for (int i = 0; i < num_requests; ++i) {
        if (!live[i]) continue;
        const Elements size = cur[i].size();
        slices += size;
        if (!was[i] || (follows[i] & moved) != 0) loaded += size;
      }
    } else if (has_prev) {
      const Region* before = prev_regions.data();
      const char* was = prev_alive.data();
      const Region* whole = whole_.data();
      for (int i = 0; i < num_requests; ++i) {
        if (!live[i]) continue;
        const Elements size = cur[i].size();
        slices += size;
        const bool reused = was[i] && (before[i] == cur[i] || before[i] == whole[i]);
        if (!reused) loaded += size;
      }
    } else {
      for (int i = 0; i < num_requests; ++i) {
        if (!live[i]) continue;
        const Elements size = cur[i].size();
        slices += size;
        loaded += size;
      }
    }
  }
  for (int i = 0; i < num_requests && !(plain && !scratch_.multi_request_groups); ++i) {
    if (!alive[i]) continue;
    const Elements size = regions[i].size();
    bool reused = false;
    if (has_prev) {
      for (int x = request_group_begin_[i]; x < request_group_end_[i] && !reused; ++x) {
        reused = prev_alive[x] && (prev_regions[x] == regions[i] || prev_regions[x] == whole_[x]);
      }
    }
    if (weight_[i]) {  // H6: the weight path, outside the fast memory and the roles
      if (!known) weight_slices += size;
      if (!reused) weight_loaded += size;
      continue;
    }
    if (!known) slices += size;
    if (!reused) loaded += size;
    if (rules_on_) {  // H1, H5
      if (!known && (roles[i] & kStagingRole)) use.staging += size;
      if (!known && (roles[i] & kVectorRole)) use.vector += size;
      if (!reused && (roles[i] & double_buffered_) == roles[i]) prefetchable += size;
    }
  }

  // C2-C5: charges; one charge per (op, region), the largest when several coincide.
  double compute = 0;
  const int num_charges = known ? 0 : static_cast<int>(charges_.size());
  const bool plain_charges = shortcuts_ && !rules_on_ && !scratch_.multi_charge_groups;
  if (plain_charges) {
    // One charge template per op and no H1: the loop below, each charge added in the same
    // order by the same expression, the region derived only where the amount reads it.
    const AxisCoords c = CoordsOf(s);
    for (int i = 0; i < num_charges; ++i) {
      const ChargeTemplate& t = charges_[i];
      if (!((t.presence & kEveryStep) || (last && (t.presence & kLastStep)))) continue;
      double amount = 0;
      switch (t.kind) {
        case ChargeKind::kKLoop:
          amount = t.base * static_cast<double>(k_len) / static_cast<double>(reduction_);
          break;
        case ChargeKind::kStripLhs: {
          Elements r0, r1;
          InstantiateFast(t.rows, c, r0, r1);
          amount = t.base *
                   static_cast<double>(CeilDiv(r1 - r0, n) * CeilDiv(reduction_, n)) *
                   static_cast<double>(k_len) / static_cast<double>(reduction_);
          break;
        }
        case ChargeKind::kStripRhs: {
          Elements c0, c1;
          InstantiateFast(t.cols, c, c0, c1);
          amount = t.base *
                   static_cast<double>(CeilDiv(reduction_, n) * CeilDiv(c1 - c0, n)) *
                   static_cast<double>(k_len) / static_cast<double>(reduction_);
          break;
        }
        case ChargeKind::kFull: {
          const Region region = RegionFast(t.rows, t.cols, c);
          amount = t.base * static_cast<double>(CeilDiv(region.rows(), n) * CeilDiv(region.cols(), n));
          break;
        }
        case ChargeKind::kEpilogue:
          amount = t.base;
          break;
      }
      compute += amount;
    }
  }
  for (int b = 0; b < num_charges && !plain_charges;) {
    const int e = charge_group_end_[b];
    int seen = 0;
    for (int i = b; i < e; ++i) {
      const ChargeTemplate& c = charges_[i];
      if (!((c.presence & kEveryStep) || (last && (c.presence & kLastStep)))) continue;
      const Region region = RegionOf(c.rows, c.cols, s);
      double amount = 0;
      switch (c.kind) {
        case ChargeKind::kKLoop:
          amount = c.base * static_cast<double>(k_len) / static_cast<double>(reduction_);
          break;
        case ChargeKind::kStripLhs:
          amount = c.base *
                   static_cast<double>(CeilDiv(region.rows(), n) * CeilDiv(reduction_, n)) *
                   static_cast<double>(k_len) / static_cast<double>(reduction_);
          break;
        case ChargeKind::kStripRhs:
          amount = c.base *
                   static_cast<double>(CeilDiv(reduction_, n) * CeilDiv(region.cols(), n)) *
                   static_cast<double>(k_len) / static_cast<double>(reduction_);
          break;
        case ChargeKind::kFull:
          amount = c.base * static_cast<double>(CeilDiv(region.rows(), n) * CeilDiv(region.cols(), n));
          break;
        case ChargeKind::kEpilogue:
          amount = c.base;
          break;
      }
      if (e - b == 1) {
        compute += amount;
        // H1: a MatMul's output region produced in the step sits in the accumulator.
        if (rules_on_ && problem_.ops[c.op].kind == OpKind::MatMul) use.accumulator += region.size();
        continue;
      }
      int x = 0;
      while (x < seen && seen_regions_[x] != region) ++x;
      if (x == seen) {
        if (seen == static_cast<int>(seen_regions_.size())) {
          seen_regions_.push_back(region);
          seen_amounts_.push_back(amount);
        } else {
          seen_regions_[seen] = region;
          seen_amounts_[seen] = amount;
        }
        ++seen;
      } else {
        seen_amounts_[x] = std::max(seen_amounts_[x], amount);
      }
    }
    for (int y = 0; y < seen; ++y) compute += seen_amounts_[y];
    if (rules_on_ && problem_.ops[charges_[b].op].kind == OpKind::MatMul) {
      for (int y = 0; y < seen; ++y) use.accumulator += seen_regions_[y].size();
    }
    b = e;
  }
  if (known) {
    compute = own->compute;
    slices = own->slices;
    weight_slices = own->weight_slices;
    use = own->use;
  } else if (own != nullptr) {
    *own = {true, compute, slices, weight_slices, use};
  }

  const Elements tile_rows = std::min((s.row + 1) * g_.h, z_height_) - s.row * g_.h;
  const Elements tile_cols = std::min((s.col + 1) * g_.w, z_width_) - s.col * g_.w;
  const Elements tile = tile_rows * tile_cols;
  const Elements sink_tiles = written_sinks_ * tile;
  const Elements written =
      last ? sink_tiles + (rules_on_ ? wide_sinks_ * (problem_.chip.accumulator_factor - 1) * tile : 0) : 0;

  StepPrice price{};
  price.compute = compute;
  price.memory = StepMemory(problem_.chip, problem_.slow_memory_bandwidth, weight_loaded, loaded + written);
  price.working_set = slices + resident_ + sink_tiles + accumulators_ * tile;
  price.weight_slices = weight_slices;
  if (rules_on_) {
    use.vector += vector_sinks_ * tile;
    price.roles = use;
    price.prefetchable = static_cast<double>(prefetchable) / problem_.slow_memory_bandwidth;
  }
  return price;
}

void SubgraphPricer::RequestSizes(const StepCoord& s) const {
  const bool last = s.j == k_steps_ - 1;
  const int num_requests = static_cast<int>(requests_.size());
  const char* on = last ? alive_last_.data() : alive_mid_.data();
  const uint8_t* row_axis = scratch_.row_axis.data();
  const uint8_t* col_axis = scratch_.col_axis.data();
  const Elements* row_bound = scratch_.row_bound.data();
  const Elements* col_bound = scratch_.col_bound.data();
  Elements* sizes = scratch_.sizes.data();
  const AxisCoords c = CoordsOf(s);
  for (int i = 0; i < num_requests; ++i) {
    // InstantiateFast on each side.
    const int ra = row_axis[i], ca = col_axis[i];
    const Elements r0 = c.index[ra] * axis_step_[ra];
    const Elements r1 = std::min(r0 + axis_extent_[ra], row_bound[i]);
    const Elements c0 = c.index[ca] * axis_step_[ca];
    const Elements c1 = std::min(c0 + axis_extent_[ca], col_bound[i]);
    sizes[i] = on[i] ? (r1 - r0) * (c1 - c0) : 0;
  }
}

StepPrice SubgraphPricer::PriceStep(const StepCoord& s, const StepCoord* prev) {
  auto same = [](const std::optional<StepCoord>& a, const StepCoord& b) {
    return a && a->row == b.row && a->col == b.col && a->j == b.j;
  };
  if (reuse_by_indices_) {
    // The step before is read by its indices alone: only the step's own requests are derived.
    if (!same(cur_step_, s)) {
      RequestSizes(s);
      cur_step_ = s;
      cur_own_.known = false;
    }
    return Price(s, cur_regions_, cur_alive_, cur_roles_, prev != nullptr, prev_regions_, prev_alive_, &cur_own_, prev,
                 scratch_.sizes.data());
  }
  if (prev && !same(prev_step_, *prev)) {
    if (same(cur_step_, *prev)) {
      cur_regions_.swap(prev_regions_);
      cur_alive_.swap(prev_alive_);
      cur_roles_.swap(prev_roles_);
      std::swap(cur_step_, prev_step_);
      cur_own_.known = false;
    } else {
      Requests(*prev, prev_regions_, prev_alive_, prev_roles_);
      prev_step_ = *prev;
    }
  }
  if (!same(cur_step_, s)) {
    Requests(s, cur_regions_, cur_alive_, cur_roles_);
    cur_step_ = s;
    cur_own_.known = false;
  }
  return Price(s, cur_regions_, cur_alive_, cur_roles_, prev != nullptr, prev_regions_, prev_alive_, &cur_own_);
}

// A step costs about 0.1 µs in release builds (ten times more under sanitizers): a poll every
// 4096 steps answers a stop within a millisecond and costs nothing measurable.
constexpr int64_t kStepsBetweenStopPolls = 4096;

SubgraphResult SubgraphPricer::PriceStepByStep() {
  const int64_t tiles = rows_ * cols_;
  SubgraphResult result;
  SubgraphReport& report = result.report;
  report.tiles = tiles;
  report.k_steps = k_steps_;
  bool has_prev = false;
  int64_t step = 0;
  double slack = 0;  // H5
  const bool prefetch = rules_on_ && problem_.chip.prefetch;
  for (int64_t position = 0; position < tiles; ++position) {
    const int64_t tile = subgraph_.traversal ? (*subgraph_.traversal)[position] : position;
    for (int64_t j = 0; j < k_steps_; ++j, ++step) {
      if ((step & (kStepsBetweenStopPolls - 1)) == kStepsBetweenStopPolls - 1) PollPricingStop();
      const StepCoord s{tile / cols_, tile % cols_, j};
      Requests(s, cur_regions_, cur_alive_, cur_roles_);
      const StepPrice price =
          Price(s, cur_regions_, cur_alive_, cur_roles_, has_prev, prev_regions_, prev_alive_);
      report.peak_working_set = std::max(report.peak_working_set, price.working_set);
      if (std::optional<SubgraphResult> failure = StepFailure(price, step, tile, j)) return *failure;
      double exposed = price.memory;
      if (prefetch) {
        const PrefetchSplit split = ApplyPrefetch(price.compute, price.memory, price.prefetchable, slack);
        exposed = split.exposed;
        slack = split.slack;
      }
      report.compute_time += price.compute;
      report.memory_time += price.memory;
      report.latency += std::max(price.compute, exposed);
      cur_regions_.swap(prev_regions_);
      cur_alive_.swap(prev_alive_);
      cur_roles_.swap(prev_roles_);
      has_prev = true;
    }
  }
  return result;
}

// Step classes. A tile is (last row?, last column?); its first k-step also depends on how the
// traversal arrived: no previous tile, or which of row and column changed.
enum PrevMove { kNoPrev = 0, kRowChanged = 1, kColChanged = 2, kBothChanged = 3 };

SubgraphResult SubgraphPricer::PriceByClasses() {
  cur_step_.reset();  // the buffers hold nothing PriceStep derived for this granularity
  prev_step_.reset();
  cur_own_.known = false;
  const int64_t tiles = rows_ * cols_;
  // counts[row_edge][col_edge][move]: tiles by class.
  int64_t counts[2][2][4] = {};
  auto edge_r = [&](int64_t r) { return r == rows_ - 1 ? 1 : 0; };
  auto edge_c = [&](int64_t c) { return c == cols_ - 1 ? 1 : 0; };
  if (!subgraph_.traversal) {
    // Raster in closed form.
    counts[edge_r(0)][edge_c(0)][kNoPrev] += 1;
    if (cols_ >= 2) {  // tiles (r, c >= 1), arrived from (r, c - 1)
      for (int re = 0; re < 2; ++re) {
        const int64_t row_count = re ? 1 : rows_ - 1;
        counts[re][1][kColChanged] += row_count;
        counts[re][0][kColChanged] += row_count * (cols_ - 2);
      }
    }
    if (rows_ >= 2) {  // tiles (r >= 1, 0), arrived from (r - 1, cols - 1)
      const int move = cols_ > 1 ? kBothChanged : kRowChanged;
      counts[1][edge_c(0)][move] += 1;
      counts[0][edge_c(0)][move] += rows_ - 2;
    }
  } else {
    const auto& order = *subgraph_.traversal;
    int64_t pr = order[0] / cols_, pc = order[0] % cols_;
    counts[edge_r(pr)][edge_c(pc)][kNoPrev] += 1;
    for (int64_t p = 1; p < tiles; ++p) {
      const int64_t r = order[p] / cols_, c = order[p] % cols_;
      const int move = (r != pr ? kRowChanged : 0) | (c != pc ? kColChanged : 0);
      counts[edge_r(r)][edge_c(c)][move] += 1;
      pr = r;
      pc = c;
    }
  }

  // Representative steps. Row index for an edge class: the last row; otherwise row 0 (which
  // exists as a non-edge row whenever such tiles are counted). A changed index picks any other.
  auto rep_row = [&](int re) -> int64_t { return re ? rows_ - 1 : 0; };
  auto rep_col = [&](int ce) -> int64_t { return ce ? cols_ - 1 : 0; };
  auto other = [](int64_t i) -> int64_t { return i == 0 ? 1 : i - 1; };

  StepPrice first[2][2][4];
  StepPrice middle[2][2];
  StepPrice last[2][2];
  bool have_tile[2][2] = {};
  Elements peak = 0;
  const int64_t last_j = k_steps_ - 1;
  for (int re = 0; re < 2; ++re) {
    for (int ce = 0; ce < 2; ++ce) {
      for (int move = 0; move < 4; ++move) {
        if (counts[re][ce][move] == 0) continue;
        have_tile[re][ce] = true;
        const StepCoord s{rep_row(re), rep_col(ce), 0};
        if (move == kNoPrev) {
          first[re][ce][move] = PriceStep(s, nullptr);
        } else {
          const StepCoord prev{move & kRowChanged ? other(s.row) : s.row,
                               move & kColChanged ? other(s.col) : s.col, last_j};
          first[re][ce][move] = PriceStep(s, &prev);
        }
        peak = std::max(peak, first[re][ce][move].working_set);
      }
      if (!have_tile[re][ce] || k_steps_ < 2) continue;
      if (k_steps_ >= 3) {
        const StepCoord s{rep_row(re), rep_col(ce), 1};
        const StepCoord prev{s.row, s.col, 0};
        middle[re][ce] = PriceStep(s, &prev);
        peak = std::max(peak, middle[re][ce].working_set);
      }
      const StepCoord s{rep_row(re), rep_col(ce), last_j};
      const StepCoord prev{s.row, s.col, last_j - 1};
      last[re][ce] = PriceStep(s, &prev);
      peak = std::max(peak, last[re][ce].working_set);
    }
  }

  const Elements capacity = problem_.fast_memory_capacity;
  bool any_fails = peak > capacity;
  if (rules_on_) {
    for (int re = 0; re < 2; ++re) {
      for (int ce = 0; ce < 2; ++ce) {
        if (!have_tile[re][ce]) continue;
        for (int move = 0; move < 4; ++move) {
          if (counts[re][ce][move] == 0) continue;
          any_fails = any_fails || StepFails(first[re][ce][move]);
        }
        if (k_steps_ >= 3) {
          any_fails = any_fails || StepFails(middle[re][ce]);
        }
        if (k_steps_ >= 2) {
          any_fails = any_fails || StepFails(last[re][ce]);
        }
      }
    }
  }
  if (any_fails) {
    // The first step, in execution order, whose class does not fit.
    int64_t pr = -1, pc = -1;
    for (int64_t p = 0; p < tiles; ++p) {
      const int64_t tile = subgraph_.traversal ? (*subgraph_.traversal)[p] : p;
      const int64_t r = tile / cols_, c = tile % cols_;
      const int move = p == 0 ? kNoPrev : (r != pr ? kRowChanged : 0) | (c != pc ? kColChanged : 0);
      const int re = edge_r(r), ce = edge_c(c);
      const int64_t step0 = p * k_steps_;
      if (auto failure = StepFailure(first[re][ce][move], step0, tile, 0)) return *failure;
      if (k_steps_ >= 3) {
        if (auto failure = StepFailure(middle[re][ce], step0 + 1, tile, 1)) return *failure;
      }
      if (k_steps_ >= 2) {
        if (auto failure = StepFailure(last[re][ce], step0 + last_j, tile, last_j)) return *failure;
      }
      pr = r;
      pc = c;
    }
  }

  SubgraphResult result;
  SubgraphReport& report = result.report;
  report.tiles = tiles;
  report.k_steps = k_steps_;
  report.peak_working_set = peak;
  if (rules_on_ && problem_.chip.prefetch) {
    // H5: a step's exposed loads depend on the slack the steps before it left, which the
    // classes do not carry. Each step's price is its class's, so the steps are replayed in
    // execution order with PriceStepByStep's arithmetic, in its order of additions: the same
    // doubles, at a few operations per step instead of deriving and pricing its requests.
    double slack = 0;
    int64_t step = 0;
    int64_t pr = -1, pc = -1;
    for (int64_t p = 0; p < tiles; ++p) {
      const int64_t tile = subgraph_.traversal ? (*subgraph_.traversal)[p] : p;
      const int64_t r = tile / cols_, c = tile % cols_;
      const int move = p == 0 ? kNoPrev : (r != pr ? kRowChanged : 0) | (c != pc ? kColChanged : 0);
      const int re = edge_r(r), ce = edge_c(c);
      for (int64_t j = 0; j < k_steps_; ++j, ++step) {
        if ((step & (kStepsBetweenStopPolls - 1)) == kStepsBetweenStopPolls - 1) PollPricingStop();
        const StepPrice& price = j == 0 ? first[re][ce][move] : j == last_j ? last[re][ce] : middle[re][ce];
        const PrefetchSplit split = ApplyPrefetch(price.compute, price.memory, price.prefetchable, slack);
        slack = split.slack;
        report.compute_time += price.compute;
        report.memory_time += price.memory;
        report.latency += std::max(price.compute, split.exposed);
      }
      pr = r;
      pc = c;
    }
    return result;
  }
  auto add = [&](const StepPrice& price, int64_t count) {
    const double m = static_cast<double>(count);
    report.compute_time += price.compute * m;
    report.memory_time += price.memory * m;
    report.latency += std::max(price.compute, price.memory) * m;
  };
  for (int re = 0; re < 2; ++re) {
    for (int ce = 0; ce < 2; ++ce) {
      int64_t tile_count = 0;
      for (int move = 0; move < 4; ++move) {
        if (counts[re][ce][move] == 0) continue;
        add(first[re][ce][move], counts[re][ce][move]);
        tile_count += counts[re][ce][move];
      }
      if (tile_count == 0 || k_steps_ < 2) continue;
      if (k_steps_ >= 3) add(middle[re][ce], tile_count * (k_steps_ - 2));
      add(last[re][ce], tile_count);
    }
  }
  return result;
}

}  // namespace

SubgraphResult CostSubgraph(const Problem& problem, const Subgraph& subgraph,
                            const std::vector<TensorId>& retained_in) {
  SubgraphPricer pricer(problem, subgraph, retained_in);
  if (auto failure = pricer.Analyse()) return *failure;
  // Under H5 the classes price the steps and PriceByClasses replays the slack step by step.
  return pricer.step_classes_apply() ? pricer.PriceByClasses() : pricer.PriceStepByStep();
}

std::optional<SubgraphResult> StructuralFailure(const Problem& problem, const Subgraph& subgraph,
                                                const std::vector<TensorId>& retained_in) {
  thread_local SubgraphStructure structure;
  std::optional<Violation> violation = AnalyseSubgraph(problem, subgraph, structure);
  if (!violation) violation = CheckRetainedIn(problem, retained_in);
  if (!violation) return std::nullopt;
  return Fail(Verdict::kInvalid, std::move(violation->rule), std::move(violation->detail));
}

SubgraphResult CostSubgraphStepByStep(const Problem& problem, const Subgraph& subgraph,
                                      const std::vector<TensorId>& retained_in) {
  SubgraphPricer pricer(problem, subgraph, retained_in);
  if (auto failure = pricer.Analyse()) return *failure;
  return pricer.PriceStepByStep();
}

bool CostSubgraphUsesStepClasses(const Problem& problem, const Subgraph& subgraph,
                                 const std::vector<TensorId>& retained_in) {
  SubgraphPricer pricer(problem, subgraph, retained_in);
  if (pricer.Analyse()) return false;
  return pricer.step_classes_apply();
}

}  // namespace annealer
