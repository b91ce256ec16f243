#include "search/elite_pool.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace annealer {

namespace {

// FNV-1a over 64-bit words: stable across runs and platforms (std::hash is not).
struct Hasher {
  uint64_t h = 1469598103934665603ull;
  void Add(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
};

}  // namespace

uint64_t HashPartition(const Schedule& schedule) {
  Hasher hasher;
  for (const Subgraph& sg : schedule.subgraphs) {
    hasher.Add(0xabcdef);
    for (OpId op : sg.ops) hasher.Add(static_cast<uint64_t>(op));
  }
  return hasher.h;
}

uint64_t HashSchedule(const Schedule& schedule) {
  Hasher hasher;
  for (const Subgraph& sg : schedule.subgraphs) {
    hasher.Add(0xabcdef);
    for (OpId op : sg.ops) hasher.Add(static_cast<uint64_t>(op));
    hasher.Add(static_cast<uint64_t>(sg.granularity.w));
    hasher.Add(static_cast<uint64_t>(sg.granularity.h));
    hasher.Add(static_cast<uint64_t>(sg.granularity.k));
    hasher.Add(sg.traversal ? sg.traversal->size() + 1 : 0);
    if (sg.traversal) {
      for (int64_t t : *sg.traversal) hasher.Add(static_cast<uint64_t>(t));
    }
    hasher.Add(0x1234);
    for (TensorId t : sg.retain) hasher.Add(static_cast<uint64_t>(t));
  }
  return hasher.h;
}

void ElitePool::Offer(const Schedule& schedule, Latency total, const std::string& found_by) {
  EliteEntry entry{schedule, total, found_by, 0, false, HashPartition(schedule)};
  std::lock_guard<std::mutex> lock(mutex_);
  buffer_.push_back(std::move(entry));
}

void ElitePool::Synchronize() {
  std::vector<EliteEntry> incoming;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming.swap(buffer_);
  }
  if (incoming.empty()) return;
  std::vector<EliteEntry> all = std::move(entries_);
  for (EliteEntry& e : incoming) all.push_back(std::move(e));
  // A total order that depends only on content: total, hash, then the kind name (a duplicate
  // offered by two kinds keeps the alphabetically first, whatever the arrival order). The hash
  // decides only between equal totals, so only those entries need it.
  std::sort(all.begin(), all.end(), [](const EliteEntry& a, const EliteEntry& b) { return a.total < b.total; });
  for (size_t i = 0; i < all.size();) {
    size_t end = i + 1;
    while (end < all.size() && all[end].total == all[i].total) ++end;
    for (size_t j = i; end - i > 1 && j < end; ++j) {
      if (!all[j].hash_known) {
        all[j].hash = HashSchedule(all[j].schedule);
        all[j].hash_known = true;
      }
    }
    i = end;
  }
  std::sort(all.begin(), all.end(), [](const EliteEntry& a, const EliteEntry& b) {
    if (a.total != b.total) return a.total < b.total;
    if (a.hash != b.hash) return a.hash < b.hash;
    return a.found_by < b.found_by;
  });
  std::vector<EliteEntry> kept;
  for (EliteEntry& candidate : all) {
    bool duplicate = false;
    for (const EliteEntry& k : kept) {
      // (Equal schedules have equal partitions: the partition hash filters as the hash did.)
      if (k.partition_hash == candidate.partition_hash && k.schedule == candidate.schedule) {
        duplicate = true;
        break;
      }
      // Near duplicate: same partition and almost the same total; the better one (already
      // kept, sorted first) stays, so the pool spends its slots on different partitions.
      if (k.partition_hash == candidate.partition_hash &&
          candidate.total - k.total <= params_.diversity * std::abs(k.total)) {
        duplicate = true;
        break;
      }
    }
    if (duplicate) continue;
    kept.push_back(std::move(candidate));
    if (static_cast<int64_t>(kept.size()) >= params_.size) break;
  }
  entries_ = std::move(kept);
}

void ElitePool::Restart(std::vector<EliteEntry> entries) {
  entries_.clear();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (EliteEntry& e : entries) buffer_.push_back(std::move(e));
  }
  Synchronize();
}

const EliteEntry& ElitePool::Sample(std::mt19937_64& rng) const {
  // Geometric rank bias: rank r drawn with weight 0.7^r.
  std::vector<double> weights(entries_.size());
  double w = 1;
  for (double& x : weights) {
    x = w;
    w *= 0.7;
  }
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  return entries_[pick(rng)];
}

}  // namespace annealer
