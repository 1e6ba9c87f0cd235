// Definitions for graph/strategy/integer_softmax.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/strategy/integer_softmax.hpp>
#include <dlavm/te/ops.hpp>
#include <dlavm/te/tensor.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::graph {

namespace detail {

class SoftmaxStageWriter;

// A stage of the writer indexed by (key, lane) alone: the block's leading indices are those
// of the stage being written.
class BlockTensor {
 public:
  BlockTensor(te::Tensor t, const SoftmaxStageWriter& w) : tensor(std::move(t)), w_(&w) {}
  inline te::Expr operator()(const ne::Expr& key, const ne::Expr& lane) const;
  te::Tensor tensor;

 private:
  const SoftmaxStageWriter* w_;
};

// Builds the stages, each recorded in `out`, over the blocks of `scores` [lead..., keys, lanes]
// (every stage has the same leading dims).
class SoftmaxStageWriter {
 public:
  SoftmaxStageWriter(const te::Tensor& scores, const std::string& name,
                     std::vector<te::Tensor>& out)
      : lead_(scores.shape().begin(), scores.shape().end() - 2),
        keys_(scores.shape().end()[-2]),
        lanes_(scores.shape().back()),
        name_(name),
        out_(out) {}

  static te::Expr c(std::int64_t v) { return te::make_const(v, DType::int32()); }

  BlockTensor wrap(const te::Tensor& t) const { return {t, *this}; }

  // The element (key, lane) of t in the block of the stage being written.
  te::Expr read(const te::Tensor& t, const ne::Expr& key, const ne::Expr& lane) const {
    std::vector<ne::Expr> index(at_.begin(), at_.end());
    index.push_back(key);
    index.push_back(lane);
    return t.read(std::move(index));
  }

  // A [keys, lanes] stage of f(key, lane).
  BlockTensor block(const std::string& what,
                    const std::function<te::Expr(const ne::Var&, const ne::Var&)>& f) {
    return stage(what, keys_, f);
  }
  // A [1, lanes] stage of f(lane): one value per row.
  BlockTensor row(const std::string& what, const std::function<te::Expr(const ne::Var&)>& f) {
    return stage(what, 1, [&](const ne::Var&, const ne::Var& l) { return f(l); });
  }
  // A [1, lanes] reduction over the keys: the max or the sum of t. A constant key count reduces
  // by halving: each level combines the first half of the entries with the second, one ALU
  // instruction over the half (a max overlaps the halves of an odd count; a sum leaves the odd
  // entry out and adds it at the end, one stage per odd level), ceil(log2(keys)) levels in
  // place of one instruction per key. A symbolic count is a window reduction, one instruction
  // per key.
  BlockTensor reduce(const std::string& what, const BlockTensor& t, bool max) {
    if (const auto n = keys_.as_int()) return halving(what, t, *n, max);
    return window(what, t, max);
  }

 private:
  // A [rows, lanes] stage of f(key, lane) in every block.
  BlockTensor stage(const std::string& what, const ne::Expr& rows,
                    const std::function<te::Expr(const ne::Var&, const ne::Var&)>& f) {
    std::vector<ne::Expr> shape = lead_;
    shape.push_back(rows);
    shape.push_back(lanes_);
    return add(te::compute_dynamic(
        std::move(shape),
        [&](std::span<const ne::Var> i) {
          at_.assign(i.begin(), i.end() - 2);
          return f(i.end()[-2], i.back());
        },
        stage_name(what)));
  }

