#include "src/io/contest/schedule_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace annealer {

namespace {

constexpr int64_t kMaxId = std::numeric_limits<int32_t>::max();

void RequireLength(const JsonField& list, size_t actual, size_t expected) {
  if (actual != expected) {
    list.Fail("has " + std::to_string(actual) + " entries but subgraphs has " +
              std::to_string(expected));
  }
}

// Ids are range-checked against the problem by the oracle (V1, V8); here they only need to fit
// the id type, so that nothing is silently truncated.
template <typename Id>
std::vector<Id> ReadIds(const JsonField& list) {
  std::vector<Id> ids;
  for (const JsonField& item : list.Items()) {
    ids.push_back(static_cast<Id>(item.Integer(std::numeric_limits<int32_t>::min(), kMaxId)));
  }
  return ids;
}

template <typename Id>
std::vector<int64_t> Widen(const std::vector<Id>& ids) {
  return std::vector<int64_t>(ids.begin(), ids.end());
}

// The process umask, read without changing it where Linux allows (umask() itself can only be
// read by setting it, which races with threads creating files meanwhile).
mode_t CurrentUmask() {
  if (FILE* status = std::fopen("/proc/self/status", "r")) {
    char line[256];
    unsigned value = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, status)) {
      found = std::sscanf(line, "Umask: %o", &value) == 1;
    }
    std::fclose(status);
    if (found) return static_cast<mode_t>(value);
  }
  const mode_t value = ::umask(022);
  ::umask(value);
  return value;
}

}  // namespace

Schedule ParseSchedule(std::string_view json, const std::string& origin) {
  simdjson::dom::parser parser;
  const JsonField root(ParseJsonDocument(parser, json, origin), origin, "");
  root.RequireObject();
  Schedule schedule;

  const std::vector<JsonField> subgraphs = root.Member("subgraphs").Items();
  const JsonField granularities_field = root.Member("granularities");
  const JsonField retain_field = root.Member("tensors_to_retain");
  const std::vector<JsonField> granularities = granularities_field.Items();
  const std::vector<JsonField> retains = retain_field.Items();
  RequireLength(granularities_field, granularities.size(), subgraphs.size());
  RequireLength(retain_field, retains.size(), subgraphs.size());

  std::optional<std::vector<JsonField>> traversals;
  if (std::optional<JsonField> field = root.OptionalMember("traversal_orders")) {
    traversals = field->Items();
    RequireLength(*field, traversals->size(), subgraphs.size());
  }
  if (std::optional<JsonField> field = root.OptionalMember("subgraph_latencies")) {
    const std::vector<JsonField> latencies = field->Items();
    RequireLength(*field, latencies.size(), subgraphs.size());
    schedule.reported_latencies.emplace();
    for (const JsonField& latency : latencies) {
      schedule.reported_latencies->push_back(latency.FiniteNumber());
    }
  }

  schedule.subgraphs.resize(subgraphs.size());
  for (size_t i = 0; i < subgraphs.size(); ++i) {
    Subgraph& subgraph = schedule.subgraphs[i];
    subgraph.ops = ReadIds<OpId>(subgraphs[i]);
    const std::vector<JsonField> sides = granularities[i].Items();
    if (sides.size() != 3) {
      granularities[i].Fail("expected 3 entries [w, h, k], got " + std::to_string(sides.size()));
    }
    subgraph.granularity = {sides[0].Integer(), sides[1].Integer(), sides[2].Integer()};
    subgraph.retain = ReadIds<TensorId>(retains[i]);
    if (traversals && !(*traversals)[i].IsNull()) {
      std::vector<int64_t> order;
      for (const JsonField& tile : (*traversals)[i].Items()) order.push_back(tile.Integer());
      subgraph.traversal = std::move(order);
    }
  }
  return schedule;
}

Schedule ReadScheduleFile(const std::string& path) {
  return ParseSchedule(ReadTextFile(path), path);
}

std::string ScheduleToJson(const Schedule& schedule, const std::vector<Latency>& latencies) {
  if (latencies.size() != schedule.subgraphs.size()) {
    throw std::invalid_argument("ScheduleToJson: " + std::to_string(latencies.size()) +
                                " latencies for " + std::to_string(schedule.subgraphs.size()) +
                                " subgraphs");
  }
  const std::vector<Subgraph>& subgraphs = schedule.subgraphs;
  std::string out = "{\n  \"subgraphs\": [";
  for (size_t i = 0; i < subgraphs.size(); ++i) {
    if (i > 0) out += ", ";
    AppendIntegers(out, Widen(subgraphs[i].ops));
  }
  out += "],\n  \"granularities\": [";
  for (size_t i = 0; i < subgraphs.size(); ++i) {
    if (i > 0) out += ", ";
    const Granularity& g = subgraphs[i].granularity;
    AppendIntegers(out, {g.w, g.h, g.k});
  }
  out += "],\n  \"tensors_to_retain\": [";
  for (size_t i = 0; i < subgraphs.size(); ++i) {
    if (i > 0) out += ", ";
    AppendIntegers(out, Widen(subgraphs[i].retain));
  }
  out += "],\n  \"traversal_orders\": [";
  for (size_t i = 0; i < subgraphs.size(); ++i) {
    if (i > 0) out += ", ";
    if (subgraphs[i].traversal) {
      AppendIntegers(out, *subgraphs[i].traversal);
    } else {
      out += "null";
    }
  }
  out += "],\n  \"subgraph_latencies\": [";
  for (size_t i = 0; i < latencies.size(); ++i) {
    if (i > 0) out += ", ";
    out += FormatNumber(latencies[i]);
  }
  out += "]\n}\n";
  return out;
}

void WriteFileAtomic(const std::string& path, std::string_view content) {
  const size_t slash = path.rfind('/');
  const std::string directory = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string temp = path + ".tmp.XXXXXX";
  const int fd = mkstemp(temp.data());
  if (fd < 0) {
    throw std::runtime_error(path + ": cannot create a temporary file next to it: " +
                             std::strerror(errno));
  }
  auto fail = [&](const char* what) {
    const int error = errno;
    ::close(fd);  // harmless if already closed: the error path never reuses the descriptor
    ::unlink(temp.c_str());
    throw std::runtime_error(path + ": " + what + ": " + std::strerror(error));
  };
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write");
    }
    written += static_cast<size_t>(n);
  }
  // mkstemp creates the file 0600; an output file should get the usual permissions.
  if (::fchmod(fd, 0666 & ~CurrentUmask()) != 0) fail("cannot set permissions");
  if (::fsync(fd) != 0) fail("cannot sync");
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    throw std::runtime_error(path + ": cannot close: " + std::strerror(error));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    throw std::runtime_error(path + ": cannot rename the temporary file into place: " +
                             std::strerror(error));
  }
  // Persist the rename itself; a failure here does not undo a complete, visible file.
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace annealer
