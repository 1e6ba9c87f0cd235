// host boolean ops (host/logic.hpp: the comparisons, logical ops, where, is_nan and is_inf) and
// host::arg_reduce (argmax, argmin): every kind on random shapes, broadcasts and dtypes against
// index loops and the header comments' formulas written here; NaN, -0, wide integers, ties and
// select_last_index by hand; the dtypes, shapes, axes and operand counts each refuses.
#include <dlavm/host/logic.hpp>
#include <dlavm/host/reduce.hpp>

#include <doctest/doctest.h>

#include "index_loops.hpp"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace logic_test {

namespace host = dlavm::host;
namespace rt = dlavm::runtime;
namespace te = dlavm::te;
using dlavm::DType;
using dlavm_test::for_each_index;
using dlavm_test::operand_index;

// The comparison named `op` of two doubles (every element of the dtypes tested is exact in one).
bool ref_compare(const std::string& op, double a, double b) {
  if (op == "equal") return a == b;
  if (op == "not_equal") return a != b;
  if (op == "greater") return a > b;
  if (op == "greater_equal") return a >= b;
  if (op == "less") return a < b;
  if (op == "less_equal") return a <= b;
  FAIL("no reference for ", op);
  return false;
}

bool ref_logical(const std::string& op, std::int64_t a, std::int64_t b) {
  if (op == "logical_and") return a != 0 && b != 0;
  if (op == "logical_or") return a != 0 || b != 0;
  if (op == "logical_xor") return (a != 0) != (b != 0);
  if (op == "logical_not") return a == 0;
  FAIL("no reference for ", op);
  return false;
}

double element(const te::NDArray& a, const std::vector<std::int64_t>& i) {
  return a.dtype().is_float() ? static_cast<double>(a.at_float(i)) : static_cast<double>(a.at(i));
}

std::vector<std::int64_t> ints(const te::NDArray& a) { return {a.data().begin(), a.data().end()}; }

// A shape and two operand shapes that broadcast to it (leading dims dropped, some dims 1).
struct Shapes {
  std::vector<std::int64_t> out, a, b, c;
};
Shapes random_shapes(std::mt19937& rng) {
  Shapes s;
  s.out.resize(rng() % 5);
  for (auto& d : s.out) d = 1 + static_cast<std::int64_t>(rng() % 4);
  const auto operand = [&] {
    std::vector<std::int64_t> o(
        s.out.begin() + static_cast<std::ptrdiff_t>(rng() % (s.out.size() + 1)), s.out.end());
    for (auto& d : o)
      if (rng() % 3 == 0) d = 1;
    return o;
  };
  s.a = operand();
  s.b = operand();
  s.c = operand();
  return s;
}

// The broadcast of the three (as numpy computes it: the result of the ops under test may not
// be asked for its shape).
std::vector<std::int64_t> broadcast(const Shapes& s) {
  std::vector<std::int64_t> out(std::max({s.a.size(), s.b.size(), s.c.size()}), 1);
  for (const auto* o : {&s.a, &s.b, &s.c})
    for (std::size_t k = 0; k < o->size(); ++k) {
      auto& d = out[out.size() - o->size() + k];
      d = std::max(d, (*o)[k]);
    }
  return out;
}

// Values with many ties: integers from a small range, floats from it with NaNs and -0.
te::NDArray tied(DType t, const std::vector<std::int64_t>& shape, std::mt19937& rng) {
  if (!t.is_float()) return te::NDArray::random(t, shape, rng(), t.is_uint() ? 0 : -2, 2);
  te::NDArray a(t, shape);
  for (float& v : a.fdata()) {
    const auto r = rng() % 7;
    v = r == 0   ? std::numeric_limits<float>::quiet_NaN()
        : r == 1 ? -0.0f
                 : static_cast<float>(static_cast<int>(r) - 4);
  }
  return a;
}

