// One step priced from the templates; see step_pricer.h.
#include "eval/cost/pricer/step_pricer.h"

#include "eval/cost/context_reuse.h"

namespace annealer::pricing {

void StepPricer::Requests(const StepCoord& s, std::vector<Region>& regions,
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

StepPrice StepPricer::Price(const StepCoord& s, const std::vector<Region>& regions,
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

void StepPricer::RequestSizes(const StepCoord& s) const {
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

StepPrice StepPricer::PriceStep(const StepCoord& s, const StepCoord* prev) {
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
}  // namespace annealer::pricing
