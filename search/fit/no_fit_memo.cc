#include "search/fit/no_fit_memo.h"

#include <cstdint>

#include "eval/cost/hash_mix.h"

namespace annealer {

namespace {

// Direct-mapped: a slot holds the last list that hashed to it, compared in full on a hit.
class NoFitMemo {
 public:
  // The slot of (serial, problem, ops); `fresh` tells whether it holds that key's answer.
  struct Slot {
    uint64_t serial = 0;
    const Problem* problem = nullptr;
    uint64_t hash = 0;
    std::vector<OpId> ops;
    bool filled = false;
    bool answer = false;
  };
  Slot& Find(uint64_t serial, const Problem& problem, const std::vector<OpId>& ops, uint64_t hash, bool& fresh) {
    Slot& slot = slots_[hash & (kSlots - 1)];
    fresh = slot.filled && slot.hash == hash && slot.serial == serial && slot.problem == &problem && slot.ops == ops;
    return slot;
  }

 private:
  static constexpr size_t kSlots = size_t{1} << 15;
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);  // on the heap: not in each thread's static TLS
};

}  // namespace

bool NoGranularityFitsAlone(const SubgraphPricer& pricer, const Problem& problem, const std::vector<OpId>& ops) {
  static const std::vector<TensorId> kNone;
  thread_local NoFitMemo memo;
  uint64_t hash = HashCombine(pricer.serial(), ops.size());
  for (OpId op : ops) hash = HashCombine(hash, static_cast<uint64_t>(static_cast<uint32_t>(op)));
  bool fresh = false;
  NoFitMemo::Slot& slot = memo.Find(pricer.serial(), problem, ops, hash, fresh);
  if (fresh) return slot.answer;
  const bool answer = NoGranularityFits(problem, ops, kNone, kNone);
  slot.serial = pricer.serial();
  slot.problem = &problem;
  slot.hash = hash;
  slot.ops.assign(ops.begin(), ops.end());
  slot.filled = true;
  slot.answer = answer;
  return answer;
}

}  // namespace annealer
