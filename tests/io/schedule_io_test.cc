// The schedule reader and writer (contest solution format) and WriteFileAtomic.
#include <doctest/doctest.h>

#include "tests/support/test_files.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "src/io/contest/schedule_io.h"

namespace annealer {
namespace {

std::string ErrorOf(std::string_view json) {
  try {
    ParseSchedule(json, "s.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}

size_t EntriesIn(const std::filesystem::path& dir) {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++count;
  return count;
}

Schedule SampleSchedule() {
  Schedule schedule;
  schedule.subgraphs.push_back({{0, 1}, {128, 64, 1}, std::nullopt, {3}});
  schedule.subgraphs.push_back({{2}, {64, 64, 32}, std::vector<int64_t>{0, 1, 3, 2}, {}});
  schedule.subgraphs.push_back({{4, 3}, {128, 128, 128}, std::nullopt, {5, 7}});
  return schedule;
}

TEST_CASE("schedule io: the writer's exact format") {
  const std::string json = ScheduleToJson(SampleSchedule(), {3276.8, 0.1 + 0.2, 6548});
  CHECK(json ==
        "{\n"
        "  \"subgraphs\": [[0, 1], [2], [4, 3]],\n"
        "  \"granularities\": [[128, 64, 1], [64, 64, 32], [128, 128, 128]],\n"
        "  \"tensors_to_retain\": [[3], [], [5, 7]],\n"
        "  \"traversal_orders\": [null, [0, 1, 3, 2], null],\n"
        "  \"subgraph_latencies\": [3276.8, 0.30000000000000004, 6548]\n"
        "}\n");
}

TEST_CASE("schedule io: write then read gives the same schedule, latencies exact") {
  const std::vector<Latency> latencies = {117964.79999999994, 1.0 / 3.0, 4.9e-324};
  Schedule expected = SampleSchedule();
  const Schedule read = ParseSchedule(ScheduleToJson(expected, latencies), "s.json");
  expected.reported_latencies = latencies;
  CHECK(read == expected);
  // And once more: the text is a fixed point.
  CHECK(ScheduleToJson(read, latencies) == ScheduleToJson(expected, latencies));
}

TEST_CASE("schedule io: read then write then read, with and without optional keys") {
  const std::string with_everything = R"({
    "subgraphs": [[0], [1, 2]], "granularities": [[128, 128, 1], [64.0, 64, 32]],
    "tensors_to_retain": [[1], []], "traversal_orders": [[1, 0], null],
    "subgraph_latencies": [1638.4, 3000]})";
  const Schedule first = ParseSchedule(with_everything, "s.json");
  REQUIRE(first.subgraphs.size() == 2);
  CHECK(first.subgraphs[1].ops == std::vector<OpId>{1, 2});
  CHECK(first.subgraphs[1].granularity == Granularity{64, 64, 32});
  CHECK(first.subgraphs[0].retain == std::vector<TensorId>{1});
  CHECK(first.subgraphs[0].traversal == std::vector<int64_t>{1, 0});
  CHECK_FALSE(first.subgraphs[1].traversal.has_value());
  CHECK(first.reported_latencies == std::vector<double>{1638.4, 3000});
  const Schedule second =
      ParseSchedule(ScheduleToJson(first, *first.reported_latencies), "again.json");
  CHECK(second == first);

  const std::string minimal = R"({"subgraphs": [[0], [1]], "granularities": [[128, 128, 1],
    [128, 128, 1]], "tensors_to_retain": [[], []]})";
  const Schedule bare = ParseSchedule(minimal, "s.json");
  CHECK_FALSE(bare.reported_latencies.has_value());
  for (const Subgraph& subgraph : bare.subgraphs) CHECK_FALSE(subgraph.traversal.has_value());
  Schedule round = ParseSchedule(ScheduleToJson(bare, {1, 2}), "s.json");
  CHECK(round.reported_latencies == std::vector<double>{1, 2});
  round.reported_latencies.reset();
  CHECK(round == bare);