TEST_CASE("host comparisons: every kind and dtype on random broadcasts, against index loops") {
  std::mt19937 rng(61);
  int checked = 0;
  for (const auto& op : host::kCompareOps) {
    const std::string name(op.name);
    CAPTURE(name);
    CHECK(host::compare_op(op.kind).name == op.name);  // the table is in the enum's order
    for (DType t :
         {DType::float32(), DType::int8(), DType::uint8(), DType::int32(), DType::int64()}) {
      CAPTURE(t);
      for (int round = 0; round < 10; ++round) {
        const auto s = random_shapes(rng);
        const auto a = tied(t, s.a, rng), b = tied(t, s.b, rng);
        const auto y = host::compare(op.kind, a, b);
        CHECK(y.dtype() == DType::uint8());
        for_each_index(y.shape(), [&](const std::vector<std::int64_t>& i) {
          const bool want = ref_compare(name, element(a, operand_index(i, s.a)),
                                        element(b, operand_index(i, s.b)));
          CHECK(y.at(i) == (want ? 1 : 0));
          ++checked;
        });
      }
    }
  }
  CHECK(checked > 1000);
}

TEST_CASE("host comparisons: NaN, -0 and the extremes of wide integers by hand") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = te::NDArray::from_floats({4}, {nan, nan, -0.0f, 1.0f});
  auto b = te::NDArray::from_floats({4}, {nan, 1.0f, 0.0f, 1.0f});
  CHECK(ints(host::compare(rt::Compare::Equal, a, b)) == std::vector<std::int64_t>{0, 0, 1, 1});
  CHECK(ints(host::compare(rt::Compare::NotEqual, a, b)) == std::vector<std::int64_t>{1, 1, 0, 0});
  CHECK(ints(host::compare(rt::Compare::LessEqual, a, b)) == std::vector<std::int64_t>{0, 0, 1, 1});
  auto big = te::NDArray::from_ints(DType::int64(), {2}, {INT64_MIN, INT64_MAX});
  auto small = te::NDArray::from_ints(DType::int64(), {1}, {0});
  CHECK(ints(host::compare(rt::Compare::Greater, big, small)) == std::vector<std::int64_t>{0, 1});
  auto u = te::NDArray::from_ints(DType::uint8(), {2}, {255, 0});
  auto v = te::NDArray::from_ints(DType::uint8(), {2}, {1, 0});
  CHECK(ints(host::compare(rt::Compare::Less, u, v)) == std::vector<std::int64_t>{0, 0});
  // a scalar against a row: the result takes the row's shape
  auto row = te::NDArray::from_ints(DType::int32(), {1, 3}, {-1, 0, 1});
  auto zero = te::NDArray::from_ints(DType::int32(), {}, {0});
  const auto ge = host::compare(rt::Compare::GreaterEqual, row, zero);
  CHECK(ge.shape() == std::vector<std::int64_t>{1, 3});
  CHECK(ints(ge) == std::vector<std::int64_t>{0, 1, 1});
}

TEST_CASE("host logical ops and where: random broadcasts against index loops") {
  std::mt19937 rng(62);
  int checked = 0;
  for (const auto& op : host::kLogicalOps) {
    const std::string name(op.name);
    CAPTURE(name);
    CHECK(host::logical_op(op.kind).name == op.name);
    for (int round = 0; round < 40; ++round) {
      const auto s = random_shapes(rng);
      // any nonzero is true
      const auto a = te::NDArray::random(DType::uint8(), s.a, rng(), 0, 3);
      const auto b = te::NDArray::random(DType::uint8(), s.b, rng(), 0, 3);
      const bool unary = rt::arity(op.kind) == 1;
      const auto y = unary ? host::logical(op.kind, a) : host::logical(op.kind, a, b);
      CHECK(y.dtype() == DType::uint8());
      if (unary) CHECK(y.shape() == a.shape());
      for_each_index(y.shape(), [&](const std::vector<std::int64_t>& i) {
        const std::int64_t x = a.at(operand_index(i, s.a));
        const std::int64_t z = unary ? 0 : b.at(operand_index(i, s.b));
        CHECK(y.at(i) == (ref_logical(name, x, z) ? 1 : 0));
        ++checked;
      });
    }
  }
  for (DType t : {DType::float32(), DType::int8(), DType::int64()}) {
    CAPTURE(t);
    for (int round = 0; round < 40; ++round) {
      const auto s = random_shapes(rng);
      const auto c = te::NDArray::random(DType::uint8(), s.c, rng(), 0, 2);
      const auto a = tied(t, s.a, rng), b = tied(t, s.b, rng);
      const auto y = host::where(c, a, b);
      CHECK(y.dtype() == t);
      CHECK(y.shape() == broadcast(s));
      for_each_index(y.shape(), [&](const std::vector<std::int64_t>& i) {
        const bool pick_a = c.at(operand_index(i, s.c)) != 0;
        const double want =
            pick_a ? element(a, operand_index(i, s.a)) : element(b, operand_index(i, s.b));
        const double got = element(y, i);
        if (std::isnan(want))
          CHECK(std::isnan(got));
        else
          CHECK(got == want);
        ++checked;
      });
    }
  }
  CHECK(checked > 1000);
  // where keeps a -0 and the condition's 0 picks b
  auto c = te::NDArray::from_ints(DType::uint8(), {2}, {5, 0});
  auto a = te::NDArray::from_floats({1}, {-0.0f});
  auto b = te::NDArray::from_floats({2}, {7.0f, 8.0f});
  const auto y = host::where(c, a, b);
  CHECK(std::signbit(y.at_float({0})));
  CHECK(y.at_float({1}) == 8.0f);
}

