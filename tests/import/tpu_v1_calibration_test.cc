// tpu-v1 against the TPU v1's measured throughput (Jouppi et al., ISCA 2017, Table 3's TeraOps/s
// of six production applications; Table 1's weights, layers and ops per weight byte). Each
// application is stood in for by a chain of equal FC MatMuls with its weights and its ops per
// weight byte as the activation's rows (bench/calibration/tpu_v1_calibration.py builds the same problems),
// priced under tpu-v1 (its weight path, H6) by the resident and the layer-by-layer baselines
// (deterministic, no timing). The bands asserted are the ones docs/hardware.md states
// ("Calibration"); the script prints the whole table, searches and the one-path profile included.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "eval/bound/bounds.h"
#include "eval/oracle.h"
#include "search/starts/baseline.h"
#include "src/import/hardware_profile.h"

namespace annealer {
namespace {

struct App {
  const char* name;
  int layers;
  double weights;
  Elements rows;       // ops per weight byte (Table 1): MACs per weight = rows of the activation
  double measured;     // TeraOps/s (Table 3)
  double resident;     // predicted TOPS, resident baseline (docs/hardware.md)
  double layer_by_layer;  // predicted TOPS, layer-by-layer baseline
};

constexpr App kApps[] = {
    {"MLP0", 5, 20e6, 200, 12.3, 11.5, 6.7},  {"MLP1", 4, 5e6, 168, 9.7, 9.2, 5.6},
    {"LSTM0", 58, 52e6, 64, 3.7, 4.4, 4.0},   {"LSTM1", 56, 34e6, 96, 2.8, 6.1, 4.2},
    {"CNN0", 16, 8e6, 2888, 86.0, 14.7, 5.3}, {"CNN1", 89, 100e6, 1750, 14.1, 16.3, 5.3},
};

// X0 @ W1 -> X1, X1 @ W2 -> X2, ...: every W a graph input read as an RHS only (a weight).
Problem Chain(const App& app, const DerivedHardware& hardware, double& macs) {
  const auto side = static_cast<Elements>(std::llround(std::sqrt(app.weights / app.layers)));
  Problem p;
  p.tensors.push_back({side, app.rows});  // width, height
  for (int i = 0; i < app.layers; ++i) {
    const auto w = static_cast<TensorId>(p.tensors.size());
    p.tensors.push_back({side, side});
    p.tensors.push_back({side, app.rows});
    p.ops.push_back({OpKind::MatMul, {w - 1, w}, w + 1, 0});
  }
  REQUIRE(p.Finalize().empty());
  ApplyHardware(hardware, p);
  macs = static_cast<double>(app.rows) * static_cast<double>(side * side) * app.layers;
  return p;
}

double Tops(double macs, double cycles) { return 2 * macs / (cycles / 700e6) / 1e12; }

TEST_CASE("tpu-v1 calibration: the baselines' throughput against ISCA 2017's measured TOPS") {
  const DerivedHardware hardware = Derive(LoadHardwareProfile("tpu-v1"));
  REQUIRE(hardware.chip.two_paths());
  for (const App& app : kApps) {
    const std::string name = app.name;
    CAPTURE(name);
    double macs = 0;
    const Problem problem = Chain(app, hardware, macs);
    const Evaluation resident = EvaluateOracle(problem, BuildResidentBaseline(problem));
    const Evaluation layer_by_layer = EvaluateOracle(problem, BuildBaseline(problem));
    REQUIRE(resident.ok());
    REQUIRE(layer_by_layer.ok());
    const double tops = Tops(macs, resident.total);
    MESSAGE(name << ": resident " << tops << " TOPS, layer-by-layer " << Tops(macs, layer_by_layer.total)
                     << ", measured " << app.measured);
    // The figures of the table, to its rounding.
    CHECK(std::abs(tops - app.resident) <= 0.05 + 1e-9);
    CHECK(std::abs(Tops(macs, layer_by_layer.total) - app.layer_by_layer) <= 0.05 + 1e-9);
    CHECK(ComputeLowerBound(problem).total() <= resident.total * (1 + 1e-9));
    // The bands docs/hardware.md states: the weight-bound applications the model expresses
    // (rows <= 256) within 20 % of the measurement; LSTM1 about 2.2x over it (the paper's own
    // roofline puts it at 6.5 TOPS); CNN0 capped at 256 MACs per weight byte (a weight slice is
    // fetched again for every 256 rows), far below; CNN1 within 20 %, for the same cap.
    const double error = tops / app.measured - 1;
    if (name == "LSTM1") {
      CHECK(error > 1.0);
      CHECK(error < 1.4);
    } else if (name == "CNN0") {
      CHECK(error < -0.8);
    } else {
      CHECK(std::abs(error) <= 0.20);
    }
    // A weight-bound chain can never beat the weight path: 2 x rows x 48.57 weight bytes a cycle.
    CHECK(tops <= 2 * std::min<double>(static_cast<double>(app.rows), 256) * 34e9 / 1e12 * (1 + 1e-9));
  }
}

}  // namespace
}  // namespace annealer