  const std::string null_list = R"({"subgraphs": [[0]], "granularities": [[128, 128, 1]],
    "tensors_to_retain": [[]], "traversal_orders": null, "subgraph_latencies": null})";
  const Schedule nulls = ParseSchedule(null_list, "s.json");
  CHECK_FALSE(nulls.subgraphs[0].traversal.has_value());
  CHECK_FALSE(nulls.reported_latencies.has_value());
}

TEST_CASE("schedule io: an empty schedule round-trips") {
  const std::string json = ScheduleToJson(Schedule{}, {});
  CHECK(json ==
        "{\n  \"subgraphs\": [],\n  \"granularities\": [],\n  \"tensors_to_retain\": [],\n"
        "  \"traversal_orders\": [],\n  \"subgraph_latencies\": []\n}\n");
  CHECK(ParseSchedule(json, "s.json").subgraphs.empty());
}

TEST_CASE("schedule io: the writer refuses what JSON cannot carry") {
  CHECK_THROWS_AS(ScheduleToJson(SampleSchedule(), {1, 2}), std::invalid_argument);
  CHECK_THROWS_AS(ScheduleToJson(SampleSchedule(), {1, 2, std::nan("")}), std::invalid_argument);
  CHECK_THROWS_AS(ScheduleToJson(SampleSchedule(), {1, std::numeric_limits<double>::infinity(), 3}),
                  std::invalid_argument);
}

TEST_CASE("schedule io: structural errors name the file, field and index") {
  const std::string ok_rest = R"("granularities": [[128, 128, 1]], "tensors_to_retain": [[]])";
  CHECK(ErrorOf("{" + ok_rest + "}") == "s.json: subgraphs: required field is missing");
  CHECK(ErrorOf(R"({"subgraphs": [[0]], "tensors_to_retain": [[]]})") ==
        "s.json: granularities: required field is missing");
  CHECK(ErrorOf(R"({"subgraphs": [[0]], "granularities": [[128, 128, 1]]})") ==
        "s.json: tensors_to_retain: required field is missing");
  CHECK(ErrorOf(R"({"subgraphs": 0, )" + ok_rest + "}") ==
        "s.json: subgraphs: expected an array, got 0");
  CHECK(ErrorOf(R"({"subgraphs": [[0, "1"]], )" + ok_rest + "}") ==
        "s.json: subgraphs[0][1]: expected an integer, got the string \"1\"");
  CHECK(ErrorOf(R"({"subgraphs": [[0, 2147483648]], )" + ok_rest + "}") ==
        "s.json: subgraphs[0][1]: integer 2147483648 is out of range [-2147483648, 2147483647]");
  CHECK(ErrorOf(R"({"subgraphs": [[0], [1]], )" + ok_rest + "}") ==
        "s.json: granularities: has 1 entries but subgraphs has 2");
  CHECK(ErrorOf(R"({"subgraphs": [[0]], "granularities": [[128, 128, 1]], "tensors_to_retain": [[], []]})") ==
        "s.json: tensors_to_retain: has 2 entries but subgraphs has 1");
  CHECK(ErrorOf(R"({"subgraphs": [[0]], "granularities": [[128, 128]], "tensors_to_retain": [[]]})") ==
        "s.json: granularities[0]: expected 3 entries [w, h, k], got 2");
  CHECK(ErrorOf(R"({"subgraphs": [[0]], "granularities": [[128, 128, 0.5]], "tensors_to_retain": [[]]})") ==
        "s.json: granularities[0][2]: expected an integer, got 0.5");
  CHECK(ErrorOf(R"({"subgraphs": [[0]], "granularities": [[128, 128, 1]], "tensors_to_retain": [3]})") ==
        "s.json: tensors_to_retain[0]: expected an array, got 3");
  CHECK(ErrorOf(R"({"subgraphs": [[0]], )" + ok_rest + R"(, "traversal_orders": [null, null]})") ==
        "s.json: traversal_orders: has 2 entries but subgraphs has 1");
  CHECK(ErrorOf(R"({"subgraphs": [[0]], )" + ok_rest + R"(, "traversal_orders": ["raster"]})") ==
        "s.json: traversal_orders[0]: expected an array, got the string \"raster\"");
  CHECK(ErrorOf(R"({"subgraphs": [[0]], )" + ok_rest + R"(, "traversal_orders": [[0, 1.5]]})") ==
        "s.json: traversal_orders[0][1]: expected an integer, got 1.5");
  CHECK(ErrorOf(R"({"subgraphs": [[0]], )" + ok_rest + R"(, "subgraph_latencies": []})") ==
        "s.json: subgraph_latencies: has 0 entries but subgraphs has 1");
  CHECK(ErrorOf(R"({"subgraphs": [[0]], )" + ok_rest + R"(, "subgraph_latencies": ["13,107.2"]})") ==
        "s.json: subgraph_latencies[0]: expected a number, got the string \"13,107.2\"");
  CHECK(ErrorOf("[]") == "s.json: top level: expected an object, got an array");
  CHECK(ErrorOf("{").rfind("s.json: malformed JSON: ", 0) == 0);
  CHECK(ErrorOf("") == "s.json: the input is empty");
}