TEST_CASE("host is_nan and is_inf: every float class, with and without each sign") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = te::NDArray::from_floats({2, 3}, {nan, inf, -inf, 0.0f, -nan, -3.5f});
  CHECK(ints(host::is_nan(x)) == std::vector<std::int64_t>{1, 0, 0, 0, 1, 0});
  CHECK(ints(host::is_inf(x)) == std::vector<std::int64_t>{0, 1, 1, 0, 0, 0});
  CHECK(ints(host::is_inf(x, {.detect_negative = false})) ==
        std::vector<std::int64_t>{0, 1, 0, 0, 0, 0});
  CHECK(ints(host::is_inf(x, {.detect_positive = false})) ==
        std::vector<std::int64_t>{0, 0, 1, 0, 0, 0});
  CHECK(ints(host::is_inf(x, {.detect_positive = false, .detect_negative = false})) ==
        std::vector<std::int64_t>(6, 0));
  CHECK(host::is_nan(x).shape() == x.shape());
  CHECK(host::float_class_op(rt::FloatClass::Inf).name == "is_inf");
}

// The index argmax / argmin picks along `axis` at output index o (keepdims), from its comment.
std::int64_t ref_arg(rt::ArgReduce kind, const te::NDArray& x, std::size_t axis,
                     std::vector<std::int64_t> o, bool last) {
  const std::int64_t extent = x.shape()[axis];
  std::int64_t best = -1;
  double m = 0;
  for (std::int64_t step = 0; step < extent; ++step) {
    o[axis] = last ? extent - 1 - step : step;
    const double v = element(x, o);
    if (best >= 0 && std::isnan(m)) break;
    if (best < 0 || std::isnan(v) || (kind == rt::ArgReduce::Max ? v > m : v < m)) {
      best = o[axis];
      m = v;
    }
  }
  return best;
}

TEST_CASE("host argmax and argmin: random shapes, axes and dtypes against a scan") {
  std::mt19937 rng(63);
  int checked = 0;
  for (const auto& op : host::kArgReduceOps) {
    CAPTURE(op.name);
    for (DType t : {DType::float32(), DType::int8(), DType::uint8(), DType::int32()}) {
      for (int round = 0; round < 10; ++round) {
        std::vector<std::int64_t> shape(1 + rng() % 4);
        for (auto& d : shape) d = 1 + static_cast<std::int64_t>(rng() % 4);
        const auto x = tied(t, shape, rng);
        const auto rank = static_cast<std::int64_t>(shape.size());
        const std::int64_t axis =
            static_cast<std::int64_t>(rng() % shape.size()) - (round % 2) * rank;
        const bool keep = rng() % 2 == 0, last = rng() % 2 == 0;
        CAPTURE(t);
        CAPTURE(axis);
        CAPTURE(last);
        const auto y = host::arg_reduce(
            op.kind, x, {.axis = axis, .keepdims = keep, .select_last_index = last});
        const auto k = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
        auto kept = shape;
        kept[k] = 1;
        CHECK(y.dtype() == DType::int64());
        auto dropped = kept;
        dropped.erase(dropped.begin() + static_cast<std::ptrdiff_t>(k));
        CHECK(y.shape() == (keep ? kept : dropped));
        std::size_t flat = 0;
        for_each_index(kept, [&](const std::vector<std::int64_t>& i) {
          CHECK(y.data()[flat++] == ref_arg(op.kind, x, k, i, last));
          ++checked;
        });
      }
    }
  }
  CHECK(checked > 200);
}

