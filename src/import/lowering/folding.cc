#include "src/import/lowering/folding.h"

#include <algorithm>
#include <cmath>

namespace annealer::lowering {

std::vector<int64_t> Broadcast(std::vector<int64_t> a, std::vector<int64_t> b, bool& ok) {
  ok = true;
  if (a.size() < b.size()) std::swap(a, b);
  std::vector<int64_t> out = a;
  const size_t off = a.size() - b.size();
  for (size_t i = 0; i < b.size(); ++i) {
    int64_t x = a[off + i], y = b[i];
    if (x == y || y == 1) out[off + i] = x;
    else if (x == 1) out[off + i] = y;
    else ok = false;
  }
  return out;
}

namespace {

// c's value at output index `idx` of `out` (right-aligned broadcast).
double BroadcastAt(const Const& c, int64_t idx, const std::vector<int64_t>& out) {
  int64_t rem = idx, pos = 0, stride = 1;
  std::vector<int64_t> oi(out.size());
  for (int i = int(out.size()) - 1; i >= 0; --i) { oi[i] = rem % out[i]; rem /= out[i]; }
  const size_t off = out.size() - c.dims.size();
  for (int i = int(c.dims.size()) - 1; i >= 0; --i) {
    const int64_t d = c.dims[i];
    pos += (d == 1 ? 0 : oi[off + i]) * stride;
    stride *= d;
  }
  return (*c.values)[pos];
}

}  // namespace

std::optional<std::vector<double>> FoldBinary(const std::string& op, const Const& a, const Const& b,
                                              const std::vector<int64_t>& out) {
  if (!a.values || !b.values) return std::nullopt;
  const int64_t n = Product(out);
  if (n > kMaxConstantElements) return std::nullopt;
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const double x = BroadcastAt(a, i, out), y = BroadcastAt(b, i, out);
    double r;
    if (op == "Add") r = x + y;
    else if (op == "Sub") r = x - y;
    else if (op == "Mul") r = x * y;
    else if (op == "Div") r = (a.is_float || b.is_float) ? x / y : (y == 0 ? 0 : std::floor(x / y));
    else if (op == "Equal") r = x == y;
    else if (op == "Less") r = x < y;
    else if (op == "Greater") r = x > y;
    else if (op == "GreaterOrEqual") r = x >= y;
    else if (op == "LessOrEqual") r = x <= y;
    else if (op == "Xor") r = (x != 0) != (y != 0);
    else if (op == "Max") r = std::max(x, y);
    else if (op == "Min") r = std::min(x, y);
    else if (op == "Pow") r = std::pow(x, y);
    else if (op == "And") r = x != 0 && y != 0;
    else if (op == "Or") r = x != 0 || y != 0;
    else if (op == "Mod") r = y == 0 ? 0 : std::fmod(x, y);
    else return std::nullopt;
    v[i] = r;
  }
  return v;
}

namespace {
// Row-major strides of dims.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> st(dims.size(), 1);
  for (int i = int(dims.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * dims[i + 1];
  return st;
}
// Calls f(index) for every multi-index of dims in row-major order.
template <typename F>
void ForEachIndex(const std::vector<int64_t>& dims, F f) {
  std::vector<int64_t> idx(dims.size(), 0);
  const int64_t n = Product(dims);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (int a = int(dims.size()) - 1; a >= 0; --a) {
      if (++idx[a] < dims[a]) break;
      idx[a] = 0;
    }
  }
}
}  // namespace

std::vector<double> SliceValues(const std::vector<int64_t>& dims, const std::vector<double>& values,
                                const std::vector<std::array<int64_t, 3>>& ranges, const std::vector<int64_t>& out) {
  const std::vector<int64_t> st = Strides(dims);
  std::vector<double> v;
  ForEachIndex(out, [&](const std::vector<int64_t>& idx) {
    int64_t pos = 0;
    for (size_t a = 0; a < idx.size(); ++a) pos += (ranges[a][0] + idx[a] * ranges[a][2]) * st[a];
    v.push_back(values[size_t(pos)]);
  });
  return v;
}

std::vector<double> TransposeValues(const std::vector<int64_t>& dims, const std::vector<double>& values,
                                    const std::vector<int64_t>& perm) {
  const std::vector<int64_t> st = Strides(dims);
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(dims[size_t(p)]);
  std::vector<double> v;
  ForEachIndex(out, [&](const std::vector<int64_t>& idx) {
    int64_t pos = 0;
    for (size_t a = 0; a < idx.size(); ++a) pos += idx[a] * st[size_t(perm[a])];
    v.push_back(values[size_t(pos)]);
  });
  return v;
}

}  // namespace annealer::lowering
