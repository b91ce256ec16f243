// Hardware profiles (src/import/hardware_profile): the built-ins of hardware/ against the figures of
// docs/hardware.md, unit parsing, and the one-line error of every kind of bad profile.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "src/import/hardware_profile.h"
#include "tests/support/test_files.h"

namespace annealer {
namespace {

// A profile that parses; each error test breaks one line of it.
const char* const kGood = R"(name: test-chip
description: a test chip
dtype: bf16
fast_memory: 128 MiB
bandwidth: 819 GB/s
clock: 1.5 GHz
matrix_unit: 128
macs_per_cycle: 65536
vector_elements_per_cycle: 2048
sources: ["a paper"]
notes: nothing
)";

// kGood with line `line` (1-based) replaced by `text` ("" drops the line).
std::string WithLine(int line, const std::string& text) {
  std::string out;
  int number = 1;
  std::size_t start = 0;
  const std::string good = kGood;
  while (start < good.size()) {
    const std::size_t end = good.find('\n', start);
    const std::string current = good.substr(start, end - start);
    if (number != line) {
      out += current + "\n";
    } else if (!text.empty()) {
      out += text + "\n";
    }
    start = end + 1;
    ++number;
  }
  return out;
}

std::string ErrorOf(const std::string& text, const std::string& source = "hw/x.yaml") {
  try {
    ParseHardwareProfile(text, source);
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST_CASE("hardware: every built-in profile loads, names itself and cites sources") {
  const std::vector<std::string> names = BuiltinHardwareNames();
  CHECK(names == std::vector<std::string>{"ascend910-core", "gemmini-default", "mlsys-2026", "tpu-v1",
                                          "tpu-v5e", "tpu7x-tc", "xdna-aie-ml-tile"});
  for (const std::string& name : names) {
    CAPTURE(name);
    const HardwareProfile profile = LoadHardwareProfile(name);
    CHECK(profile.name == name);
    CHECK(profile.origin == "built-in");
    CHECK(!profile.description.empty());
    CHECK(!profile.sources.empty());
    CHECK(!profile.notes.empty());
    // The embedded text is the file of hardware/, byte for byte (through a path it parses alike).
    const HardwareProfile from_file =
        LoadHardwareProfile(std::string(ANNEALER_SOURCE_DIR) + "/hardware/" + name + ".yaml");
    CHECK(from_file.fast_memory_bytes == profile.fast_memory_bytes);
    CHECK(from_file.sources == profile.sources);
  }
}

struct Expected {
  const char* name;
  Elements capacity;
  double bandwidth;
  Elements native;
  double matmul_base;
  double pointwise_base;
  double balance;
  double tiles;
};

TEST_CASE("hardware: the built-ins derive the figures of the research table") {
  const Expected table[] = {
      {"tpu-v5e", 67108864, 273, 128, 32, 8, 1.875, 4096},
      {"tpu-v1", 25165824, 21.475, 256, 256, 256, 11.92, 384},  // bandwidth: the activation path (H6)
      {"tpu7x-tc", 33554432, 1677.27, 256, 32, 16, 1.221, 512},
      {"ascend910-core", 524288, 18.75, 128, 512, 128, 1.707, 32},
      {"gemmini-default", 262144, 16, 16, 16, 16, 1.0, 1024},
      {"xdna-aie-ml-tile", 32768, 4, 64, 2048, 256, 0.5, 8},
      {"mlsys-2026", 30000, 15, 128, 1000, 200, 1.092, 1.831},
  };
  for (const Expected& e : table) {
    CAPTURE(e.name);
    const DerivedHardware d = Derive(LoadHardwareProfile(e.name));
    CHECK(d.capacity == e.capacity);
    CHECK(d.bandwidth == doctest::Approx(e.bandwidth).epsilon(1e-4));
    CHECK(d.native == e.native);
    CHECK(d.matmul_base == doctest::Approx(e.matmul_base).epsilon(1e-9));
    CHECK(d.pointwise_base == doctest::Approx(e.pointwise_base).epsilon(1e-9));
    CHECK(d.balance == doctest::Approx(e.balance).epsilon(1e-3));
    CHECK(d.tiles_that_fit == doctest::Approx(e.tiles).epsilon(1e-3));
  }
  const HardwareProfile v5e = LoadHardwareProfile("tpu-v5e");
  CHECK(v5e.element_bytes == 2);
  CHECK(v5e.clock_hz == 1.5e9);
  CHECK(v5e.bandwidth_bytes_per_cycle == doctest::Approx(546));
}

TEST_CASE("hardware: units") {
  const auto memory = [](const std::string& text) {
    return ParseHardwareProfile(WithLine(4, "fast_memory: " + text), "x").fast_memory_bytes;
  };
  CHECK(memory("1000") == 1000);
  CHECK(memory("1000 B") == 1000);
  CHECK(memory("2 KB") == 2000);
  CHECK(memory("2KiB") == 2048);
  CHECK(memory("1.5 MiB") == 1.5 * 1048576);
  CHECK(memory("3 MB") == 3e6);
  CHECK(memory("1 GiB") == 1073741824.0);
  CHECK(memory("1 GB") == 1e9);
  const auto bandwidth = [](const std::string& text) {
    return ParseHardwareProfile(WithLine(5, "bandwidth: " + text), "x").bandwidth_bytes_per_cycle;
  };
  CHECK(bandwidth("16 B/cycle") == 16);
  CHECK(bandwidth("128 bit/cycle") == 16);
  CHECK(bandwidth("1.5 TB/s") == doctest::Approx(1000));
  CHECK(bandwidth("1500 MB/s") == doctest::Approx(1));
  CHECK(bandwidth("1.5e9 B/s") == doctest::Approx(1));
  CHECK(bandwidth("3 GiB/s") == doctest::Approx(3 * 1073741824.0 / 1.5e9));
  const auto clock = [](const std::string& text) {
    return ParseHardwareProfile(WithLine(6, "clock: " + text), "x").clock_hz;
  };
  CHECK(clock("700 MHz") == 7e8);
  CHECK(clock("1 GHz") == 1e9);
  CHECK(clock("500 kHz") == 5e5);
  // Clock optional when the bandwidth is per cycle; element_bytes instead of a dtype.
  std::string text = WithLine(6, "");                           // no clock
  text = text.replace(text.find("819 GB/s"), 8, "8 B/cycle");  // per cycle
  text = text.replace(text.find("dtype: bf16"), 11, "element_bytes: 4");
  const HardwareProfile plain = ParseHardwareProfile(text, "x");
  CHECK(plain.clock_hz == 0);
  CHECK(plain.dtype.empty());
  CHECK(Derive(plain).bandwidth == 2);
  CHECK(Derive(plain).capacity == 128 * 1048576 / 4);
  // A dtype not in the table is a label when element_bytes is given; both must agree otherwise.
  CHECK(ParseHardwareProfile(WithLine(3, "dtype: fp6\nelement_bytes: 1"), "x").element_bytes == 1);
  CHECK(ParseHardwareProfile(WithLine(3, "dtype: int8\nelement_bytes: 1"), "x").dtype == "int8");
  // sources may be one text; notes and sources may be left out.
  CHECK(ParseHardwareProfile(WithLine(10, "sources: one paper"), "x").sources ==
        std::vector<std::string>{"one paper"});
  const HardwareProfile bare = ParseHardwareProfile(WithLine(11, ""), "x");
  CHECK(bare.notes.empty());
}

TEST_CASE("hardware: every bad profile is one line naming the file and the line") {
  // {line of kGood replaced, its new text, the message}
  struct BadLine {
    int line;
    const char* text;
    const char* message;
  };
  const BadLine cases[] = {
      {5, "bandwidth: 819 GBps",
       "hw/x.yaml:5: bandwidth: unknown unit \"GBps\" (expected B/cycle, bit/cycle, B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s)"},
      {4, "fast_memory: 128 MBytes",
       "hw/x.yaml:4: fast_memory: unknown unit \"MBytes\" (expected B, KB, MB, GB, KiB, MiB, GiB)"},
      {6, "clock: 1.5 GHZ",
       "hw/x.yaml:6: clock: unknown unit \"GHZ\" (expected Hz, kHz, MHz, GHz)"},
      {5, "bandwidth: 819",
       "hw/x.yaml:5: bandwidth: 819 has no unit (expected B/cycle, bit/cycle, B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s)"},
      {8, "macs_per_cycle: 65536 MACs",
       "hw/x.yaml:8: macs_per_cycle: expected a positive number, got \"65536 MACs\""},
      {8, "macs_per_cycle: lots",
       "hw/x.yaml:8: macs_per_cycle: expected a positive number, got \"lots\""},
      {4, "fast_memory: big",
       "hw/x.yaml:4: fast_memory: expected a positive number and a unit, e.g. \"128 MiB\", got \"big\""},
      {9, "vector_elements_per_cycle: -4",
       "hw/x.yaml:9: vector_elements_per_cycle: must be positive, got -4"},
      {4, "fast_memory: 0 KiB",
       "hw/x.yaml:4: fast_memory: must be positive, got 0 KiB"},
      {7, "matrix_unit: 12.5",
       "hw/x.yaml:7: matrix_unit: expected a positive integer, got 12.5"},
      {7, "matrix_unit: 2000000",
       "hw/x.yaml:7: matrix_unit: 2000000 is too large (at most 1048576)"},
      {7, "matrix_unit: [128, 128]",
       "hw/x.yaml:7: matrix_unit: expected a number, not a list"},
      {6, "",
       "hw/x.yaml:5: bandwidth: 819 GB/s needs a clock to become bytes per cycle (add e.g. \"clock: 1.5 GHz\", or give B/cycle)"},
      {11, "note: typo",
       "hw/x.yaml:11: unknown key \"note\" (known keys: name, description, fast_memory, bandwidth, matrix_unit, macs_per_cycle, vector_elements_per_cycle, dtype, element_bytes, clock, sources, notes, staging_buffer, accumulator_buffer, vector_buffer, double_buffer, tile_base, row_alignment, accumulator_dtype, wide_writeback, prefetch, weight_bandwidth, weight_fifo)"},
      {7, "",
       "hw/x.yaml:1: missing key \"matrix_unit\" (required: name, description, fast_memory, bandwidth, matrix_unit, macs_per_cycle, vector_elements_per_cycle, and dtype or element_bytes)"},
  };
  for (const BadLine& bad : cases) {
    CAPTURE(bad.text);
    CHECK(ErrorOf(WithLine(bad.line, bad.text)) == bad.message);
  }
  CHECK(ErrorOf(WithLine(3, "")).rfind("hw/x.yaml:1: missing key \"dtype\" (or element_bytes;", 0) == 0);
  CHECK(ErrorOf(WithLine(3, "dtype: fp6")).rfind("hw/x.yaml:3: dtype: unknown dtype \"fp6\" (known: int8,", 0) == 0);
  CHECK(ErrorOf(WithLine(3, "dtype: bf16\nelement_bytes: 4")) ==
        "hw/x.yaml:4: element_bytes: 4 disagrees with dtype bf16 (2 bytes)");
  CHECK(ErrorOf(WithLine(2, "description: a\nname: twice")) == "hw/x.yaml:3: duplicate key \"name\"");
  CHECK(ErrorOf(WithLine(2, "description:")) == "hw/x.yaml:2: description has no value");
  CHECK(ErrorOf(WithLine(10, "sources: {a: b}")) == "hw/x.yaml:10: sources: expected a list of texts, not a map");
  CHECK(ErrorOf(WithLine(5, "bandwidth: [819 GB/s")).rfind("hw/x.yaml:", 0) == 0);
  CHECK(ErrorOf(WithLine(5, "bandwidth: [819 GB/s")).find("YAML syntax error") != std::string::npos);
  CHECK(ErrorOf("- a list\n") ==
        "hw/x.yaml:1: expected a map of keys at the top level (known keys: name, description, fast_memory, "
        "bandwidth, matrix_unit, macs_per_cycle, vector_elements_per_cycle, dtype, element_bytes, clock, "
        "sources, notes, staging_buffer, accumulator_buffer, vector_buffer, double_buffer, tile_base, row_alignment, "
        "accumulator_dtype, wide_writeback, prefetch, weight_bandwidth, weight_fifo)");
  CHECK(ErrorOf(WithLine(4, "fast_memory: 1 B")) == "hw/x.yaml:4: fast_memory: holds no element of 2 bytes");
  for (const std::string& message : {ErrorOf(WithLine(5, "bandwidth: 819 GBps")), ErrorOf("name: [")}) {
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("hardware: loading by name or path, unknown names and missing files") {
  const std::filesystem::path dir = testing::ScratchDir("hardware", "load");
  const std::filesystem::path file = dir / "mine.yaml";
  std::ofstream(file) << WithLine(1, "name: mine");
  const HardwareProfile mine = LoadHardwareProfile(file.string());
  CHECK(mine.name == "mine");
  CHECK(mine.origin == file.string());
  std::ofstream(dir / "bad.yml") << WithLine(5, "bandwidth: 819 GBps");
  try {
    LoadHardwareProfile((dir / "bad.yml").string());
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(std::string(error.what()).rfind((dir / "bad.yml").string() + ":5: bandwidth: unknown unit", 0) == 0);
  }
  try {
    LoadHardwareProfile("tpu-v9");
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(std::string(error.what()) ==
          "--hardware tpu-v9: unknown hardware profile \"tpu-v9\" (built-in: ascend910-core, gemmini-default, mlsys-2026, "
          "tpu-v1, tpu-v5e, tpu7x-tc, xdna-aie-ml-tile; or give the path of a .yaml file)");
  }
  try {
    LoadHardwareProfile((dir / "absent.yaml").string());
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(std::string(error.what()) == (dir / "absent.yaml").string() + ": cannot open file: No such file or directory");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("hardware: overrides replace a key's value, in the file's units, before the checks") {
  const HardwareProfile base = LoadHardwareProfile("tpu-v5e");
  const HardwareProfile small = LoadHardwareProfile("tpu-v5e", {{"fast_memory", "4 MiB"}, {"bandwidth", "400 GB/s"}});
  CHECK(small.name == "tpu-v5e");
  CHECK(small.fast_memory_bytes == 4 * 1048576.0);
  CHECK(small.bandwidth_bytes_per_cycle == doctest::Approx(400e9 / base.clock_hz));
  CHECK(small.macs_per_cycle == base.macs_per_cycle);
  CHECK(Derive(small).capacity == 2 * 1048576);
  // A key the file lacks is added: a per-cycle bandwidth needs no clock, a dtype changes the size.
  const std::string no_clock = WithLine(6, "");
  CHECK(ParseHardwareProfile(no_clock, "x", {{"bandwidth", "32 B/cycle"}}).bandwidth_bytes_per_cycle == 32);
  CHECK(ParseHardwareProfile(no_clock, "x", {{"clock", "1 GHz"}}).bandwidth_bytes_per_cycle == doctest::Approx(819));
  CHECK(Derive(ParseHardwareProfile(kGood, "x", {{"dtype", "fp32"}})).capacity == 32 * 1048576);
  // Errors name the override instead of a line; the file's own errors keep their line.
  const auto error_of = [](const std::string& text, const HardwareOverrides& overrides) -> std::string {
    try {
      ParseHardwareProfile(text, "hw/x.yaml", overrides);
    } catch (const InputError& error) {
      return error.what();
    }
    return "(no error)";
  };
  CHECK(error_of(kGood, {{"fast_memory", "4 Mib"}}) ==
        "hw/x.yaml with fast_memory=4 Mib: fast_memory: unknown unit \"Mib\" (expected B, KB, MB, GB, KiB, MiB, GiB)");
  CHECK(error_of(kGood, {{"matrix_unit", "12.5"}}) == "hw/x.yaml with matrix_unit=12.5: matrix_unit: expected a positive integer, got 12.5");
  CHECK(error_of(kGood, {{"fast_memory", "1 B"}}) == "hw/x.yaml with fast_memory=1 B: fast_memory: holds no element of 2 bytes");
  CHECK(error_of(kGood, {{"capacity", "1"}}).rfind("hw/x.yaml with capacity=1: unknown key \"capacity\" (known keys: name,", 0) == 0);
  CHECK(error_of(no_clock, {{"fast_memory", "4 MiB"}}) ==
        "hw/x.yaml:5: bandwidth: 819 GB/s needs a clock to become bytes per cycle (add e.g. \"clock: 1.5 GHz\", or give B/cycle)");
  CHECK(error_of(WithLine(5, "bandwidth: 819 GBps"), {{"bandwidth", "819 GB/s"}}) == "(no error)");
}

TEST_CASE("hardware: applying a profile to a problem sets capacity, bandwidth, native and base costs") {
  Problem problem = testing::ReadBundledProblem("mlsys-2026-17.json");
  const DerivedHardware v5e = Derive(LoadHardwareProfile("tpu-v5e"));
  ApplyHardware(v5e, problem);
  CHECK(problem.fast_memory_capacity == 67108864);
  CHECK(problem.slow_memory_bandwidth == doctest::Approx(273));
  CHECK(problem.native == 128);
  for (OpId op = 0; op < static_cast<OpId>(problem.ops.size()); ++op) {
    const Op& o = problem.ops[op];
    CHECK(o.base_cost == (o.kind == OpKind::MatMul ? 32.0 * ((problem.ReductionLength(op) + 127) / 128) : 8.0));
  }
  CHECK(MatMulBaseCost(v5e, 1) == 32);
  CHECK(MatMulBaseCost(v5e, 129) == 64);
  CHECK(MatMulBaseCost(v5e, 4096) == 1024);
}

}  // namespace
}  // namespace annealer