TEST_CASE("host argmax and argmin: ties, NaN and select_last_index by hand; refusals") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = te::NDArray::from_floats({2, 4}, {1, 5, 5, 2, 3, nan, 0, nan});
  CHECK(ints(host::arg_reduce(rt::ArgReduce::Max, x, {.axis = 1})) ==
        std::vector<std::int64_t>{1, 1});
  CHECK(ints(host::arg_reduce(rt::ArgReduce::Max, x, {.axis = 1, .select_last_index = true})) ==
        std::vector<std::int64_t>{2, 3});
  CHECK(ints(host::arg_reduce(rt::ArgReduce::Min, x, {.axis = -1, .keepdims = false})) ==
        std::vector<std::int64_t>{0, 1});
  CHECK(ints(host::arg_reduce(rt::ArgReduce::Min, x, {.axis = 0})) ==
        std::vector<std::int64_t>{0, 1, 1, 1});
  CHECK(host::arg_reduce(rt::ArgReduce::Min, x, {.axis = 0, .keepdims = false}).shape() ==
        std::vector<std::int64_t>{4});
  CHECK_THROWS_WITH_AS(host::arg_reduce(rt::ArgReduce::Max, x, {.axis = 2}),
                       "host::argmax: attribute 'axis' is 2, outside [-2, 2) for 2 dims",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      host::arg_reduce(rt::ArgReduce::Min, te::NDArray(DType::int8(), {3, 0}), {.axis = 1}),
      "host::argmin: dim 1 of x [3, 0] (the axis) has no element to pick", dlavm::ShapeError);
}

TEST_CASE("host boolean ops: the dtypes, shapes and operand counts they refuse, by name") {
  auto f = te::NDArray::from_floats({2}, {1, 2});
  auto i = te::NDArray::from_ints(DType::int8(), {2}, {1, 2});
  auto u = te::NDArray::from_ints(DType::uint8(), {2}, {1, 0});
  auto u3 = te::NDArray::from_ints(DType::uint8(), {3}, {1, 0, 1});
  CHECK_THROWS_WITH_AS(host::compare(rt::Compare::Less, f, i),
                       "host::less: operands are float32 and int8; they must have one dtype "
                       "(cast one first)",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::compare(rt::Compare::Equal, u, u3),
                       "host::equal: a [2] and b [3] do not broadcast (dims must match or be 1)",
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::logical(rt::Logical::And, u, i),
                       "host::logical_and: b is int8; logical ops take uint8 (a boolean: 0 or 1, "
                       "any nonzero true)",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::logical(rt::Logical::Not, u, u),
                       "host::logical_not: takes 1 operand, given 2", dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::logical(rt::Logical::Xor, u),
                       "host::logical_xor: takes 2 operands, given 1", dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::where(i, f, f),
                       "host::where: cond is int8; a condition is uint8 (a boolean: 0 or 1, any "
                       "nonzero true)",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::where(u, f, i),
                       "host::where: a is float32 and b is int8; they must have one dtype (cast "
                       "one first)",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::where(u3, f, f),
                       "host::where: cond [3] and the broadcast of a and b [2] do not broadcast "
                       "(dims must match or be 1)",
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::is_nan(i),
                       "host::is_nan: x is int8; this op computes in float32 only (cast it first)",
                       dlavm::TypeError);
}

}  // namespace logic_test