  BlockTensor halving(const std::string& what, BlockTensor t, std::int64_t n, bool max) {
    // the entries an odd count leaves out of a sum's halving, added at the end (the ALU has no
    // move, so they are read where they are)
    std::vector<std::pair<BlockTensor, std::int64_t>> odd;
    for (int level = 1; n > 1; ++level) {
      if (!max && n % 2 == 1) odd.emplace_back(t, --n);
      const std::int64_t half = (n + 1) / 2, shift = n - half;
      const BlockTensor cur = t;
      t = stage(
          fmt::format("{}.half{}", what, level), half, [&](const ne::Var& k, const ne::Var& l) {
            return max ? te::max(cur(k, l), cur(k + shift, l)) : cur(k, l) + cur(k + shift, l);
          });
      n = half;
    }
    for (std::size_t i = 0; i < odd.size(); ++i) {
      const BlockTensor total = t;
      const auto& [from, at] = odd[i];
      t = stage(fmt::format("{}.odd{}", what, i + 1), 1,
                [&](const ne::Var&, const ne::Var& l) { return total(0, l) + from(at, l); });
    }
    return t;
  }

  BlockTensor window(const std::string& what, const BlockTensor& t, bool max) {
    const auto k = te::reduce_axis({0, keys_}, fmt::format("{}.{}.k", name_, what));
    return stage(what, 1, [&](const ne::Var&, const ne::Var& l) {
      return max ? te::max(t(k.var(), l), {k}) : te::sum(t(k.var(), l), {k});
    });
  }

  BlockTensor add(te::Tensor t) {
    out_.push_back(t);
    return wrap(t);
  }
  std::string stage_name(const std::string& what) const {
    return fmt::format("{}.{}", name_, what);
  }

  std::vector<ne::Expr> lead_;
  ne::Expr keys_, lanes_;
  std::string name_;
  std::vector<te::Tensor>& out_;
  std::vector<ne::Var> at_;  // the leading indices of the stage being written
};

inline te::Expr BlockTensor::operator()(const ne::Expr& key, const ne::Expr& lane) const {
  return w_->read(tensor, key, lane);
}

}  // namespace detail