TEST_CASE("schedule io: reading files") {
  const std::filesystem::path dir = testing::ScratchDir("schedule-test", "read");
  const std::string missing = (dir / "none.json").string();
  try {
    ReadScheduleFile(missing);
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(std::string(error.what()) == missing + ": cannot open file: No such file or directory");
  }
  const std::filesystem::path path = dir / "s.json";
  WriteFileAtomic(path.string(), ScheduleToJson(SampleSchedule(), {1, 2, 3}));
  Schedule expected = SampleSchedule();
  expected.reported_latencies = std::vector<double>{1, 2, 3};
  CHECK(ReadScheduleFile(path.string()) == expected);
  std::filesystem::remove_all(dir);
}

TEST_CASE("WriteFileAtomic: writes, replaces and leaves no temporary file") {
  const std::filesystem::path dir = testing::ScratchDir("schedule-test", "atomic");
  const std::filesystem::path path = dir / "out.json";
  WriteFileAtomic(path.string(), "first\n");
  CHECK(testing::ReadFile(path) == "first\n");
  WriteFileAtomic(path.string(), "second, longer\n");
  CHECK(testing::ReadFile(path) == "second, longer\n");
  WriteFileAtomic(path.string(), "");
  CHECK(testing::ReadFile(path).empty());
  CHECK(EntriesIn(dir) == 1);
  // The usual permissions, not mkstemp's 0600.
  const auto permissions = std::filesystem::status(path).permissions();
  CHECK((permissions & std::filesystem::perms::owner_read) != std::filesystem::perms::none);
  CHECK((permissions & std::filesystem::perms::owner_write) != std::filesystem::perms::none);
  std::filesystem::remove_all(dir);
}

TEST_CASE("WriteFileAtomic: failures throw, name the path and leave nothing behind") {
  const std::filesystem::path dir = testing::ScratchDir("schedule-test", "atomic-fail");
  const std::string in_missing_dir = (dir / "no-such-dir" / "out.json").string();
  try {
    WriteFileAtomic(in_missing_dir, "x");
    FAIL("no error");
  } catch (const std::runtime_error& error) {
    CHECK(std::string(error.what()).rfind(in_missing_dir + ": ", 0) == 0);
  }
  // Renaming a file over a directory fails after the temporary file was written.
  const std::filesystem::path occupied = dir / "occupied";
  std::filesystem::create_directory(occupied);
  try {
    WriteFileAtomic(occupied.string(), "x");
    FAIL("no error");
  } catch (const std::runtime_error& error) {
    CHECK(std::string(error.what()).rfind(occupied.string() + ": cannot rename", 0) == 0);
  }
  CHECK(EntriesIn(dir) == 1);  // only the directory itself
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace annealer
