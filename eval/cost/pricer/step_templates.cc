// How a context becomes the templates of its steps; see step_pricer.h.
#include "eval/cost/pricer/step_pricer.h"

#include "eval/cost/context_reuse.h"

namespace annealer::pricing {

std::optional<SubgraphResult> StepPricer::Analyse() {
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

// The oracle's Feed (spec D3, D4, C3) on symbolic intervals.
void StepPricer::Feed(TensorId t, IntervalTemplate rows, IntervalTemplate cols,
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

void StepPricer::BuildTemplates() {
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

bool StepPricer::Meets(const IntervalTemplate& a, const IntervalTemplate& b) const {
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

void StepPricer::BuildContextTemplates() {
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


}  // namespace annealer::pricing
