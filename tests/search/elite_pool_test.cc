// The elite pool (search/elite_pool.h): the buffered, stable merge of offers and the restart.
#include <doctest/doctest.h>

#include <vector>

#include "eval/model/schedule.h"
#include "search/elite_pool.h"

namespace annealer {
namespace {

Schedule OneOpSchedule(OpId op) {
  Schedule s;
  Subgraph sg;
  sg.ops = {op};
  s.subgraphs.push_back(sg);
  return s;
}

TEST_CASE("elite pool: offers are invisible until Synchronize, duplicates merge, order is stable") {
  PoolParams params;
  params.size = 3;
  params.diversity = 0;
  ElitePool pool(params);
  const Schedule a = OneOpSchedule(0), b = OneOpSchedule(1), c = OneOpSchedule(2), d = OneOpSchedule(3);
  pool.Offer(b, 20, "sa");
  pool.Offer(a, 10, "ga");
  CHECK(pool.empty());
  pool.Synchronize();
  REQUIRE(pool.size() == 2);
  CHECK(pool.entries()[0].total == 10);
  CHECK(pool.entries()[1].total == 20);
  // The same schedule offered twice by two kinds is kept once, under the first kind by name.
  pool.Offer(c, 15, "sa");
  pool.Offer(c, 15, "ga");
  pool.Offer(d, 30, "sa");  // beyond the size limit once c is in
  pool.Synchronize();
  REQUIRE(pool.size() == 3);
  CHECK(pool.entries()[0].total == 10);
  CHECK(pool.entries()[1].total == 15);
  CHECK(pool.entries()[1].found_by == "ga");
  CHECK(pool.entries()[2].total == 20);

  // Arrival order does not matter.
  ElitePool forward(params), backward(params);
  forward.Offer(a, 5, "x");
  forward.Offer(b, 5, "y");
  backward.Offer(b, 5, "y");
  backward.Offer(a, 5, "x");
  forward.Synchronize();
  backward.Synchronize();
  REQUIRE(forward.size() == backward.size());
  for (int i = 0; i < forward.size(); ++i) {
    CHECK(forward.entries()[i].schedule == backward.entries()[i].schedule);
  }
  // Equal totals in the order of the schedules' hashes (derived at the merge, for ties only).
  REQUIRE(forward.size() == 2);
  CHECK(HashSchedule(forward.entries()[0].schedule) < HashSchedule(forward.entries()[1].schedule));
}

TEST_CASE("elite pool: Restart drops every entry and merges the given ones with the buffer") {
  PoolParams params;
  params.size = 3;
  params.diversity = 0;
  ElitePool pool(params);
  const Schedule a = OneOpSchedule(0), b = OneOpSchedule(1), c = OneOpSchedule(2), d = OneOpSchedule(3);
  pool.Offer(a, 10, "sa");
  pool.Offer(b, 20, "sa");
  pool.Synchronize();
  REQUIRE(pool.size() == 2);
  const std::vector<EliteEntry> kept = {pool.entries()[1]};  // b at 20
  pool.Offer(d, 40, "ga");  // buffered: merged by the restart
  ElitePool other(params);
  other.Offer(c, 30, "repeat");
  other.Synchronize();
  std::vector<EliteEntry> entries = kept;
  entries.push_back(other.entries()[0]);
  pool.Restart(entries);
  REQUIRE(pool.size() == 3);
  CHECK(pool.entries()[0].schedule == b);  // a (10) is gone
  CHECK(pool.entries()[0].total == 20);
  CHECK(pool.entries()[1].schedule == c);
  CHECK(pool.entries()[1].found_by == "repeat");
  CHECK(pool.entries()[2].schedule == d);
}

}  // namespace
}  // namespace annealer