DLAVM_INLINE IntegerSoftmaxStages integer_softmax_stages(const te::Tensor& scores,
                                                         runtime::IntegerExp fixed,
                                                         const std::string& name) {
  if (scores.ndim() < 2)
    raise<ShapeError>(
        "integer_softmax_stages: scores '{}' have {} dims; they are [lead..., keys, "
        "lanes]",
        scores.name(), scores.ndim());
  IntegerSoftmaxStages st;
  detail::SoftmaxStageWriter w(scores, name, st.alu);
  using detail::SoftmaxStageWriter;
  const auto c = SoftmaxStageWriter::c;
  using V = const ne::Var&;
  const auto s = w.wrap(scores);
  const std::int64_t bits = fixed.frac_bits;

  // t = (s - max) * multiplier, z = -(t >> bits), r = (t + (z << bits)) >> (bits - 7)
  const auto m = w.reduce("max", s, true);
  const auto neg_m = w.row("neg_max", [&](V l) { return m(0, l) * c(-1); });
  const auto x = w.block("x", [&](V k, V l) { return s(k, l) + neg_m(0, l); });
  const auto t = w.block("t", [&](V k, V l) { return x(k, l) * c(fixed.multiplier); });
  const auto zq = w.block("zq", [&](V k, V l) { return t(k, l) >> c(bits); });
  const auto z = w.block("z", [&](V k, V l) { return zq(k, l) * c(-1); });
  const auto z_up = w.block("z_up", [&](V k, V l) { return z(k, l) << c(bits); });
  const auto frac = w.block("frac", [&](V k, V l) { return t(k, l) + z_up(k, l); });
  const auto r = w.block("r", [&](V k, V l) { return frac(k, l) >> c(bits - 7); });
  // p = (((84 r + 21864) r) >> 4) + 2^18
  const auto v0 = w.block("v0", [&](V k, V l) { return r(k, l) * c(84); });
  const auto v1 = w.block("v1", [&](V k, V l) { return v0(k, l) + c(21864); });
  const auto v2 = w.block("v2", [&](V k, V l) { return v1(k, l) * r(k, l); });
  const auto v3 = w.block("v3", [&](V k, V l) { return v2(k, l) >> c(4); });
  const auto one = w.row("one", [&](V) { return c(std::int64_t{1} << 18); });
  const auto p = w.block("p", [&](V k, V l) { return v3(k, l) + one(0, l); });
  // e = (p >> min(z, 15)) >> min(max(z - 15, 0), 15)
  const auto z1 = w.block("z1", [&](V k, V l) { return te::min(z(k, l), c(15)); });
  const auto e1 = w.block("e1", [&](V k, V l) { return p(k, l) >> z1(k, l); });
  const auto z2a = w.block("z2a", [&](V k, V l) { return z(k, l) - c(15); });
  const auto z2b = w.block("z2b", [&](V k, V l) { return te::max(z2a(k, l), c(0)); });
  const auto z2 = w.block("z2", [&](V k, V l) { return te::min(z2b(k, l), c(15)); });
  const auto e = w.block("e", [&](V k, V l) { return e1(k, l) >> z2(k, l); });
  // R = floor(127 * 2^23 / sum), one quotient bit at a time from bit 11: bit = (rem >> b) >=
  // sum, then rem -= (sum * bit) << b (sum << b fits only where the bit is 1)
  const auto sum = w.reduce("sum", e, false);
  const auto neg_sum = w.row("neg_sum", [&](V l) { return sum(0, l) * c(-1); });
  auto rem = w.row("rem", [&](V) { return c(std::int64_t{127} << 23); });
  auto q = w.row("q", [&](V) { return c(0); });
  for (std::int64_t b = 11; b >= 0; --b) {
    const auto tag = [&](const char* what) { return fmt::format("{}{}", what, b); };
    const auto a = w.row(tag("cmp"), [&](V l) { return rem(0, l) >> c(b); });
    const auto d = w.row(tag("diff"), [&](V l) { return a(0, l) + neg_sum(0, l); });
    const auto d1 = w.row(tag("diff1"), [&](V l) { return d(0, l) + c(1); });
    const auto d2 = w.row(tag("pos"), [&](V l) { return te::max(d1(0, l), c(0)); });
    const auto bit = w.row(tag("bit"), [&](V l) { return te::min(d2(0, l), c(1)); });
    const auto q2 = w.row(tag("q2_"), [&](V l) { return q(0, l) << c(1); });
    q = w.row(tag("q"), [&](V l) { return q2(0, l) + bit(0, l); });
    if (b == 0) break;  // the last remainder is not needed
    const auto u = w.row(tag("take"), [&](V l) { return sum(0, l) * bit(0, l); });
    const auto u2 = w.row(tag("take_up"), [&](V l) { return u(0, l) << c(b); });
    const auto u3 = w.row(tag("take_neg"), [&](V l) { return u2(0, l) * c(-1); });
    rem = w.row(tag("rem"), [&](V l) { return rem(0, l) + u3(0, l); });
  }
  // y = (e * R + 2^22) >> 23, e * R = ((e * (R >> 6)) << 6) + e * (R - ((R >> 6) << 6))
  const auto rh = w.row("r_hi", [&](V l) { return q(0, l) >> c(6); });
  const auto rh_up = w.row("r_hi_up", [&](V l) { return rh(0, l) << c(6); });
  const auto rh_neg = w.row("r_hi_neg", [&](V l) { return rh_up(0, l) * c(-1); });
  const auto rl = w.row("r_lo", [&](V l) { return q(0, l) + rh_neg(0, l); });
  const auto eh = w.block("e_hi", [&](V k, V l) { return e(k, l) * rh(0, l); });
  const auto eh_up = w.block("e_hi_up", [&](V k, V l) { return eh(k, l) << c(6); });
  const auto el = w.block("e_lo", [&](V k, V l) { return e(k, l) * rl(0, l); });
  const auto er = w.block("e_r", [&](V k, V l) { return eh_up(k, l) + el(k, l); });
  const auto half = w.row("half", [&](V) { return c(std::int64_t{1} << 22); });
  const auto y0 = w.block("y0", [&](V k, V l) { return er(k, l) + half(0, l); });
  st.result = w.block("y", [&](V k, V l) { return y0(k, l) >> c(23); }).tensor;
  return st;
}

}  // namespace dlavm::graph
