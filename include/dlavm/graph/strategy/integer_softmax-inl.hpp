// Definitions for graph/strategy/integer_softmax.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/strategy/integer_softmax.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/int_math.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/ne/substitute.hpp>
#include <dlavm/te/ops.hpp>
#include <dlavm/te/tensor.hpp>
#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/rewrite.hpp>
#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/intrinsic_calls.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlavm::graph {

namespace detail {

class SoftmaxStageWriter;

// A stage of the writer read by (key, lane) alone: its leading indices are a prefix of those of
// the stage being written (a row of a whole block read by the stages of one of its chunks).
class BlockTensor {
 public:
  BlockTensor(te::Tensor t, const SoftmaxStageWriter& w) : tensor(std::move(t)), w_(&w) {}
  inline te::Expr operator()(const ne::Expr& key, const ne::Expr& lane) const;
  te::Tensor tensor;

 private:
  const SoftmaxStageWriter* w_;
};

// Builds stages, each recorded in `out`, over blocks of `keys` entries of `lanes` with leading
// dims `lead` (blocks()); every stage has the leading dims of the blocks it was written for.
class SoftmaxStageWriter {
 public:
  SoftmaxStageWriter(std::string name, std::vector<te::Tensor>& out)
      : name_(std::move(name)), out_(out) {}

  // The blocks of the stages written next.
  void blocks(std::vector<ne::Expr> lead, ne::Expr keys, ne::Expr lanes) {
    lead_ = std::move(lead);
    keys_ = std::move(keys);
    lanes_ = std::move(lanes);
  }

  static te::Expr c(std::int64_t v) { return te::make_const(v, DType::int32()); }

  BlockTensor wrap(const te::Tensor& t) const { return {t, *this}; }

  // The element (key, lane) of t in the block of the stage being written (t's leading indices
  // the first of that stage's).
  te::Expr read(const te::Tensor& t, const ne::Expr& key, const ne::Expr& lane) const {
    const auto lead = static_cast<std::ptrdiff_t>(t.ndim() - 2);
    std::vector<ne::Expr> index(at_.begin(), at_.begin() + lead);
    index.push_back(key);
    index.push_back(lane);
    return t.read(std::move(index));
  }

  // A [keys, lanes] stage of f(key, lane).
  BlockTensor block(const std::string& what,
                    const std::function<te::Expr(const ne::Var&, const ne::Var&)>& f) {
    return stage(what, lead_, keys_, f);
  }
  // A [1, lanes] stage of f(lane): one value per row.
  BlockTensor row(const std::string& what, const std::function<te::Expr(const ne::Var&)>& f) {
    return stage(what, lead_, 1, [&](const ne::Var&, const ne::Var& l) { return f(l); });
  }
  // A [n, lanes] stage of f(row, lane): n rows of a block that one ALU instruction updates
  // together, a micro-op each.
  BlockTensor rows(const std::string& what, std::int64_t n,
                   const std::function<te::Expr(const ne::Var&, const ne::Var&)>& f) {
    return stage(what, lead_, n, f);
  }
  // A [n, lanes] stage of f(row, lane) with no leading dims: rows every block reads, which the
  // kernel computes once, before the blocks.
  BlockTensor constant_rows(const std::string& what, std::int64_t n,
                            const std::function<te::Expr(const ne::Var&, const ne::Var&)>& f) {
    return stage(what, {}, n, f);
  }
  // A [1, lanes] reduction over the keys: the max or the sum of t. A constant key count reduces
  // by halving: each level combines the first half of the entries with the second, one ALU
  // instruction over the half (a max overlaps the halves of an odd count; a sum leaves the odd
  // entry out and adds it at the end, one stage per odd level), ceil(log2(keys)) levels in
  // place of one instruction per key. A symbolic count is a window reduction, one instruction
  // per key.
  BlockTensor reduce(const std::string& what, const BlockTensor& t, bool max) {
    if (const auto n = keys_.as_int()) return halving(what, t, *n, max);
    const auto k = te::reduce_axis({0, keys_}, fmt::format("{}.{}.k", name_, what));
    return stage(what, lead_, 1, [&](const ne::Var&, const ne::Var& l) {
      return max ? te::max(t(k.var(), l), {k}) : te::sum(t(k.var(), l), {k});
    });
  }
  // The max or the sum of rows t [lead..., 1, lanes] over the first `extent` of the last
  // leading dim (a block's chunks: extent(its leading indices)): a [lead[:-1]..., 1, lanes]
  // reduction, which the kernel's schedule runs as a running row, t computed inside its loop.
  BlockTensor reduce_blocks(const std::string& what, const te::Tensor& t,
                            const std::function<ne::Expr(std::span<const ne::Var>)>& extent,
                            bool max) {
    std::vector<ne::Expr> lead(lead_.begin(), lead_.end() - 1);
    return stage(what, std::move(lead), 1, [&](const ne::Var&, const ne::Var& l) {
      const auto b = te::reduce_axis({0, extent(at_)}, fmt::format("{}.{}.b", name_, what));
      std::vector<ne::Expr> index(at_.begin(), at_.end());
      index.insert(index.end(), {b.var(), 0, l});
      const te::Expr v = t.read(std::move(index));
      return max ? te::max(v, {b}) : te::sum(v, {b});
    });
  }

 private:
  // A [rows, lanes] stage of f(key, lane) in every block of `lead`.
  BlockTensor stage(const std::string& what, std::vector<ne::Expr> shape, const ne::Expr& rows,
                    const std::function<te::Expr(const ne::Var&, const ne::Var&)>& f) {
    shape.push_back(rows);
    shape.push_back(lanes_);
    return add(te::compute_dynamic(
        std::move(shape),
        [&](std::span<const ne::Var> i) {
          at_.assign(i.begin(), i.end() - 2);
          return f(i.end()[-2], i.back());
        },
        fmt::format("{}.{}", name_, what)));
  }

  BlockTensor halving(const std::string& what, BlockTensor t, std::int64_t n, bool max) {
    // the entries an odd count leaves out of a sum's halving, added at the end (the ALU has no
    // move, so they are read where they are)
    std::vector<std::pair<BlockTensor, std::int64_t>> odd;
    for (int level = 1; n > 1; ++level) {
      if (!max && n % 2 == 1) odd.emplace_back(t, --n);
      const std::int64_t half = (n + 1) / 2, shift = n - half;
      const BlockTensor cur = t;
      t = stage(fmt::format("{}.half{}", what, level), lead_, half,
                [&](const ne::Var& k, const ne::Var& l) {
                  return max ? te::max(cur(k, l), cur(k + shift, l))
                             : cur(k, l) + cur(k + shift, l);
                });
      n = half;
    }
    for (std::size_t i = 0; i < odd.size(); ++i) {
      const BlockTensor total = t;
      // (the pair's members named, not bound: Clang before 16 cannot capture bindings)
      const BlockTensor& from = odd[i].first;
      const std::int64_t at = odd[i].second;
      t = stage(fmt::format("{}.odd{}", what, i + 1), lead_, 1,
                [&](const ne::Var&, const ne::Var& l) { return total(0, l) + from(at, l); });
    }
    return t;
  }

  BlockTensor add(te::Tensor t) {
    out_.push_back(t);
    return wrap(t);
  }

  std::string name_;
  std::vector<te::Tensor>& out_;
  std::vector<ne::Expr> lead_;
  ne::Expr keys_ = 1, lanes_ = 1;
  std::vector<ne::Var> at_;  // the leading indices of the stage being written
};

inline te::Expr BlockTensor::operator()(const ne::Expr& key, const ne::Expr& lane) const {
  return w_->read(tensor, key, lane);
}

using V = const ne::Var&;

// The rows a block's exponentials read (runtime::integer_exp's steps with the quadratic's fixed
// shift folded into z): bias = max * multiplier + q.shift * 2^frac_bits, so that t = -s *
// multiplier + bias gives z + q.shift and the same r, and the quadratic's top. `m` the rows'
// max. A kernel computes them once a block, not once a chunk. `fixed` is the fixed point they
// were computed with (fewest_fraction_bits), which the exponent's stages read.
struct ExponentRows {
  BlockTensor bias, top;
  runtime::IntegerExp fixed;
  // The rows as the stages of writer `w` read them.
  ExponentRows in(const SoftmaxStageWriter& w) const {
    return {w.wrap(bias.tensor), w.wrap(top.tensor), fixed};
  }
};
inline ExponentRows exponent_rows(SoftmaxStageWriter& w, const BlockTensor& m,
                                  runtime::IntegerExp fixed, runtime::IntegerExpQuadratic q) {
  const auto c = SoftmaxStageWriter::c;
  fixed = graph::fewest_fraction_bits(fixed);
  const auto scaled = w.row("max_t", [&](V l) { return m(0, l) * c(fixed.multiplier); });
  const auto offset =
      w.row("z_offset", [&](V) { return c(std::int64_t{q.shift} << fixed.frac_bits); });
  return {w.row("bias", [&](V l) { return scaled(0, l) + offset(0, l); }),
          w.row("top", [&](V) { return c(q.top); }), fixed};
}

// The exponent of every score, in the rows' fixed point: t = -s * multiplier + bias >= 0,
// u = t >> (frac_bits - 7),
// z = u >> 7 (runtime::integer_exponent's z plus q.shift), r = u - 128 z, and the quadratic
// v = (c2 r - c1) r + top: the value integer_exp and integer_exp8 shift right by z.
struct ExponentStages {
  BlockTensor z, v;
};
inline ExponentStages exponent_stages(SoftmaxStageWriter& w, const BlockTensor& s,
                                      const ExponentRows& rows, runtime::IntegerExpQuadratic q) {
  const auto c = SoftmaxStageWriter::c;
  const runtime::IntegerExp& fixed = rows.fixed;
  const auto t0 = w.block("t0", [&](V k, V l) { return s(k, l) * c(-fixed.multiplier); });
  const auto t = w.block("t", [&](V k, V l) { return t0(k, l) + rows.bias(0, l); });
  const std::int64_t below = fixed.frac_bits - 7;
  const auto u = below == 0 ? t : w.block("u", [&](V k, V l) { return t(k, l) >> c(below); });
  const auto z = w.block("z", [&](V k, V l) { return u(k, l) >> c(7); });
  const auto z_down = w.block("z_down", [&](V k, V l) { return z(k, l) * c(-128); });
  const auto r = w.block("r", [&](V k, V l) { return u(k, l) + z_down(k, l); });
  // r again where z_down was (z_down <= 0 <= r): the quadratic multiplies this copy in place
  // and reads r, and a max is one ALU pass where a copy is a reset and an add. (The quadratic,
  // and the exponential after it, then stay out of the load's buffer, which the next chunk's
  // load fills while this chunk's store may still read it.)
  const auto r_copy = w.block("r_copy", [&](V k, V l) { return te::max(z_down(k, l), r(k, l)); });
  const auto v0 = w.block("v0", [&](V k, V l) { return r_copy(k, l) * c(q.c2); });
  const auto v1 = w.block("v1", [&](V k, V l) { return v0(k, l) + c(-q.c1); });
  const auto v2 = w.block("v2", [&](V k, V l) { return v1(k, l) * r(k, l); });
  return {z, w.block("v", [&](V k, V l) { return v2(k, l) + rows.top(0, l); })};
}

// e of every score (runtime::integer_exp): v >> (z + 4) with z from exponent_stages (which adds
// the 4), as (v >> min(z - 8, 15)) >> 8: v < 2^23, so that a z of 23 or more gives 0, as the
// clip to 23 does; the first amount is -4 at least (z >= 4: t >= 4 * 2^frac_bits), a shift left
// of v by up to 4 (below 2^27), which the second takes back: (v << k) >> 8 is v >> (8 - k) and
// (v >> j) >> 8 is v >> (j + 8). Two shifts and two steps for the first amount (an ADD the GEMM
// core may take), where min(z, 15) and min(max(z - 15, 0), 15) took four; every amount within
// the [-16, 15] VTA's SHR reads, a negative one where the design reads it signed
// (check_softmax_shifts).
inline BlockTensor exponential_stages(SoftmaxStageWriter& w, const BlockTensor& s,
                                      const ExponentRows& rows) {
  const auto c = SoftmaxStageWriter::c;
  // (named members, not a structured binding: the lambdas capture them, which clang 14 does
  // not allow of a binding)
  const auto exponent = exponent_stages(w, s, rows, runtime::kIntegerExpQuadratic);
  const BlockTensor& z = exponent.z;
  const BlockTensor& v = exponent.v;
  const auto z_less = w.block("z_less", [&](V k, V l) { return z(k, l) + c(-8); });
  const auto z_clip = w.block("z_clip", [&](V k, V l) { return te::min(z_less(k, l), c(15)); });
  const auto e1 = w.block("e1", [&](V k, V l) { return v(k, l) >> z_clip(k, l); });
  return w.block("e", [&](V k, V l) { return e1(k, l) >> c(8); });
}

// e8 of every score (runtime::integer_exp8): ((v >> min(z, 15)) + 2^13) >> 14 with z from
// exponent_stages (integer_exp8's z + 1).
inline BlockTensor exponential8_stages(SoftmaxStageWriter& w, const BlockTensor& s,
                                       const ExponentRows& rows) {
  const auto c = SoftmaxStageWriter::c;
  const auto exponent = exponent_stages(w, s, rows, runtime::kIntegerExp8Quadratic);
  const BlockTensor& z = exponent.z;
  const BlockTensor& v = exponent.v;
  const auto z1 = w.block("z1", [&](V k, V l) { return te::min(z(k, l), c(15)); });
  const auto e1 = w.block("e1", [&](V k, V l) { return v(k, l) >> z1(k, l); });
  const auto e2 = w.block("e2", [&](V k, V l) { return e1(k, l) + c(std::int64_t{1} << 13); });
  return w.block("e8", [&](V k, V l) { return e2(k, l) >> c(14); });
}

// R = floor(D / sum), D = 127 * 2^shift, of every row (at most 12 bits: the sum at least
// 2^(shift - 5)), one quotient bit at a time from bit 11 by restoring division on the partial
// remainder P = floor(rem / 2^b) (rem the remainder of D after the bits above b), which stays
// below 2^30 where rem << b would not: t = P - sum; the bit is t >= 0, as m = max(min(t, 0), -1)
// (0 or -1, the bit minus 1: two ALU immediates, where a shift by 31 would take three); the
// next P = 2 * (t + sum where m is -1), bit b - 1 of D being 0 (shift >= 11, as both callers
// pass). R = sum of m_b * 2^b + 2^12 - 1. u = m * -sum is -max(m << 31, -sum) (sum < 2^31):
// no multiply by a tile, whose multiplier the hardware takes from its low 8 bits. m needs t in
// a row of its own (the remainder reads t again): the first bit copies it (a reset and an
// ADD), each bit after it takes min(u, t) in the row of the bit before's u >= 0, free once
// that remainder read it (min(min(u, t), 0) = min(t, 0)). Twelve ALU instructions a bit after
// the first, in the same rows bit after bit, so that a replay writes each bit's instructions
// again rather than encoding them.
inline BlockTensor reciprocal_stages(SoftmaxStageWriter& w, const BlockTensor& sum,
                                     std::int64_t shift) {
  const auto c = SoftmaxStageWriter::c;
  constexpr std::int64_t top = 11;
  const std::int64_t dividend = std::int64_t{127} << shift;  // (shift >= top)
  const auto neg_sum = w.row("neg_sum", [&](V l) { return sum(0, l) * c(-1); });
  auto partial = w.row("rem", [&](V) { return c(dividend >> top); });
  auto q = w.row("q", [&](V) { return c(0); });
  std::optional<BlockTensor> back;  // the bit before's u
  for (std::int64_t b = top; b >= 0; --b) {
    const auto tag = [&](const char* what) { return fmt::format("{}{}", what, b); };
    const auto t = w.row(tag("diff"), [&](V l) { return partial(0, l) + neg_sum(0, l); });
    auto first = t;
    if (back) {
      const BlockTensor u = *back;
      first = w.row(tag("diff_min"), [&](V l) { return te::min(u(0, l), t(0, l)); });
    }
    const auto lo = w.row(tag("neg"), [&](V l) { return te::min(first(0, l), c(0)); });
    const auto m = w.row(tag("bit"), [&](V l) { return te::max(lo(0, l), c(-1)); });
    if (b < top) q = w.row(tag("q2_"), [&](V l) { return q(0, l) << c(1); });
    q = w.row(tag("q"), [&](V l) { return q(0, l) + m(0, l); });
    if (b == 0) break;  // the last remainder is not needed
    // u = m x -sum with no multiply by a tile (the hardware's multiplier would be -sum's low
    // 8 bits): m shifted to 0 or -2^31, its max with -sum (above -2^31), negated
    const auto m_up = w.row(tag("bit_up"), [&](V l) { return m(0, l) << c(15); });
    const auto m_far = w.row(tag("bit_far"), [&](V l) { return m_up(0, l) << c(16); });
    const auto neg_u =
        w.row(tag("neg_back"), [&](V l) { return te::max(m_far(0, l), neg_sum(0, l)); });
    const auto u = w.row(tag("back"), [&](V l) { return neg_u(0, l) * c(-1); });
    const auto rest = w.row(tag("rest"), [&](V l) { return t(0, l) + u(0, l); });
    partial = w.row(tag("rem"), [&](V l) { return rest(0, l) << c(1); });
    back = u;
  }
  return w.row("reciprocal", [&](V l) { return q(0, l) + c((std::int64_t{1} << (top + 1)) - 1); });
}

// Whether a normalization of at most `keys` keys (each exponential at most 127: a sum of at
// most 2^19) takes packed_reciprocal_stages.
inline bool packed_reciprocal_fits(std::int64_t keys) { return 127 * keys <= (1 << 19); }
// Whether the kernel of `shape` divides so: a normalization whose key count's bound fits (what
// its stages and its footprint both follow).
inline bool softmax_packed_division(const IntegerSoftmaxShape& shape) {
  return shape.part == IntegerSoftmaxPart::Normalize &&
         packed_reciprocal_fits(ne::bounds(shape.keys).max);
}

// R = floor(127 * 2^11 / sum) as reciprocal_stages(w, sum, 11) computes it, for a sum of at
// most 2^19 (packed_reciprocal_fits): the partial remainder P and the quotient bits found so far
// Q held together as U = P 2^11 + Q, below 2^31 (P < 2 sum, and even after the first bit, so
// that P 2^11 leaves Q's 12 bits alone). A bit: 2 U compared with sum 2^12 is P with sum
// (2 Q < 2^12), and the next U is 2 U + A (A = 1 - sum 2^12) where the bit is 1, else 2 U.
// That is the lesser of the two as unsigned 32-bit numbers (the first wraps above 2^31 where
// the bit is 0), which is the signed MIN of both plus B = -2^31 (the ALU's 32-bit arithmetic
// wraps). The two candidates sit in a pair of rows, [2 U + B, 2 U + A + B], so that each step
// is one instruction of two micro-ops: the MIN of each row with the other (both rows then hold
// U + B: min(x, min(y, x)) = min(x, y), whichever value the second micro-op reads), the
// doubling (which wraps B away), and the ADD of the rows [B, A + B], formed once a block as
// the MIN of A + B (above 0) with [-2^31, 2^31 - 1]. Three instructions a bit, where a row
// alone took six (two of them, a reset and an ADD, a copy). Then R = U mod 2^12, which is
// U + B less its bits from 12 up (B's low 12 bits are 0).
inline BlockTensor packed_reciprocal_stages(SoftmaxStageWriter& w, const BlockTensor& sum) {
  const auto c = SoftmaxStageWriter::c;
  constexpr std::int64_t top = 11, bits = top + 1;
  constexpr std::int64_t bias = std::numeric_limits<std::int32_t>::min();
  constexpr std::int64_t most = std::numeric_limits<std::int32_t>::max();
  constexpr std::int64_t dividend = std::int64_t{127} << top;  // U before the top bit: P 2^11
  // (kernel-wide rows: B + 1, 2 U's first value, the pair's bounds)
  const auto bias_one = w.constant_rows("bias_one", 1, [&](V, V) { return c(bias + 1); });
  const auto first = w.constant_rows("first", 1, [&](V, V) { return c(2 * dividend); });
  const auto ends = w.constant_rows(
      "ends", 2, [&](V k, V) { return te::select(ne::Expr(k) == 0, c(bias), c(most)); });
  const auto neg_sum = w.row("neg_sum", [&](V l) { return sum(0, l) * c(-1); });
  const auto neg_scaled = w.row("neg_sum_up", [&](V l) { return neg_sum(0, l) << c(bits); });
  const auto addend = w.row("addend", [&](V l) { return neg_scaled(0, l) + bias_one(0, l); });
  const auto adds = w.rows("adds", 2, [&](V k, V l) { return te::min(addend(0, l), ends(k, l)); });
  // [2 U + B, 2 U + A + B] for the top bit: U = 127 2^11, B doubled away, B in `adds`
  auto held = w.rows("up11", 2, [&](V k, V l) { return adds(k, l) + first(0, l); });
  for (std::int64_t b = top; b > 0; --b) {
    const auto tag = [&](const char* what) { return fmt::format("{}{}", what, b); };
    const auto pair = held;
    const auto both = w.rows(
        tag("rem"), 2, [&](V k, V l) { return te::min(pair(k, l), pair(ne::Expr(1) - k, l)); });
    const auto twice = w.rows(tag("twice"), 2, [&](V k, V l) { return both(k, l) << c(1); });
    held = w.rows(tag("up"), 2, [&](V k, V l) { return twice(k, l) + adds(k, l); });
  }
  const auto last = held;
  const auto whole = w.row("rem0", [&](V l) { return te::min(last(0, l), last(1, l)); });
  const auto high = w.row("high", [&](V l) { return whole(0, l) >> c(bits); });
  const auto high_up = w.row("high_up", [&](V l) { return high(0, l) << c(bits); });
  const auto neg_high = w.row("neg_high", [&](V l) { return high_up(0, l) * c(-1); });
  return w.row("reciprocal", [&](V l) { return whole(0, l) + neg_high(0, l); });
}

// R's two 6-bit halves (high, low), each a multiplier VTA's ALU takes.
inline std::pair<BlockTensor, BlockTensor> split_reciprocal(SoftmaxStageWriter& w,
                                                            const BlockTensor& q) {
  const auto c = SoftmaxStageWriter::c;
  const auto rh = w.row("r_hi", [&](V l) { return q(0, l) >> c(6); });
  const auto rh_up = w.row("r_hi_up", [&](V l) { return rh(0, l) << c(6); });
  const auto rh_neg = w.row("r_hi_neg", [&](V l) { return rh_up(0, l) * c(-1); });
  const auto rl = w.row("r_lo", [&](V l) { return q(0, l) + rh_neg(0, l); });
  return {rh, rl};
}

// y = (e * R + 2^22) >> 23, e * R = ((e * (R >> 6)) << 6) + e * (R - ((R >> 6) << 6)), as
// ((e * R >> 8) + 2^14) >> 15: the same bits (floor((floor(x / a) + b) / c) = floor((x + ab) /
// ac)), with an immediate where 2^22 would need a row of its own (the ALU's immediates have 16
// bits), which a chunk of the kernel's pass 3 would compute again.
inline BlockTensor probability_stages(SoftmaxStageWriter& w, const BlockTensor& e,
                                      const std::pair<BlockTensor, BlockTensor>& reciprocal) {
  const auto c = SoftmaxStageWriter::c;
  const BlockTensor& rh = reciprocal.first;
  const BlockTensor& rl = reciprocal.second;
  const auto eh = w.block("e_hi", [&](V k, V l) { return e(k, l) * rh(0, l); });
  const auto eh_up = w.block("e_hi_up", [&](V k, V l) { return eh(k, l) << c(6); });
  const auto el = w.block("e_lo", [&](V k, V l) { return e(k, l) * rl(0, l); });
  const auto er = w.block("e_r", [&](V k, V l) { return eh_up(k, l) + el(k, l); });
  const auto y0 = w.block("y0", [&](V k, V l) { return er(k, l) >> c(8); });
  const auto y1 = w.block("y1", [&](V k, V l) { return y0(k, l) + c(std::int64_t{1} << 14); });
  return w.block("y", [&](V k, V l) { return y1(k, l) >> c(15); });
}

// y = (R * e + 2^10) >> 11 of int8 exponentials e (runtime::integer_probability8): R (12 bits)
// copied beside the chunk and multiplied by e, a multiplier within the ALU's 8 bits.
inline BlockTensor normalized_stages(SoftmaxStageWriter& w, const BlockTensor& e,
                                     const BlockTensor& reciprocal) {
  const auto c = SoftmaxStageWriter::c;
  const auto er = w.block("e_r", [&](V k, V l) { return reciprocal(0, l) * e(k, l); });
  const auto y0 = w.block("y0", [&](V k, V l) { return er(k, l) + c(std::int64_t{1} << 10); });
  return w.block("y", [&](V k, V l) { return y0(k, l) >> c(11); });
}

// The stages of `part` over the blocks of writer `w`, whole (no chunks): the softmax's
// probabilities of scores `s`, the exponentials of an Exp, or the probabilities of the int8
// exponentials `s` of a Normalize. Its result.
inline BlockTensor part_stages(SoftmaxStageWriter& w, const BlockTensor& s, IntegerSoftmaxPart part,
                               runtime::IntegerExp fixed,
                               std::int64_t most_keys = runtime::kIntegerSoftmaxMaxExtent) {
  switch (part) {
    case IntegerSoftmaxPart::Exp:
      return exponential8_stages(
          w, s, exponent_rows(w, w.reduce("max", s, true), fixed, runtime::kIntegerExp8Quadratic));
    case IntegerSoftmaxPart::Normalize: {
      const auto sum = w.reduce("sum", s, false);
      // (runtime::integer_reciprocal8 takes a sum of at least 127)
      const auto floor = w.row("sum_floor", [&](const ne::Var& l) {
        return te::max(sum(0, l), SoftmaxStageWriter::c(127));
      });
      return normalized_stages(w, s,
                               packed_reciprocal_fits(most_keys)
                                   ? packed_reciprocal_stages(w, floor)
                                   : reciprocal_stages(w, floor, 11));
    }
    case IntegerSoftmaxPart::Whole:
      break;
  }
  const auto e = exponential_stages(
      w, s, exponent_rows(w, w.reduce("max", s, true), fixed, runtime::kIntegerExpQuadratic));
  const auto q = reciprocal_stages(w, w.reduce("sum", e, false), 23);
  return probability_stages(w, e, split_reciprocal(w, q));
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
  detail::SoftmaxStageWriter w(name, st.alu);
  const auto& shape = scores.shape();
  w.blocks({shape.begin(), shape.end() - 2}, shape.end()[-2], shape.back());
  st.result = detail::part_stages(w, w.wrap(scores), IntegerSoftmaxPart::Whole, fixed).tensor;
  return st;
}

namespace detail {

// The chunks of the keys' maximum.
inline std::int64_t softmax_chunks(const IntegerSoftmaxShape& shape, std::int64_t chunk) {
  return ne::ceil_div(std::max<std::int64_t>(ne::bounds(shape.keys).max, 1), chunk);
}

// The accumulator entries of the passes (footprint() without the kept exponentials).
inline SramFootprint pass_footprint(const IntegerSoftmaxShape& shape, std::int64_t chunk);
// The chunks of a block whose exponentials pass 2 of the whole softmax keeps in the accumulator
// for pass 3 (skip_masked_work), or whose input the first pass of a half keeps for pass 3 (not
// in uniform tiles): as many as the entries the passes leave free hold, at most the block's
// chunks; none where the keys fit one chunk (no chunk loop).
inline std::int64_t kept_chunks(const vta::Env& env, const IntegerSoftmaxShape& shape,
                                std::int64_t chunk);

// Whether the softmax is causal (a query sees fewer keys than there are).
inline bool softmax_causal(const IntegerSoftmaxShape& shape) {
  return shape.queries.defined() && !ne::can_prove(shape.queries <= 1);
}

// The packed products of one batch: ceil(M / G), the blocks of a batch's queries.
inline ne::Expr softmax_query_rows(const IntegerSoftmaxShape& shape) {
  return shape.groups > 1 ? ne::simplify(ne::ceildiv(shape.queries, shape.groups)) : shape.queries;
}

// The most queries of a causal softmax the kernel runs in uniform tiles: a decode step's (the
// gallery's firmware runs at most 16 tokens a step). A uniform block computes every key, up to
// M - 1 more than its queries see (15 keys a block, 0.7% of a block of 2,048, where a prefill's
// would be half its keys), and its mask rows take 3 (M - 1) rows of DRAM.
inline constexpr std::int64_t kUniformQueries = 16;

// The most queries M of a causal softmax.
inline std::int64_t softmax_most_queries(const IntegerSoftmaxShape& shape) {
  return std::max<std::int64_t>(ne::bounds(shape.queries).max, 1);
}

// Whether the kernel runs in uniform tiles (IntegerSoftmaxKernel): a causal softmax of at most
// kUniformQueries queries whose packed products are one batch's queries (products = ceil(M /
// G)), so that block p's first query is p x G and the row of its masks in DRAM affine in p.
// (With more batches the first query is p mod ceil(M / G) x G, and the row with it: no DRAM
// offset of one tile's instructions is that.)
inline bool softmax_uniform(const IntegerSoftmaxShape& shape) {
  return softmax_causal(shape) && softmax_most_queries(shape) <= kUniformQueries &&
         ne::can_prove(ne::simplify(shape.products - softmax_query_rows(shape)) == 0);
}

// The runs a knob estimate averages a block's work over: all N keys at their most, or for a
// causal softmax the runs of the most queries M after 16 counts of keys before them (N - M),
// evenly spaced from their least to their most. Block q0 of such a run computes the chunks that
// hold the keys its queries see, before + q0 + G: in a prefill from the context's start that
// pads a chunk per block, so the best chunk balances the padding against each chunk's
// instructions, rather than being the largest that fits. In uniform tiles every block computes
// all before + M keys.
struct SoftmaxRuns {
  std::int64_t keys = 1, queries = 0, groups = 1;
  bool uniform = false;
  std::vector<std::int64_t> before;  // empty: not causal

  explicit SoftmaxRuns(const IntegerSoftmaxShape& shape) {
    const auto extent = [](const ne::Expr& e) {
      const auto b = ne::bounds(ne::simplify(e));
      const auto clamp = [](std::int64_t v) {
        return std::clamp<std::int64_t>(v, 0, runtime::kIntegerSoftmaxMaxExtent);
      };
      return std::pair{clamp(b.min), clamp(b.max)};
    };
    keys = std::max<std::int64_t>(extent(shape.keys).second, 1);
    if (!softmax_causal(shape)) return;
    queries = std::clamp<std::int64_t>(extent(shape.queries).second, 1, keys);
    groups = std::max<std::int64_t>(shape.groups, 1);
    uniform = softmax_uniform(shape);
    const auto [least, most] = extent(shape.keys - shape.queries);
    const std::int64_t lo = std::min(least, keys - queries);
    const std::int64_t hi = std::clamp(most, lo, keys - queries);
    constexpr std::int64_t kSamples = 16;
    const std::int64_t n = std::min(kSamples, hi - lo + 1);
    for (std::int64_t k = 0; k < n; ++k)
      before.push_back(n == 1 ? lo : lo + (hi - lo) * k / (n - 1));
  }

  // f(the keys a block computes: those its queries see, or in uniform tiles all of them),
  // averaged over the runs and their blocks.
  template <class F>
  double average(F f) const {
    if (before.empty()) return static_cast<double>(f(keys));
    double sum = 0;
    std::int64_t blocks = 0;
    for (const std::int64_t b : before)
      for (std::int64_t q0 = 0; q0 < queries; q0 += groups, ++blocks)
        sum += static_cast<double>(f(std::min(keys, b + (uniform ? queries : q0 + groups))));
    return sum / static_cast<double>(blocks);
  }
  // The entries (keys of a lane tile) of a block in chunks of `chunk`, averaged over the runs
  // and their blocks; with `chunk` 1, the keys it computes.
  double entries(std::int64_t chunk) const {
    return average([&](std::int64_t seen) { return ne::ceil_div(seen, chunk) * chunk; });
  }
};

// The query of (packed) product `p`'s first lane group: p modulo the products of a batch (p
// itself where the products are the queries), times the groups.
inline ne::Expr softmax_first_query(const IntegerSoftmaxShape& shape, const ne::Var& p) {
  const ne::Expr rows = softmax_query_rows(shape);
  const ne::Expr q =
      ne::can_prove(ne::simplify(shape.products - rows) == 0) ? ne::Expr(p) : ne::floormod(p, rows);
  return ne::simplify(q * shape.groups);
}

// The keys block p computes, those after them loaded as -32768 (0 for a normalization): all N
// where the softmax is not causal or runs in uniform tiles, else N - M + q + 1 (q = p: the
// products are the queries); with lane groups, the most any of its groups' queries sees (at
// most N).
inline ne::Expr softmax_visible(const IntegerSoftmaxShape& shape, const ne::Var& p) {
  if (!softmax_causal(shape) || softmax_uniform(shape)) return shape.keys;
  const ne::Expr last =
      ne::simplify(shape.keys - shape.queries + softmax_first_query(shape, p) + shape.groups);
  return shape.groups > 1 ? ne::simplify(ne::min(last, shape.keys)) : last;
}

// Whether block p may compute fewer keys than N (a causal softmax not in uniform tiles): its
// passes then skip the chunks after softmax_visible.
inline bool softmax_skips(const IntegerSoftmaxShape& shape) {
  return softmax_causal(shape) && !softmax_uniform(shape);
}

// The loop over the products `product` of `body` taking its blocks in pairs, p and P - 1 - p (P its
// extent), for skip_masked_work where block p computes the chunks it sees but stores all N keys
// (softmax_skips): otherwise the first blocks store more than they compute, the store module (in
// order) falls behind, and the compute module waits for it at every write to a buffer a store has
// yet to read. A pair computes about as many chunks as one block that sees all N keys, and the
// stores of the keys a block does not see overlap work that stores nothing: the first block's, the
// second block's first pass, over about as many keys as the first did not see; the second block's,
// few, the next pair's first pass. Pairs p and p + ceil(P / 2), the order before, left the compute
// module waiting 0.36 M cycles of the gallery's 2,048-token exponentials, and 0.31 M so (35.904 ->
// 35.847 M cycles; the normalization 0.37 -> 0.32 M, 13.259 -> 13.210 M; the whole softmax 0.35 ->
// 0.19 M, 68.173 -> 68.016 M). The pair's loop body is the block's statements twice, the second
// block's guarded where P may be odd (the middle block once). Where P is symbolic, only where it is
// at least 2 (the loop as it was in an else branch: a decode step's single block pays for no pair's
// index).
// (The lowering's loop rewritten, not the schedule's axis split: a split's index reaches the loads'
// padding conditions, which VTA's DMA takes only as bounds on one loop.)
inline tir::Stmt pair_blocks(const tir::Stmt& body, const ne::Var& product) {
  struct Pairs : tir::StmtMutator<Pairs> {
    explicit Pairs(ne::Var p) : product(std::move(p)) {}
    ne::Var product;
    tir::Stmt visit_for(const tir::ForNode& n, const tir::Stmt& s) {
      if (n.var.id() != product.id()) return tir::StmtMutator<Pairs>::visit_for(n, s);
      const auto most = ne::bounds(n.extent).max;
      if (most < 2) return s;
      const ne::Expr half = ne::simplify(ne::ceildiv(n.extent, 2));
      const ne::Var pair = ne::var(product.name() + ".pair", 0, (most + 1) / 2 - 1);
      const ne::Expr first = ne::simplify(n.min + pair);
      const ne::Expr second = ne::simplify(n.min + n.extent - 1 - pair);
      const std::vector<ne::Substitution> to_first{{product, first}}, to_second{{product, second}};
      tir::Stmt last = tir::rewrite(n.body, to_second, {});
      if (!ne::can_prove(ne::simplify(half * 2 - n.extent) == 0))
        last = tir::make_if(second > first, last);
      const tir::Stmt pairs = tir::make_for(
          pair, 0, half, n.for_kind, tir::make_seq({tir::rewrite(n.body, to_first, {}), last}));
      const ne::Expr several = ne::simplify(n.extent >= 2);
      return ne::can_prove(several) ? pairs : tir::make_if(several, pairs, s);
    }
  } pairs(product);
  return pairs.visit(body);
}

// Body `body` with the buffers whose rows are stored into `result` allocated around the body of
// the loop over the blocks (over `product`) rather than where the lowering put them, around the
// last pass: live through the block's every pass, so that the accumulator planner places no
// buffer of an earlier pass in their rows. A block's first writes then need not wait for the
// STOREs of the block before, which read those rows long after its last chain (a causal
// normalization stores chunks of unseen keys after its last seen one). The same statements.
inline tir::Stmt stored_at_block_level(const tir::Stmt& body, const ne::Var& product,
                                       const te::Buffer& result) {
  std::vector<te::Buffer> stored;
  for (const auto* call : vta::detail::calls_in(body))
    if (call->name == vta::intrin::store && call->buffers.size() == 2 &&
        call->buffers[1].same_as(result) && std::ranges::none_of(stored, [&](const te::Buffer& b) {
          return b.same_as(call->buffers[0]);
        }))
      stored.push_back(call->buffers[0]);
  struct Hoist : tir::StmtMutator<Hoist> {
    Hoist(const std::vector<te::Buffer>& s, ne::Var p) : stored(&s), product(std::move(p)) {}
    const std::vector<te::Buffer>* stored;
    ne::Var product;
    bool inside = false;
    std::vector<te::Buffer> found;
    tir::Stmt visit_allocate(const tir::AllocateNode& n, const tir::Stmt& s) {
      const bool ours = inside && std::ranges::any_of(*stored, [&](const te::Buffer& b) {
                          return b.same_as(n.buffer);
                        });
      if (!ours) return tir::StmtMutator<Hoist>::visit_allocate(n, s);
      found.push_back(n.buffer);
      return visit(n.body);
    }
    tir::Stmt visit_for(const tir::ForNode& n, const tir::Stmt& s) {
      if (n.var.id() != product.id() || inside) return tir::StmtMutator<Hoist>::visit_for(n, s);
      inside = true;
      tir::Stmt inner = visit(n.body);
      inside = false;
      return tir::make_for(n.var, n.min, n.extent, n.for_kind, tir::make_allocate(found, inner));
    }
  } hoist(stored, product);
  return stored.empty() ? body : hoist.visit(body);
}

// Body `body` with `first` run before it and `buffers` allocated around both: what every block
// reads, computed once before the blocks (skip_masked's resets once, constant_rows_once's rows).
inline tir::Stmt before_blocks(const tir::Stmt& body, const std::vector<te::Buffer>& buffers,
                               std::vector<tir::Stmt> first) {
  first.push_back(body);
  return tir::make_allocate(buffers, tir::make_seq(first));
}

// Body `body` (lowered and rewritten: skip_masked_work's passes but pair_blocks, which runs after
// it) with the rows each block computes from constants alone, the same in every block, computed
// once before the blocks instead (the exponent's z_offset and top, the division's bias: a reset
// and ALU immediates, up to four instructions a row where a constant does not fit an
// immediate's 16 bits). A row is one where the block's loop (over `product`) allocates
// a buffer around its statements whose every write is one of the statements of the body's top
// level that touch it first, in order: a reset of the whole buffer, then ALU kernels on it alone
// (one loop level at most, every field a constant) with immediates or with rows of the same
// kind computed before. Those statements move, in their order, to the function's start, and
// the buffer's allocation around the function: every block reads the values it computed itself
// before, and the accumulator holds the same rows, allocated once rather than once a block.
inline tir::Stmt constant_rows_once(const tir::Stmt& body, const ne::Var& product,
                                    std::int64_t tile) {
  struct Once : tir::StmtMutator<Once> {
    Once(ne::Var p, std::int64_t t) : product(std::move(p)), tile(t) {}
    ne::Var product;
    std::int64_t tile;                // an accumulator entry's elements
    std::vector<te::Buffer> buffers;  // allocated around the function, in order
    std::vector<tir::Stmt> hoisted;   // at its start, in order
    static bool among(const std::vector<te::Buffer>& bs, const te::BufferNode* b) {
      return std::ranges::any_of(bs, [&](const te::Buffer& x) { return x.get() == b; });
    }
    tir::Stmt visit_for(const tir::ForNode& n, const tir::Stmt& s) {
      if (n.var.id() != product.id()) return tir::StmtMutator<Once>::visit_for(n, s);
      return tir::make_for(n.var, n.min, n.extent, n.for_kind, block(n.body));
    }
    // A kernel's micro-op calls, if it is a kernel of one loop level at most whose fields are
    // constants.
    static std::optional<std::vector<const te::CallNode*>> constant_kernel(const tir::Stmt& s) {
      const auto* attr = s.as<tir::AttrNode>();
      if (attr == nullptr || attr->key != vta::intrin::uop_kernel) return std::nullopt;
      std::vector<const te::CallNode*> ops;
      int levels = 0;
      for (const auto* call : vta::detail::calls_in(s)) {
        if (!std::ranges::all_of(call->args, [](const te::Expr& a) {
              return vta::detail::constant_index(a).has_value();
            }))
          return std::nullopt;
        if (call->name == vta::intrin::uop_loop_begin) ++levels;
        if (call->name != vta::intrin::uop_loop_begin && call->name != vta::intrin::uop_loop_end)
          ops.push_back(call);
      }
      if (levels > 1 || ops.empty()) return std::nullopt;
      return ops;
    }
    tir::Stmt block(const tir::Stmt& s) {
      std::vector<te::Buffer> allocated;
      std::vector<tir::Stmt> leaves;
      const auto collect = [&](const auto& self, const tir::Stmt& x) -> void {
        if (const auto* a = x.as<tir::AllocateNode>()) {
          allocated.push_back(a->buffer);
          self(self, a->body);
        } else if (const auto* seq = x.as<tir::SeqNode>()) {
          for (const auto& y : seq->seq) self(self, y);
        } else {
          leaves.push_back(x);
        }
      };
      collect(collect, s);
      // the leaves that touch each buffer, and those that write it
      std::unordered_map<const te::BufferNode*, std::vector<std::size_t>> touching, writing;
      for (std::size_t i = 0; i < leaves.size(); ++i)
        for (const auto* call : vta::detail::calls_in(leaves[i]))
          for (std::size_t b = 0; b < call->buffers.size(); ++b) {
            const auto* node = call->buffers[b].get();
            auto& t = touching[node];
            if (t.empty() || t.back() != i) t.push_back(i);
            auto& w = writing[node];
            if (b == 0 && call->name != vta::intrin::store && (w.empty() || w.back() != i))
              w.push_back(i);
          }
      // the buffers whose writes are a chain of constants (reading only rows of the same kind
      // whose chains end before), and the leaf ending each
      std::unordered_map<const te::BufferNode*, std::size_t> constant;
      for (bool changed = true; changed;) {
        changed = false;
        for (const auto& buffer : allocated) {
          const auto* b = buffer.get();
          if (constant.contains(b)) continue;
          const auto& t = touching[b];
          const auto& w = writing[b];
          if (w.empty() || t.size() < w.size()) continue;
          bool chain = true;
          for (std::size_t k = 0; k < w.size() && chain; ++k) {
            // (the writes the first leaves that touch it)
            const auto ops = t[k] == w[k] ? constant_kernel(leaves[w[k]]) : std::nullopt;
            if (!ops) {
              chain = false;
              break;
            }
            for (const auto* op : *ops) {
              if (!op->buffers.front().same_as(buffer)) {
                chain = false;
              } else if (k == 0) {
                chain = chain && op->name == vta::intrin::gemm_reset && ops->size() == 1 &&
                        covers(leaves[w[k]], buffer);
              } else if (op->name != vta::intrin::alu || op->buffers.size() != 2) {
                chain = false;
              } else if (vta::detail::constant_index(op->args[1]) != 1) {
                // (from a constant row computed before)
                const auto found = constant.find(op->buffers[1].get());
                chain = chain && found != constant.end() && found->second < w[k];
              }
            }
          }
          if (!chain) continue;
          constant.emplace(b, w.back());
          changed = true;
        }
      }
      if (constant.empty()) return s;
      std::set<std::size_t> moved;
      for (const auto& [b, last] : constant)
        for (const std::size_t i : writing[b]) moved.insert(i);
      // (a loop met again, the arms of a dims condition: its rows already moved)
      const bool first =
          std::ranges::none_of(constant, [&](const auto& c) { return among(buffers, c.first); });
      for (const auto& buffer : allocated)
        if (constant.contains(buffer.get()) && first) buffers.push_back(buffer);
      if (first)
        for (const std::size_t i : moved) hoisted.push_back(leaves[i]);
      // the body without them
      struct Drop : tir::StmtMutator<Drop> {
        const std::unordered_map<const te::BufferNode*, std::size_t>* constant = nullptr;
        std::set<const tir::StmtNode*> leaves;
        tir::Stmt visit_allocate(const tir::AllocateNode& n, const tir::Stmt& st) {
          if (constant->contains(n.buffer.get())) return visit(n.body);
          return tir::StmtMutator<Drop>::visit_allocate(n, st);
        }
        tir::Stmt visit_attr(const tir::AttrNode& n, const tir::Stmt& st) {
          if (leaves.contains(st.get())) return tir::make_seq({});
          return tir::StmtMutator<Drop>::visit_attr(n, st);
        }
      } drop;
      drop.constant = &constant;
      for (const std::size_t i : moved) drop.leaves.insert(leaves[i].get());
      return drop.visit(s);
    }
    // Whether a reset kernel covers every entry of its buffer once: one entry, or a loop over
    // them from 0.
    bool covers(const tir::Stmt& kernel, const te::Buffer& b) const {
      const auto calls = vta::detail::calls_in(kernel);
      const auto size = b.shape().size() == 1 ? b.shape()[0].as_int() : std::nullopt;
      if (!size) return false;
      const auto at = [](const te::CallNode* c, std::size_t k) {
        return vta::detail::constant_index(c->args[k]).value_or(-1);
      };
      const te::CallNode* reset = calls.size() == 1   ? calls[0]
                                  : calls.size() == 3 ? calls[1]
                                                      : nullptr;
      if (reset == nullptr || at(reset, 0) != 0) return false;
      const std::int64_t rows = calls.size() == 1 ? 1 : at(calls[0], 0);
      if (calls.size() == 3 &&
          (at(calls[0], 1) != 1 || calls[0]->name != vta::intrin::uop_loop_begin))
        return false;
      return rows * tile == *size;
    }
  } once(product, tile);
  tir::Stmt out = once.visit(body);
  if (once.hoisted.empty()) return body;
  return before_blocks(out, once.buffers, once.hoisted);
}

// Whether the kernel adds masks from its constant: a causal softmax with lane groups, or in
// uniform tiles.
inline bool softmax_lane_masks(const IntegerSoftmaxShape& shape) {
  return softmax_causal(shape) && (shape.groups > 1 || softmax_uniform(shape));
}

// The keys of block p the masks apply to, [first, end): with lane groups, those only some of
// its groups see, from the one its first group's query sees last + 1 to softmax_visible; in
// uniform tiles the keys some query of some block does not see, [N - M + 1, N), the same for
// every block.
struct MaskWindow {
  ne::Expr first, end;
};
inline MaskWindow softmax_mask_window(const IntegerSoftmaxShape& shape, const ne::Var& p) {
  if (softmax_uniform(shape)) return {ne::simplify(shape.keys - shape.queries + 1), shape.keys};
  return {ne::simplify(shape.keys - shape.queries + softmax_first_query(shape, p) + 1),
          softmax_visible(shape, p)};
}

// The rows of the kernel's constant (IntegerSoftmaxKernel::constants): `neutral` rows that
// leave a key as it is, then `masks` rows, row neutral + d masking the lanes of the groups 0
// to min(d, G - 1); the masks of window key j of block p at row first(p) + j.
//   - lane groups: G - 1 and G - 1, first G - 1 (key j of the window: its first group's last
//     seen + 1 + j, which groups 0 to j do not see);
//   - uniform tiles: 2 (M - 1) and M - 1, first 2 (M - 1) - q0 (M the most queries, q0 = p G
//     block p's first query): key j of the window is N - M + 1 + j, d = j - q0 after the last
//     key its first group sees. Its first 2 (M - 1) rows are those of the keys where d < 0,
//     and M - 1 rows before every block's window rows (from first(p) - (M - 1) on) rows that
//     change nothing, which skip_masked loads with the window's in one LOAD of two rows.
struct MaskRows {
  std::int64_t neutral = 0, masks = 0;
};
inline MaskRows softmax_mask_rows(const IntegerSoftmaxShape& shape) {
  if (!softmax_lane_masks(shape)) return {};
  if (!softmax_uniform(shape)) return {shape.groups - 1, shape.groups - 1};
  const std::int64_t m = softmax_most_queries(shape) - 1;
  return {2 * m, m};
}
inline ne::Expr softmax_mask_first(const IntegerSoftmaxShape& shape, const ne::Var& p) {
  if (!softmax_uniform(shape)) return shape.groups - 1;
  return ne::simplify(softmax_mask_rows(shape).neutral - softmax_first_query(shape, p));
}

// Whether skip_masked_work loads the masks once a block (uniform tiles whose passes have chunk
// loops: the keys' maximum beyond a chunk), 2 (M - 1) accumulator rows beside its passes, rather
// than once in each pass of a chunk that holds keys of the window.
inline bool softmax_block_masks(const IntegerSoftmaxShape& shape, std::int64_t chunk) {
  return softmax_uniform(shape) && softmax_chunks(shape, chunk) > 1;
}

// The accumulator entries of a pass's mask rows beside its chunk (skip_masked's masked_rows):
// with lane groups the 2 (G - 1) rows a chunk loads and applies, where they fit a chunk and
// the passes loop over chunks; else, and in uniform tiles, a chunk (at most).
inline std::int64_t softmax_mask_entries(const IntegerSoftmaxShape& shape, std::int64_t chunk) {
  if (!softmax_lane_masks(shape)) return 0;
  if (softmax_uniform(shape) || softmax_chunks(shape, chunk) <= 1) return chunk;
  return std::min(2 * (shape.groups - 1), chunk);
}

// The chunks of `chunk` keys that hold a key block p computes.
inline ne::Expr softmax_seen(const IntegerSoftmaxShape& shape, const ne::Var& p,
                             std::int64_t chunk) {
  return ne::simplify(ne::ceildiv(softmax_visible(shape, p), chunk));
}

// The tiles of BLOCK_OUT lanes the last dim fills.
inline std::int64_t lane_tiles(const vta::Env& env, const IntegerSoftmaxShape& shape) {
  return ne::ceil_div(shape.lanes * shape.groups, env.block_out);
}

}  // namespace detail

namespace detail {

// What the kernel's constructor refuses: an epilogue other than immediate steps, BATCH > 1,
// more keys than 32-bit sums hold, a fixed point host::integer_exp_for does not give, a chunk
// that does not fit, a design whose shifts it cannot use (check_softmax_shifts), and a causal
// softmax with fewer keys than queries.
inline void check_softmax_kernel(const vta::Env& env, const IntegerSoftmaxShape& shape,
                                 std::int64_t chunk, const std::string& name,
                                 const Epilogue& epilogue) {
  if (auto why = check_softmax_epilogue(epilogue))
    raise<ValueError>("integer_softmax '{}': epilogue {}: {}", name, to_string(epilogue), *why);
  if (env.batch != 1)
    raise<ValueError>(
        "integer_softmax '{}': VTA's BATCH is {}; the kernel puts one key in each accumulator "
        "row (BATCH 1)",
        name, env.batch);
  if (const auto most = ne::bounds(shape.keys).max; most > runtime::kIntegerSoftmaxMaxExtent)
    raise<ShapeError>(
        "integer_softmax '{}': {} keys (at most {}); at most {} keep the sum of the exponentials "
        "in 32 bits",
        name, shape.keys, most, runtime::kIntegerSoftmaxMaxExtent);
  if (shape.fixed.multiplier < 32 || shape.fixed.multiplier > 127 || shape.fixed.frac_bits < 7 ||
      shape.fixed.frac_bits > 15)
    raise<ValueError>(
        "integer_softmax '{}': the exponent's fixed point has multiplier {} and {} fraction bits; "
        "host::integer_exp_for gives a multiplier in [32, 127] and 7 to 15 bits",
        name, shape.fixed.multiplier, shape.fixed.frac_bits);
  if (shape.groups < 1 || (shape.groups > 1 && shape.groups * shape.lanes > env.block_out))
    raise<ValueError>(
        "integer_softmax '{}': {} lane groups of {} lanes; the groups must be at least 1 and "
        "fill at most one tile of {} lanes",
        name, shape.groups, shape.lanes, env.block_out);
  if (auto why = check_chunk(env, shape, chunk))
    raise<ScheduleError>("integer_softmax '{}': {}", name, *why);
  if (auto why = graph::check_softmax_shifts(env, shape.part))
    raise<FeatureError>("integer_softmax '{}': {}", name, *why);
  if (shape.queries.defined() && !ne::can_prove(ne::simplify(shape.keys - shape.queries) >= 0))
    raise<ShapeError>(
        "integer_softmax '{}': {} keys and {} queries; a causal softmax needs at least as many "
        "keys as queries",
        name, shape.keys, shape.queries);
}

// Kernel `kernel` (one loop level) with its loop's extent set to `extent`.
inline tir::Stmt with_extent(const tir::Stmt& kernel, const ne::Expr& extent) {
  const auto* attr = kernel.as<tir::AttrNode>();
  const auto& seq = attr->body.as<tir::SeqNode>()->seq;
  const auto* begin = seq[0].as<tir::EvaluateNode>()->value.as<te::CallNode>();
  auto args = begin->args;
  args[0] = te::index_value(ne::simplify(extent));
  return tir::make_attr(
      attr->key, attr->node, attr->value,
      tir::make_seq({tir::make_evaluate(
                         te::call(begin->name, begin->dtype(), std::move(args), begin->buffers)),
                     seq[1], seq[2]}));
}

// An ALU kernel with its argument `arg` set to `value` (0 its operation, 2 its immediate).
inline tir::Stmt with_alu_arg(const tir::Stmt& kernel, std::size_t arg, std::int64_t value) {
  struct Arg : tir::StmtMutator<Arg> {
    std::size_t arg = 0;
    std::int64_t value = 0;
    tir::Stmt visit_evaluate(const tir::EvaluateNode& e, const tir::Stmt& st) {
      const auto* call = e.value.as<te::CallNode>();
      if (call == nullptr || call->name != vta::intrin::alu) return st;
      auto args = call->args;
      args[arg] = te::make_const(value, args[arg].dtype());
      return tir::make_evaluate(
          te::call(call->name, call->dtype(), std::move(args), call->buffers));
    }
  } set;
  set.arg = arg;
  set.value = value;
  return set.visit(kernel);
}
// An ALU kernel with its operation, immediate use and immediate set, and named for them
// (vta::detail::alu_kernel_name, as the lowering names a kernel).
inline tir::Stmt with_alu(const tir::Stmt& kernel, runtime::AluOp op, bool use_imm,
                          std::int64_t imm) {
  const auto* attr = kernel.as<tir::AttrNode>();
  const tir::Stmt named =
      tir::make_attr(attr->key, vta::detail::alu_kernel_name(op, use_imm), attr->value, attr->body);
  return with_alu_arg(
      with_alu_arg(with_alu_arg(named, 0, static_cast<std::int64_t>(op)), 1, use_imm ? 1 : 0), 2,
      imm);
}

// A masked key's t0 where the GEMM core forms t0 = -s * multiplier (scores_by_gemm): the
// largest ADD immediate, where -32768 (the masked score) times the multiplier is none. What
// follows t0 tells the two apart only where softmax_scores_by_gemm would not take it.
inline constexpr std::int64_t kMaskedT0 = 32767;

// Whether the GEMM core can take a kernel's rows of int8 input (scores_by_gemm, sums_by_gemm):
// not in uniform tiles (a decode step's: its stream, loads on two modules with tokens between
// them, took a replay 23% longer with t0 by the GEMM core, 12.4 -> 15.2 us at (1, 2,047), and
// 17.5 -> 20.5 us at (16, 2,032), past the firmware's 20, for 5% of its cycles); an input entry
// as large as an accumulator row's int8 (BATCH x BLOCK_IN int8, the ACC_8BIT rows the input
// loads as), so that its rows load into the input buffer at the same DRAM rows; a chunk that
// buffer and a GEMM loop hold.
inline bool softmax_gemm_takes(const vta::Env& env, const IntegerSoftmaxShape& shape,
                               std::int64_t chunk) {
  const auto& c = env.config;
  return !softmax_uniform(shape) && env.block_in == env.block_out &&
         env.inp_dtype == DType::int8() && env.wgt_dtype == DType::int8() &&
         chunk <= static_cast<std::int64_t>(c.inp_depth()) &&
         chunk <= runtime::field_limit(
                      c.layout().pos(runtime::Form::Gemm, runtime::Field::iter_out).width);
}
// Whether the kernel forms t0 by the GEMM core (scores_by_gemm): a part with an exponent where
// softmax_gemm_takes its scores; a multiplier from 2 to 127, an int8 weight (pass 1's MUL of
// its min by -1 then stands where its max's was, which a multiplier of 1 would not write); and
// every masked key's exponential still 0 with its t0 at kMaskedT0, or a lane mask of -32768
// negated and added to a score up to 127: t at least kMaskedT0 - 255 multiplier + shift x
// 2^frac_bits (a max of -128) gives z of 30 or more, past both exponentials' shifts.
inline bool softmax_scores_by_gemm(const vta::Env& env, const IntegerSoftmaxShape& shape,
                                   std::int64_t chunk) {
  const auto& c = env.config;
  if (shape.part == IntegerSoftmaxPart::Normalize || !softmax_gemm_takes(env, shape, chunk))
    return false;
  const auto fixed = fewest_fraction_bits(shape.fixed);
  if (fixed.multiplier < 2 || fixed.multiplier > 127 || fixed.frac_bits < 7) return false;
  const auto q = shape.part == IntegerSoftmaxPart::Exp ? runtime::kIntegerExp8Quadratic
                                                       : runtime::kIntegerExpQuadratic;
  const std::int64_t t =
      kMaskedT0 - 255 * fixed.multiplier + (std::int64_t{q.shift} << fixed.frac_bits);
  const auto fits = [&](runtime::AluOp op, std::int64_t v) {
    const auto [lo, hi] = vta::alu_imm_range(op, c);
    return v >= lo && v <= hi;
  };
  return ((t >> (fixed.frac_bits - 7)) >> 7) >= 30 && fits(runtime::AluOp::Add, kMaskedT0) &&
         fits(runtime::AluOp::Max, kMaskedT0) && fits(runtime::AluOp::Mul, -1);
}

// Whether the normalization sums its exponentials by the GEMM core (sums_by_gemm): where
// softmax_gemm_takes them and its sum has running rows (skip_masked's scores_in_kept: kept
// chunks, and a chunk's halving of a loop level, 4 keys or more), into which an ADD a chunk
// adds the keys it loads; elsewhere a chunk's keys are halved in place, then added as one row.
inline bool softmax_sums_by_gemm(const vta::Env& env, const IntegerSoftmaxShape& shape,
                                 std::int64_t chunk) {
  return shape.part == IntegerSoftmaxPart::Normalize && chunk >= 4 &&
         softmax_gemm_takes(env, shape, chunk) && kept_chunks(env, shape, chunk) > 0;
}
// Whether the GEMM core adds the kernel's constants to its keys' values (adds_by_gemm): where
// softmax_gemm_takes its rows, an accumulator entry one row (BATCH 1: the input row the
// constants are added against is one input entry).
inline bool softmax_adds_by_gemm(const vta::Env& env, const IntegerSoftmaxShape& shape,
                                 std::int64_t chunk) {
  return env.batch == 1 && softmax_gemm_takes(env, shape, chunk);
}
DLAVM_INLINE std::optional<std::vector<std::int64_t>> gemm_add_weights(std::int64_t c,
                                                                       std::int64_t lanes) {
  std::vector<std::int64_t> w(static_cast<std::size_t>(lanes), 0);
  const std::int64_t r = ((c % kAddUnit) + kAddUnit) % kAddUnit;
  std::int64_t q = (c - r) / kAddUnit;
  w.back() = r;
  for (std::size_t i = 0; i + 1 < w.size() && q != 0; ++i) {
    w[i] = std::clamp<std::int64_t>(q, -128, 127);
    q -= w[i];
  }
  if (q != 0) return std::nullopt;
  return w;
}
// The constant stage `t` adds to a value, where its body is `value + c` (c an integer).
inline std::optional<std::int64_t> added_constant(const te::Tensor& t) {
  const auto* add = t.op()->body.as<te::BinaryNode>();
  if (add == nullptr || add->kind() != te::ExprKind::Add) return std::nullopt;
  for (const auto* side : {&add->a, &add->b})
    if (const auto* c = side->as<te::IntImmNode>()) return c->value;
  return std::nullopt;
}
// `part`'s stages over a block of a symbolic number of keys (at most `keys`: the division's
// form) of one lane tile, as written once: the floor's, and the constants' they add.
inline std::vector<te::Tensor> part_stage_list(const vta::Env& env, IntegerSoftmaxPart part,
                                               runtime::IntegerExp fixed, std::int64_t keys);
// Whether stage `t` of part_stage_list computes a value a key (its rows the symbolic key
// count: not a block's rows, not the kernel's constant rows, not a reduction).
inline bool per_key_stage(const te::Tensor& t) {
  return t.op()->reduce_axis.empty() && !t.shape()[t.ndim() - 2].as_int();
}
// The constants the GEMM core adds (adds_by_gemm) in a kernel of `part`, each once, in the
// order of the stages that add them to a key's value: those a row of weights holds
// (gemm_add_weights), but 0 (the quadratic's c1, the exponential's and the probability's
// roundings).
inline std::vector<std::int64_t> softmax_gemm_adds(const vta::Env& env, IntegerSoftmaxPart part,
                                                   runtime::IntegerExp fixed) {
  std::vector<std::int64_t> adds;
  for (const auto& t : part_stage_list(env, part, fixed, 2))
    if (const auto c = added_constant(t); per_key_stage(t) && c && *c != 0 &&
                                          gemm_add_weights(*c, env.block_in) &&
                                          std::ranges::find(adds, *c) == adds.end())
      adds.push_back(*c);
  return adds;
}

// The lowered function's `body` with each ALU ADD of an immediate among `adds` (tile `first` + k of
// the weight buffer `wgt` adds adds[k] against the input row `row`) a GEMM of that row by that
// tile, over the same loops and destinations (the row and the tile at every step): 1 cycle a
// micro-op where the ALU's took 2, the same sums (both wrap at 32 bits).
inline tir::Stmt adds_by_gemm(const tir::Stmt& body, const te::Buffer& row, const te::Buffer& wgt,
                              std::int64_t first, const std::vector<std::int64_t>& adds) {
  // one ALU kernel's calls as the GEMM kernel's: its loops with no step of the row or the tile
  struct ToGemm : tir::StmtMutator<ToGemm> {
    te::Buffer row, wgt;
    std::int64_t tile = 0;
    tir::Stmt visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt& s) {
      const auto* call = n.value.as<te::CallNode>();
      if (call == nullptr) return s;
      const auto zero = te::make_const(0, DType::int32());
      if (call->name == vta::intrin::uop_loop_begin) {
        auto args = call->args;
        args[2] = zero;
        args[3] = zero;
        return tir::make_evaluate(te::call(call->name, call->dtype(), std::move(args)));
      }
      if (call->name != vta::intrin::alu) return s;
      return tir::make_evaluate(
          te::call(std::string(vta::intrin::gemm), DType::int32(),
                   {call->args[3], zero, te::make_const(tile, DType::int32())},
                   {call->buffers[0], row, wgt}));
    }
  };
  struct Rewrite : tir::StmtMutator<Rewrite> {
    ToGemm to_gemm;
    std::int64_t first = 0;
    const std::vector<std::int64_t>* adds = nullptr;
    tir::Stmt visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
      if (n.key != vta::intrin::uop_kernel) return tir::StmtMutator<Rewrite>::visit_attr(n, s);
      const auto* alu = vta::detail::first_call(s, vta::intrin::alu);
      if (alu == nullptr ||
          vta::detail::constant_index(alu->args[0]) !=
              static_cast<std::int64_t>(runtime::AluOp::Add) ||
          vta::detail::constant_index(alu->args[1]) != 1)
        return s;
      const auto value = vta::detail::constant_index(alu->args[2]);
      const auto at = value ? std::ranges::find(*adds, *value) : adds->end();
      if (at == adds->end()) return s;
      to_gemm.tile = first + (at - adds->begin());
      return tir::make_attr(n.key, std::string("gemm"), n.value, to_gemm.visit(n.body));
    }
  } rewrite;
  rewrite.to_gemm.row = row;
  rewrite.to_gemm.wgt = wgt;
  rewrite.first = first;
  rewrite.adds = &adds;
  return rewrite.visit(body);
}

// A micro-op kernel (`what`) of one loop level over `rows` rows: `call` at its first, the
// destination one row on each step, the source `src_step` rows, the weight the same.
inline tir::Stmt uop_kernel_over(std::string_view what, const te::Expr& rows, std::int64_t src_step,
                                 te::Expr call) {
  const auto i32 = [](std::int64_t v) { return te::make_const(v, DType::int32()); };
  return tir::make_attr(
      std::string(vta::intrin::uop_kernel), std::string(what), 1,
      tir::make_seq(
          {tir::make_evaluate(te::call(std::string(vta::intrin::uop_loop_begin), DType::int32(),
                                       {rows, i32(1), i32(src_step), i32(0)})),
           tir::make_evaluate(std::move(call)),
           tir::make_evaluate(te::call(std::string(vta::intrin::uop_loop_end), DType::int32(),
                                       std::vector<te::Expr>{}))}));
}

// The lowered function `f` with t0 = -s * multiplier formed by the GEMM core, where
// softmax_scores_by_gemm takes it: each LOAD of the scores (`scores`, ACC_8BIT into an
// accumulator buffer) becomes a LOAD of the same DRAM rows into the input buffer, on the load
// module, and a reset and a GEMM of those rows by the weight tile diag(-multiplier)
// (tile 0 of `wgt`, loaded before), on the compute module: 2 cycles a key where the ACC_8BIT load
// moved 16 bytes through the compute module's port (2 cycles) and the ALU multiplied each by
// -multiplier (2 more). So every buffer the scores load into holds t0 and the chain's first
// multiply of it goes; its fill of -32768 (a masked score) is one of kMaskedT0, and each load
// of the lane masks (`masks`, -32768 where a key is masked: the constant te::evaluate reads
// too) is negated by a MUL by -1, 32768 added to a masked key's t0. Pass 1 (from the
// allocation of the max, `max_name`, to its MUL by the multiplier) takes the min of t0 where
// it took the max of s: every MAX a MIN and the reverse, its fills of -32768 those of
// kMaskedT0 (a MIN by -32768 a MAX by it), and its MUL by the multiplier one by -1, which
// gives the same max_t = multiplier x max. ScheduleError where `f` is not what the lowering
// writes (a pass-1 immediate other than -32768, a load of the scores not as ACC_8BIT, no max,
// no load).
inline tir::PrimFunc scores_by_gemm(const tir::PrimFunc& f, const vta::Env& env,
                                    const te::Buffer& scores, const te::Buffer& masks,
                                    const te::Buffer& wgt, const std::string& max_name,
                                    std::int64_t multiplier, std::int64_t chunk) {
  struct Rewrite : tir::StmtMutator<Rewrite> {
    te::Buffer scores, masks, inp, wgt;
    std::string max_name;
    std::int64_t multiplier = 0;
    bool in_max = false;
    int blocks = 0, scaled = 0, loads = 0;
    std::vector<const te::BufferNode*> loaded;  // the accumulator buffers the scores load into

    static te::Expr i32(std::int64_t v) { return te::make_const(v, DType::int32()); }
    [[noreturn]] void unexpected(const std::string& what) const {
      raise<ScheduleError>(
          "integer softmax: the lowered function of scores '{}' is not as the lowering writes "
          "it: {}",
          scores.name(), what);
    }
    tir::Stmt visit_allocate(const tir::AllocateNode& n, const tir::Stmt& s) {
      if (n.buffer.name() != max_name) return tir::StmtMutator<Rewrite>::visit_allocate(n, s);
      if (in_max) unexpected(fmt::format("'{}' allocated before its MUL", max_name));
      in_max = true;
      ++blocks;
      return tir::StmtMutator<Rewrite>::visit_allocate(n, s);
    }
    tir::Stmt visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt& s) {
      const auto* call = n.value.as<te::CallNode>();
      if (call == nullptr || call->name != vta::intrin::load ||
          !(call->buffers[1].same_as(scores) || call->buffers[1].same_as(masks)))
        return s;
      const auto& a = call->args;
      const te::Buffer& acc = call->buffers[0];
      // (mem, sram, dram, y size, x size, x stride, y pads, x pads)
      std::vector<ne::Expr> field;
      for (const auto& e : a)
        if (const auto i = vta::detail::index_arg(e)) field.push_back(*i);
      const auto memory = vta::detail::constant_index(a[0]);
      const bool of_scores = call->buffers[1].same_as(scores);
      if (field.size() != 10 ||
          memory !=
              static_cast<std::int64_t>(of_scores ? runtime::MemId::Acc8 : runtime::MemId::Acc))
        unexpected(fmt::format("a load of '{}' into '{}' not as {}", call->buffers[1].name(),
                               acc.name(), of_scores ? "ACC_8BIT" : "ACC"));
      // the rows it writes, padded ones too (zeros: INP's pads as ACC_8BIT's)
      const te::Expr rows = te::index_value(
          ne::simplify((field[6] + field[3] + field[7]) * (field[8] + field[4] + field[9])));
      if (!of_scores) {
        // the masks, -32768 where a key is masked, added to t0: 32768
        return tir::make_seq(
            {s, uop_kernel_over(vta::detail::alu_kernel_name(runtime::AluOp::Mul, true), rows, 1,
                                te::call(std::string(vta::intrin::alu), DType::int32(),
                                         {i32(static_cast<std::int64_t>(runtime::AluOp::Mul)),
                                          i32(1), i32(-1), a[1], a[1]},
                                         {acc, acc}))});
      }
      ++loads;
      auto args = a;
      args[0] = te::make_const(static_cast<std::int64_t>(runtime::MemId::Inp), a[0].dtype());
      args[1] = te::make_const(0, a[1].dtype());
      const auto zero = te::make_const(0, DType::int32());
      return tir::make_seq(
          {tir::make_evaluate(te::call(call->name, call->dtype(), std::move(args), {inp, scores})),
           uop_kernel_over(
               "gemm_reset", rows, 0,
               te::call(std::string(vta::intrin::gemm_reset), DType::int32(), {a[1]}, {acc})),
           uop_kernel_over("gemm", rows, 1,
                           te::call(std::string(vta::intrin::gemm), DType::int32(),
                                    {a[1], zero, zero}, {acc, inp, wgt}))});
    }
    tir::Stmt visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
      if (n.key != vta::intrin::uop_kernel) return tir::StmtMutator<Rewrite>::visit_attr(n, s);
      const auto* alu = vta::detail::first_call(s, vta::intrin::alu);
      if (alu == nullptr) return s;
      using enum runtime::AluOp;
      const auto code = vta::detail::constant_index(alu->args[0]);
      if (!code)
        unexpected(
            fmt::format("an ALU call into '{}' of no constant operation", alu->buffers[0].name()));
      const auto op = static_cast<runtime::AluOp>(*code);
      const bool imm = vta::detail::constant_index(alu->args[1]) == 1;
      const auto value = vta::detail::constant_index(alu->args[2]);
      const te::Buffer& dst = alu->buffers[0];
      if (in_max) {
        if (op == Mul && imm && value == multiplier && dst.name() == max_name) {
          in_max = false;
          ++scaled;
          return detail::with_alu(s, Mul, true, -1);
        }
        if (op == Shr || (op == Add && !imm)) return s;  // the init's shift, the lane masks
        if (imm && value != -32768)
          unexpected(fmt::format("{} by {} into '{}' in the max's pass", runtime::alu_name(op),
                                 value.value_or(0), dst.name()));
        if (op == Add) return detail::with_alu(s, Add, true, kMaskedT0);
        if (op == Max || op == Min)
          return detail::with_alu(s, op == Max ? Min : Max, imm, imm ? kMaskedT0 : 0);
        unexpected(
            fmt::format("{} into '{}' in the max's pass", runtime::alu_name(op), dst.name()));
      }
      if (!imm || std::ranges::find(loaded, dst.get()) == loaded.end()) return s;
      if (op == Mul && value == -multiplier) return tir::make_seq({});
      if (op == Add && value == -32768) return detail::with_alu(s, Add, true, kMaskedT0);
      return s;
    }
  } rewrite;
  rewrite.scores = scores;
  rewrite.masks = masks;
  rewrite.inp = te::make_buffer(scores.name() + ".inp", env.inp_dtype,
                                {ne::Expr(chunk * env.inp_tile())}, env.inp_scope);
  rewrite.wgt = wgt;
  rewrite.max_name = max_name;
  rewrite.multiplier = multiplier;
  // (a chunk's fill comes before its load)
  for (const auto* call : vta::detail::calls_in(f.body))
    if (call->name == vta::intrin::load && call->buffers[1].same_as(scores) &&
        std::ranges::find(rewrite.loaded, call->buffers[0].get()) == rewrite.loaded.end())
      rewrite.loaded.push_back(call->buffers[0].get());
  tir::PrimFunc out = f;
  const tir::Stmt body = rewrite.visit(f.body);
  if (rewrite.blocks == 0 || rewrite.scaled != rewrite.blocks || rewrite.loads == 0)
    rewrite.unexpected(fmt::format("{} allocations of '{}', {} MULs of it by {}, {} loads",
                                   rewrite.blocks, max_name, rewrite.scaled, multiplier,
                                   rewrite.loads));
  out.body = tir::make_allocate(rewrite.inp, body);
  return out;
}

// The lowered normalization `f` with its sum formed by the GEMM core, where
// softmax_sums_by_gemm takes it: in pass 2 (the sum's chunk loop, over `chunk_var`) each LOAD
// of the exponentials (`exps`, ACC_8BIT into an accumulator buffer) gains a LOAD of the same
// DRAM rows into an input buffer of a chunk, on the load module, and each ADD of that
// accumulator buffer into the sum's running rows (2 cycles a key) becomes a GEMM of the input
// rows by the weight tile, the identity (tile 0 of `wgt`, loaded before): 1 cycle a key. In a chunk
// where the lane masks (`masks`) apply, the ADD stays: they multiply the accumulator's rows,
// not the input buffer's. The ACC_8BIT load stays where a call past the loop reads its buffer
// (the kept chunks, which pass 3 computes from) and where the masks apply; elsewhere it goes.
// ScheduleError where `f` is not what the lowering writes (a load of the exponentials not as
// ACC_8BIT, an ADD of them not over one loop level, none).
inline tir::PrimFunc sums_by_gemm(const tir::PrimFunc& f, const vta::Env& env,
                                  const te::Buffer& exps, const te::Buffer& masks,
                                  const te::Buffer& wgt, const ne::Var& chunk_var,
                                  std::int64_t chunk) {
  struct Rewrite : tir::StmtMutator<Rewrite> {
    explicit Rewrite(ne::Var v) : chunk_var(std::move(v)) {}
    te::Buffer exps, masks, inp, wgt;
    ne::Var chunk_var;
    bool in_loop = false;
    std::optional<ne::Expr> masked;  // where the sequence being visited applies the masks
    int sums = 0;
    // the accumulator buffers the exponentials load into, each with its last load's entry
    std::vector<std::pair<const te::BufferNode*, ne::Expr>> loaded;
    // the buffers calls outside the chunk loop touch (the kept chunks', which pass 3 reads)
    std::vector<const te::BufferNode*> outside;

    [[noreturn]] void unexpected(const std::string& what) const {
      raise<ScheduleError>(
          "integer softmax: the lowered normalization of '{}' is not as the lowering writes it: "
          "{}",
          exps.name(), what);
    }
    static bool loads_masks(const tir::Stmt& st, const te::Buffer& masks) {
      return masks.defined() && std::ranges::any_of(vta::detail::calls_in(st), [&](const auto* c) {
               return c->name == vta::intrin::load && c->buffers[1].same_as(masks);
             });
    }
    tir::Stmt visit_for(const tir::ForNode& n, const tir::Stmt& s) {
      if (!n.var.same_as(chunk_var)) return tir::StmtMutator<Rewrite>::visit_for(n, s);
      in_loop = true;
      auto out = tir::StmtMutator<Rewrite>::visit_for(n, s);
      in_loop = false;
      return out;
    }
    tir::Stmt visit_seq(const tir::SeqNode& n, const tir::Stmt& s) {
      const auto outer = masked;
      for (const auto& part : n.seq)
        if (const auto* branch = part.as<tir::IfThenElseNode>();
            branch != nullptr && loads_masks(branch->then_case, masks))
          masked = branch->cond;
      auto out = tir::StmtMutator<Rewrite>::visit_seq(n, s);
      masked = outer;
      return out;
    }
    tir::Stmt visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt& s) {
      const auto* call = n.value.as<te::CallNode>();
      if (!in_loop || call == nullptr || call->name != vta::intrin::load ||
          !call->buffers[1].same_as(exps))
        return s;
      const auto& a = call->args;
      const auto entry = vta::detail::index_arg(a[1]);
      if (vta::detail::constant_index(a[0]) != static_cast<std::int64_t>(runtime::MemId::Acc8) ||
          !entry)
        unexpected(fmt::format("a load into '{}' not as ACC_8BIT", call->buffers[0].name()));
      const auto* acc = call->buffers[0].get();
      const auto known =
          std::ranges::find(loaded, acc, &std::pair<const te::BufferNode*, ne::Expr>::first);
      if (known == loaded.end())
        loaded.emplace_back(acc, *entry);
      else
        known->second = *entry;
      auto args = a;
      args[0] = te::make_const(static_cast<std::int64_t>(runtime::MemId::Inp), a[0].dtype());
      args[1] = te::make_const(0, a[1].dtype());
      const tir::Stmt input =
          tir::make_evaluate(te::call(call->name, call->dtype(), std::move(args), {inp, exps}));
      // a chunk's buffer that only the sum reads: loaded where the masks apply alone (there
      // the ADD stays)
      if (std::ranges::find(outside, acc) == outside.end())
        return masked ? tir::make_seq({tir::make_if(*masked, s), input}) : input;
      return tir::make_seq({s, input});
    }
    tir::Stmt visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
      if (n.key != vta::intrin::uop_kernel) return tir::StmtMutator<Rewrite>::visit_attr(n, s);
      if (!in_loop) return s;
      const auto calls = vta::detail::calls_in(s);
      const auto alu = std::ranges::find(calls, vta::intrin::alu, &te::CallNode::name);
      if (alu == calls.end()) return s;
      const auto& a = (*alu)->args;
      const auto& src = (*alu)->buffers[1];
      const auto known =
          std::ranges::find(loaded, src.get(), &std::pair<const te::BufferNode*, ne::Expr>::first);
      if (vta::detail::constant_index(a[0]) != static_cast<std::int64_t>(runtime::AluOp::Add) ||
          vta::detail::constant_index(a[1]) != 0 || known == loaded.end() ||
          (*alu)->buffers[0].same_as(src))
        return s;
      // ADD rows[j] += loaded[e + j] for j below the loop's extent
      const auto begin = std::ranges::find(calls, vta::intrin::uop_loop_begin, &te::CallNode::name);
      const auto src_entry = vta::detail::index_arg(a[4]);
      if (calls.size() != 3 || begin == calls.end() || !src_entry ||
          vta::detail::constant_index((*begin)->args[1]) != 1 ||
          vta::detail::constant_index((*begin)->args[2]) != 1)
        unexpected(fmt::format("the sum's ADD of '{}' into '{}' not over one loop level",
                               src.name(), (*alu)->buffers[0].name()));
      ++sums;
      const auto zero = te::make_const(0, DType::int32());
      const tir::Stmt gemm = uop_kernel_over(
          "gemm", (*begin)->args[0], 1,
          te::call(std::string(vta::intrin::gemm), DType::int32(),
                   {a[3], te::index_value(ne::simplify(*src_entry - known->second)), zero},
                   {(*alu)->buffers[0], inp, wgt}));
      return masked ? tir::make_if(*masked, s, gemm) : gemm;
    }
  } rewrite(chunk_var);
  rewrite.exps = exps;
  rewrite.masks = masks;
  struct Loop : tir::StmtMutator<Loop> {
    explicit Loop(ne::Var v) : var(std::move(v)) {}
    ne::Var var;
    std::vector<const te::CallNode*> calls;  // the chunk loop's
    tir::Stmt visit_for(const tir::ForNode& n, const tir::Stmt& s) {
      if (!n.var.same_as(var)) return tir::StmtMutator<Loop>::visit_for(n, s);
      calls = vta::detail::calls_in(n.body);
      return s;
    }
  } loop(chunk_var);
  loop.visit(f.body);
  for (const auto* call : vta::detail::calls_in(f.body))
    if (std::ranges::find(loop.calls, call) == loop.calls.end())
      for (const auto& b : call->buffers) rewrite.outside.push_back(b.get());
  rewrite.inp = te::make_buffer(exps.name() + ".inp", env.inp_dtype,
                                {ne::Expr(chunk * env.inp_tile())}, env.inp_scope);
  rewrite.wgt = wgt;
  tir::PrimFunc out = f;
  const tir::Stmt body = rewrite.visit(f.body);
  if (rewrite.sums == 0)
    rewrite.unexpected(fmt::format("no ADD of the exponentials into the sum's rows"));
  out.body = tir::make_allocate(rewrite.inp, body);
  return out;
}

// The rows a buffer of `rows` running rows takes after narrow_running_rows: 2 kNarrowRows where
// `rows` is a power of two above that, else `rows` (left as it was).
inline std::int64_t narrowed_rows(std::int64_t rows) {
  return rows > 2 * kNarrowRows && std::has_single_bit(static_cast<std::uint64_t>(rows))
             ? 2 * kNarrowRows
             : rows;
}

// Body `body` with each buffer of running rows (named ...kRunningRows, `rows` accumulator rows
// of `tile` entries, a power of two above 2 kNarrowRows) narrowed to 2 kNarrowRows rows, the
// running rows the last kNarrowRows of them, the first a scratch. The chunk loop's kernels
// that max or add a chunk's E keys into rows 0 to E - 1 (one loop level) become kernels of
// two levels, 16 keys a running row, the outer level moving the source alone by 16 keys: a
// whole chunk's (E = rows) in one such kernel, where it is not the loop's last; the last in
// one over the first floor((E - 1) / 16) sixteens, where there are any, and one over the 1 to
// 16 keys left, in two iterations of which the first puts the chunk's first keys into the
// scratch rows and the second, moved there by its loop's factors, the keys left into the
// running rows. So a field that depends on the keys a block sees is a loop's extent or factor,
// which a decode step's stream rewrites in place (vta::Program::reinstantiate), never a
// micro-op's, and from one decode step to the next the kernels that run change only where the
// last chunk's E passes 16 (where a chunk starts, the loop's extent changes). The start of the
// rows before the loop (a reset, or an ALU immediate in place) covers the 16 rows alone, and
// the halving after the loop keeps its levels of fewer than 16 rows. The keys a row combines,
// and their order, are another's, so the bits are the same where the combination is
// associative and commutative on int32 (VTA's MIN, MAX and wrapping ADD). Per block, rows - 16
// fewer rows to start and as many fewer micro-ops of halving, log2(rows / 16) fewer
// instructions, at most 16 micro-ops and an instruction more in its last chunk. A buffer whose
// kernels are not all those is left as it was.
inline tir::Stmt narrow_running_rows(const tir::Stmt& body, std::int64_t tile) {
  struct Rows : tir::StmtMutator<Rows> {
    te::Buffer buffer;
    std::int64_t rows = 0;
    std::vector<const tir::ForNode*> loops;  // the loops around the statement being visited
    bool failed = false;
    int accumulated = 0, started = 0;
    std::vector<std::int64_t> halves;  // the halving levels kept and dropped, by their half

    static te::Expr i32(const ne::Expr& v) { return te::index_value(ne::simplify(v)); }
    static tir::Stmt eval(te::Expr e) { return tir::make_evaluate(std::move(e)); }
    static tir::Stmt with_args(const te::CallNode& call, std::vector<te::Expr> args) {
      return eval(te::call(call.name, call.dtype(), std::move(args), call.buffers));
    }
    static tir::Stmt loop_end() {
      return eval(te::call(std::string(vta::intrin::uop_loop_end), DType::int32(),
                           std::vector<te::Expr>{}));
    }
    bool is_rows(const te::Buffer& b) const { return b.same_as(buffer); }
    bool writes(const te::CallNode& call) const {
      return (call.name == vta::intrin::alu || call.name == vta::intrin::gemm ||
              call.name == vta::intrin::gemm_reset) &&
             !call.buffers.empty() && is_rows(call.buffers[0]);
    }
    // A halving level (`begin` its loop, null where it has none): an ALU op of the rows'
    // entries k and k + h into k, for k below h, h of it (0: not one).
    std::int64_t half_of(const te::CallNode* begin, const te::CallNode& op) const {
      if (op.name != vta::intrin::alu || op.buffers.size() != 2 || !is_rows(op.buffers[1]) ||
          vta::detail::constant_index(op.args[1]) != 0 ||
          vta::detail::constant_index(op.args[3]) != 0)
        return 0;
      const auto h = vta::detail::constant_index(op.args[4]).value_or(0);
      if (h <= 0) return 0;
      if (begin == nullptr) return h == 1 ? 1 : 0;
      return vta::detail::constant_index(begin->args[0]) == h &&
                     vta::detail::constant_index(begin->args[1]) == 1 &&
                     vta::detail::constant_index(begin->args[2]) == 1
                 ? h
                 : 0;
    }
    tir::Stmt visit_for(const tir::ForNode& n, const tir::Stmt& s) {
      loops.push_back(&n);
      auto out = tir::StmtMutator<Rows>::visit_for(n, s);
      loops.pop_back();
      return out;
    }
    tir::Stmt visit_seq(const tir::SeqNode& n, const tir::Stmt&) {
      std::vector<tir::Stmt> kept;
      for (const auto& st : n.seq) {
        const auto* attr = st.as<tir::AttrNode>();
        if (loops.empty() && attr != nullptr && attr->key == vta::intrin::uop_kernel) {
          const auto calls = vta::detail::calls_in(st);
          const auto* begin = calls.size() == 3 ? calls[0] : nullptr;
          const auto* op = calls.size() == 3 ? calls[1] : calls.size() == 1 ? calls[0] : nullptr;
          if (op != nullptr && writes(*op)) {
            if (const std::int64_t h = half_of(begin, *op); h > 0) {
              halves.push_back(h);
              // (past the scratch rows: entries 16 + k and 16 + k + h)
              if (h < kNarrowRows)
                kept.push_back(with_alu_arg(with_alu_arg(st, 3, kNarrowRows), 4, kNarrowRows + h));
              continue;
            }
          }
        }
        kept.push_back(visit(st));
      }
      return tir::make_seq(std::move(kept));
    }
    tir::Stmt visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt& s) {
      // (kernels are visited whole, in visit_attr: a call met here is a transfer)
      const auto* call = n.value.as<te::CallNode>();
      if (call != nullptr &&
          std::ranges::any_of(call->buffers, [&](const auto& b) { return is_rows(b); }))
        failed = true;
      return s;
    }
    tir::Stmt visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
      if (n.key != vta::intrin::uop_kernel) return tir::StmtMutator<Rows>::visit_attr(n, s);
      const auto calls = vta::detail::calls_in(s);
      if (!std::ranges::any_of(calls, [&](const te::CallNode* c) {
            return std::ranges::any_of(c->buffers, [&](const auto& b) { return is_rows(b); });
          }))
        return s;
      const te::CallNode* begin = calls.size() == 3 ? calls[0] : nullptr;
      const te::CallNode* op = calls.size() == 3   ? calls[1]
                               : calls.size() == 1 ? calls[0]
                                                   : nullptr;
      const auto fail = [&] {
        failed = true;
        return s;
      };
      if (op == nullptr || (begin != nullptr && begin->name != vta::intrin::uop_loop_begin))
        return fail();
      if (!writes(*op)) {
        // the total's read, of row 0 after the halving, into the block's row
        if (begin != nullptr || op->name != vta::intrin::alu || op->buffers.size() != 2 ||
            !is_rows(op->buffers[1]) || vta::detail::constant_index(op->args[4]) != 0)
          return fail();
        return with_alu_arg(s, 4, kNarrowRows);
      }
      const bool alu = op->name == vta::intrin::alu, gemm = op->name == vta::intrin::gemm;
      const std::size_t dst_at = alu ? 3 : 0;
      if (begin == nullptr || vta::detail::constant_index(op->args[dst_at]) != 0 ||
          vta::detail::constant_index(begin->args[1]) != 1)
        return fail();
      const bool in_place = op->buffers.size() == 2 && is_rows(op->buffers[1]);
      if (loops.empty()) {
        // the start: a reset, or an immediate in place, over every row
        const bool reset = op->name == vta::intrin::gemm_reset;
        if (vta::detail::constant_index(begin->args[0]) != rows ||
            !(reset || (alu && in_place && vta::detail::constant_index(op->args[1]) == 1 &&
                        vta::detail::constant_index(op->args[4]) == 0)))
          return fail();
        ++started;
        const tir::Stmt narrowed = with_extent(s, ne::Expr(kNarrowRows));
        if (!reset) return with_alu_arg(with_alu_arg(narrowed, 3, kNarrowRows), 4, kNarrowRows);
        // (a reset's one argument, its destination)
        auto args = op->args;
        args[0] = i32(ne::Expr(kNarrowRows));
        const auto& seq = narrowed.as<tir::AttrNode>()->body.as<tir::SeqNode>()->seq;
        return tir::make_attr(n.key, n.node, n.value,
                              tir::make_seq({seq[0], with_args(*op, std::move(args)), seq[2]}));
      }
      // a chunk's keys into the rows: one loop level over them, from another buffer
      const auto extent = vta::detail::index_arg(begin->args[0]);
      const auto src_step = vta::detail::constant_index(begin->args[2]);
      const auto wgt_step = vta::detail::constant_index(begin->args[3]);
      if (in_place || !(alu || gemm) || !extent || !src_step || !wgt_step) return fail();
      ++accumulated;
      const auto loop_begin = [&](const ne::Expr& e, const ne::Expr& dst, const ne::Expr& src,
                                  const ne::Expr& wgt) {
        return with_args(*begin, {i32(e), i32(dst), i32(src), i32(wgt)});
      };
      // the first `groups` x 16 keys, 16 a running row
      auto grouped_args = op->args;
      grouped_args[dst_at] = i32(ne::Expr(kNarrowRows));
      const auto grouped = [&](const ne::Expr& groups) {
        return tir::make_attr(
            n.key, n.node, n.value,
            tir::make_seq({loop_begin(groups, 0, *src_step * kNarrowRows, *wgt_step * kNarrowRows),
                           loop_begin(kNarrowRows, 1, *src_step, *wgt_step),
                           with_args(*op, grouped_args), loop_end(), loop_end()}));
      };
      // A whole chunk (E = rows) in sixteens alone. The last, in floor((E - 1) / 16) sixteens
      // and the 1 to 16 keys left, not 0 to 15: the kernel of the keys left runs in every
      // last chunk, the grouped one where E > 16. The keys left in two iterations: the first
      // puts the chunk's first keys into the scratch rows, the second the keys left into the
      // running rows.
      const ne::Expr groups = ne::simplify(ne::floordiv(*extent - 1, kNarrowRows));
      const ne::Expr left = ne::simplify(*extent - groups * kNarrowRows);
      std::vector<tir::Stmt> last;
      if (!ne::can_prove(ne::simplify(groups < 1)))
        last.push_back(ne::can_prove(ne::simplify(groups >= 1))
                           ? grouped(groups)
                           : tir::make_if(ne::simplify(groups >= 1), grouped(groups)));
      last.push_back(
          tir::make_attr(n.key, n.node, n.value,
                         tir::make_seq({loop_begin(2, kNarrowRows, groups * kNarrowRows * *src_step,
                                                   groups * kNarrowRows * *wgt_step),
                                        loop_begin(left, 1, *src_step, *wgt_step),
                                        with_args(*op, op->args), loop_end(), loop_end()})));
      // (whole where E = rows, which the kernel of sixteens alone needs, in a chunk before the
      // chunk loop's last, where E = rows: the condition then holds in the same iterations of
      // one decode step as of the next, until the loop's extent changes, where E = rows in
      // the last chunk alone would not)
      const tir::ForNode& chunks = *loops.back();
      const ne::Expr whole =
          ne::simplify(chunks.var + 1 < chunks.min + chunks.extent && *extent >= rows);
      if (ne::can_prove(whole)) return grouped(ne::Expr(rows / kNarrowRows));
      return tir::make_if(whole, grouped(ne::Expr(rows / kNarrowRows)), tir::make_seq(last));
    }
  };
  struct Allocations : tir::StmtMutator<Allocations> {
    std::int64_t tile = 1;
    // (one narrowed buffer for each buffer: the arms of a condition on the dims share their
    // allocations' buffers, which the memory plan then places once)
    std::unordered_map<const te::BufferNode*, te::Buffer> fewer;
    tir::Stmt visit_allocate(const tir::AllocateNode& n, const tir::Stmt& s) {
      const tir::Stmt inner = visit(n.body);
      const auto size = n.buffer.size().as_int();
      const std::int64_t rows = size ? *size / tile : 0;
      if (!n.buffer.name().ends_with(kRunningRows) || !size || *size % tile != 0 ||
          narrowed_rows(rows) == rows)
        return inner.same_as(n.body) ? s : tir::make_allocate(n.buffer, inner);
      Rows running;
      running.buffer = n.buffer;
      running.rows = rows;
      const tir::Stmt narrowed = running.visit(inner);
      // every level of the halving, once: rows / 2, ..., 2, 1
      std::vector<std::int64_t> levels;
      for (std::int64_t h = rows / 2; h >= 1; h /= 2) levels.push_back(h);
      if (running.failed || running.accumulated == 0 || running.started != 1 ||
          running.halves != levels)
        return tir::make_allocate(n.buffer, inner);
      auto [at, added] = fewer.try_emplace(n.buffer.get());
      if (added)
        at->second = te::make_buffer(n.buffer.name(), n.buffer.dtype(),
                                     {ne::Expr(2 * kNarrowRows * tile)}, n.buffer.scope());
      return tir::make_allocate(at->second,
                                tir::rewrite(narrowed, {}, {{n.buffer.get(), at->second}}));
    }
  } allocations;
  allocations.tile = tile;
  return allocations.visit(body);
}

}  // namespace detail

DLAVM_INLINE IntegerSoftmaxKernel::IntegerSoftmaxKernel(const vta::Env& env,
                                                        const IntegerSoftmaxShape& shape,
                                                        std::int64_t chunk, const std::string& name,
                                                        const Epilogue& epilogue)
    : env_(env), shape_(shape), epilogue_(epilogue), chunk_(chunk) {
  detail::check_softmax_kernel(env, shape, chunk, name, epilogue);
  using detail::SoftmaxStageWriter;
  const ne::Expr& products = shape.products;
  const ne::Expr& keys = shape.keys;
  const ne::Expr tiles = detail::lane_tiles(env, shape);
  const ne::Expr chunks = ne::simplify(ne::ceildiv(keys, chunk));
  const ne::Expr lanes = env.block_out;
  data_ = te::placeholder({products, keys, tiles, env.batch, env.block_out}, env.inp_dtype,
                          name + "_s");
  if (detail::softmax_lane_masks(shape)) {
    const auto rows = detail::softmax_mask_rows(shape);
    masks_ = te::placeholder({rows.neutral + rows.masks, env.batch, env.block_out}, env.acc_dtype,
                             name + "_masks");
  }
  const auto visible = [&](const ne::Var& p) { return detail::softmax_visible(shape, p); };
  const bool normalize = shape.part == IntegerSoftmaxPart::Normalize;
  // the scores of key `key` of block (p, t) as int32, a masked key -32768 (the padded copy); the
  // exponentials a normalization loads, a masked key 0
  const auto score = [&](const ne::Var& p, const ne::Expr& key, const ne::Var& t,
                         const ne::Var& l) {
    return te::select(key < visible(p), te::cast(env.acc_dtype, data_.read({p, key, t, 0, l})),
                      te::make_const(normalize ? 0 : -32768, env.acc_dtype));
  };
  // a pass's load of one chunk: [products, tiles, chunks, chunk, lanes]
  const auto load = [&](const std::string& what) {
    return te::compute_dynamic(
        {products, tiles, chunks, chunk, lanes},
        [&](std::span<const ne::Var> i) { return score(i[0], i[2] * chunk + i[3], i[1], i[4]); },
        fmt::format("{}.{}", name, what));
  };
  // with masks, the mask row of key `key` of block p: the constant's row for a key of the
  // block's window (detail::softmax_mask_window: with lane groups a key only some of its groups
  // see, in uniform tiles one some query of some block does not see), for the others what
  // leaves a key as it is: 0 to add, 1 to multiply by (a padded copy of the constant's rows from
  // detail::softmax_mask_first on; the rows before, which leave a key as it is, for skip_masked)
  const auto mask = [&](const ne::Var& p, const ne::Expr& key, const ne::Var& l) {
    const auto window = detail::softmax_mask_window(shape, p);
    return te::select(
        key >= window.first && key < window.end,
        masks_.read({key - window.first + detail::softmax_mask_first(shape, p), 0, l}),
        te::make_const(normalize ? 1 : 0, env.acc_dtype));
  };
  // a pass's scores with the masks applied, where there are masks: the chunk loaded, the
  // masks' rows loaded beside it (recorded in mask_loads_, a copy), and their sum (the
  // exponentials a normalization loads: their product)
  const auto masked = [&](SoftmaxStageWriter& w, std::vector<te::Tensor>& stages,
                          const te::Tensor& loaded, const std::string& what,
                          const std::function<te::Expr(std::span<const ne::Var>)>& rows) {
    stages.push_back(loaded);
    if (!masks_.defined()) return w.wrap(loaded);
    const std::vector<ne::Expr> dims(loaded.shape().begin(), loaded.shape().end());
    const auto m = te::compute_dynamic(dims, rows, fmt::format("{}.{}", name, what));
    stages.push_back(m);
    mask_loads_.push_back(m);
    const auto lw = w.wrap(loaded), mw = w.wrap(m);
    return w.block("masked", [&](const ne::Var& k, const ne::Var& l) {
      return normalize ? lw(k, l) * mw(k, l) : lw(k, l) + mw(k, l);
    });
  };

  const auto chunk_rows = [&](std::span<const ne::Var> i) {
    return mask(i[0], i[2] * chunk + i[3], i[4]);
  };
  SoftmaxStageWriter rows(name, rows_);
  rows.blocks({products, tiles, chunks}, 1, lanes);
  // the chunks a block's query sees: a causal softmax's later ones are wholly masked (every
  // key -32768, whose exponential is 0: no part of the max or the sum; a normalization's 0),
  // and passes 1 and 2 skip them (in uniform tiles, all chunks: every block the same loops)
  // (at most the chunks: the reductions over them compute the chunks' stages at their chunk,
  // which bound inference then knows is one of those stages' chunks)
  const auto seen = [&](std::span<const ne::Var> at) {
    return ne::simplify(ne::min(detail::softmax_seen(shape, at[0], chunk), chunks));
  };

  // pass 1: the max of each chunk, then of the block
  std::optional<detail::BlockTensor> m;
  std::optional<detail::ExponentRows> exponent;  // what the exponentials read, once a block
  if (!normalize) {
    SoftmaxStageWriter max_pass(name + ".max", max_chunk_);
    max_pass.blocks({products, tiles, chunks}, chunk, lanes);
    const auto s1 = masked(max_pass, max_chunk_, load("max.s"), "max.mask", chunk_rows);
    m = rows.reduce_blocks("max", max_pass.reduce("chunk", s1, true).tensor, seen, true);
    max_total_ = m->tensor;
    rows.blocks({products, tiles}, 1, lanes);
    exponent = detail::exponent_rows(rows, *m, shape.fixed,
                                     shape.part == IntegerSoftmaxPart::Exp
                                         ? runtime::kIntegerExp8Quadratic
                                         : runtime::kIntegerExpQuadratic);
    rows.blocks({products, tiles, chunks}, 1, lanes);
  }

  // pass 2: the sum of each chunk's exponentials (those loaded by a normalization), then of the
  // block's; its reciprocal
  std::optional<detail::BlockTensor> reciprocal;
  std::optional<std::pair<detail::BlockTensor, detail::BlockTensor>> halves;
  if (shape.part != IntegerSoftmaxPart::Exp) {
    SoftmaxStageWriter sum_pass(name + ".sum", sum_chunk_);
    sum_pass.blocks({products, tiles, chunks}, chunk, lanes);
    const auto s2 = masked(sum_pass, sum_chunk_, load("sum.s"), "sum.mask", chunk_rows);
    const auto e2 =
        normalize ? s2 : detail::exponential_stages(sum_pass, s2, exponent->in(sum_pass));
    auto total = rows.reduce_blocks("sum", sum_pass.reduce("chunk", e2, false).tensor, seen, false);
    sum_total_ = total.tensor;
    rows.blocks({products, tiles}, 1, lanes);
    if (normalize) {
      const auto sum = total;
      total = rows.row("sum_floor", [&](const ne::Var& l) {
        return te::max(sum(0, l), SoftmaxStageWriter::c(127));
      });
    }
    reciprocal = detail::softmax_packed_division(shape)
                     ? detail::packed_reciprocal_stages(rows, total)
                     : detail::reciprocal_stages(rows, total, normalize ? 11 : 23);
    if (!normalize) halves = detail::split_reciprocal(rows, *reciprocal);
  }

  // pass 3: the probabilities (or the exponentials) of each chunk, keys flat ([products, tiles,
  // keys, lanes]) so that the stored result reads them by key
  SoftmaxStageWriter out_pass(name + ".y", out_chunk_);
  out_pass.blocks({products, tiles}, keys, lanes);
  const auto s3 = masked(
      out_pass, out_chunk_,
      te::compute_dynamic(
          {products, tiles, keys, lanes},
          [&](std::span<const ne::Var> i) { return score(i[0], i[2], i[1], i[3]); }, name + ".y.s"),
      "y.mask", [&](std::span<const ne::Var> i) { return mask(i[0], i[2], i[3]); });
  detail::BlockTensor y = s3;
  if (shape.part == IntegerSoftmaxPart::Exp)
    y = detail::exponential8_stages(out_pass, s3, exponent->in(out_pass));
  else if (normalize)
    y = detail::normalized_stages(out_pass, s3, out_pass.wrap(reciprocal->tensor));
  else
    y = detail::probability_stages(
        out_pass, detail::exponential_stages(out_pass, s3, exponent->in(out_pass)),
        {out_pass.wrap(halves->first.tensor), out_pass.wrap(halves->second.tensor)});
  // the epilogue's immediate steps, each an ALU pass over the chunk
  for (std::size_t i = 0; i < epilogue.steps.size(); ++i) {
    const auto prev = y;
    y = out_pass.block(fmt::format("step{}", i + 1), [&](const ne::Var& k, const ne::Var& l) {
      return apply_immediate(prev(k, l), epilogue.steps[i]);
    });
  }
  res_ = te::compute_dynamic(
      {products, keys, tiles, env.batch, env.block_out},
      [&](std::span<const ne::Var> i) {
        return te::cast(env.out_dtype, y.tensor.read({i[0], i[2], i[1], i[4]}));
      },
      name + "_res");

  // the stages the GEMM core computes, and its weight tiles (with an input row where it adds
  // constants)
  scores_by_gemm_ = detail::softmax_scores_by_gemm(env, shape, chunk);
  sums_by_gemm_ = detail::softmax_sums_by_gemm(env, shape, chunk);
  if (detail::softmax_adds_by_gemm(env, shape, chunk))
    gemm_adds_ = detail::softmax_gemm_adds(env, shape.part, shape.fixed);
  const std::int64_t tiles_w =
      (scores_by_gemm_ || sums_by_gemm_ ? 1 : 0) + static_cast<std::int64_t>(gemm_adds_.size());
  if (tiles_w > 0)
    weights_ = te::placeholder(
        {ne::Expr(tiles_w * env.block_out + (gemm_adds_.empty() ? 0 : 1)), env.block_in},
        env.wgt_dtype, name + "_w");
}

DLAVM_INLINE te::Schedule IntegerSoftmaxKernel::schedule() const {
  auto s = te::create_schedule(res_);
  const auto axes = s[res_].node()->root;  // product, key, tile, batch, lane
  auto [c, k] = s[res_].split(axes[1], chunk_);
  s[res_].reorder({axes[0], axes[2], c, k, axes[3], axes[4]});
  const te::IterVar block = axes[2];
  // a pass's load and its masks' rows are copies, the other stages ALU work
  const auto copied = [&](const te::Tensor& t, const std::vector<te::Tensor>& stages) {
    return t == stages.front() ||
           std::ranges::any_of(mask_loads_, [&](const te::Tensor& m) { return m == t; });
  };
  // every stage in the accumulator at `at` of `consumer`, a copy (the first of a pass's chunk
  // stages, its load) or on the ALU from loop `axis` inward
  const auto place = [&](const te::Tensor& t, const te::Tensor& consumer, const te::IterVar& at,
                         bool copy, std::size_t axis = 0) {
    s[t].set_scope(env_.acc_scope);
    s[t].compute_at(s[consumer], at);
    s[t].pragma(s[t].axis(axis), copy ? env_.dma_copy : env_.alu);
  };
  // passes 1 and 2: the block's max (sum) a running reduction over the chunks the block sees,
  // its row updated once a chunk by the chunk's (its halving's last level), the chunk's stages
  // computed inside the reduction's loop. So no accumulator row is kept per chunk, and every
  // stage of a chunk, the update too, is at the same entries in each iteration (where a
  // chunk's own row of the block's rows named the chunk): iterations that differ only in the
  // load's DRAM offset, what a replay's loop memo copies.
  for (const auto& [total, stages] :
       {std::pair{max_total_, &max_chunk_}, {sum_total_, &sum_chunk_}}) {
    if (!total.defined()) continue;
    s[total].set_scope(env_.acc_scope);
    s[total].compute_at(s[res_], block);
    // product, tile, row, lane; the chunk its reduction axis, moved outside the row
    const te::IterVar chunk = s[total].reduce_axis(0);
    s[total].reorder({chunk, s[total].axis(2), s[total].axis(3)});
    s[total].pragma(s[total].axis(2), env_.alu);
    for (const auto& t : *stages) place(t, total, chunk, copied(t, *stages));
  }
  for (const auto& t : rows_) {
    if (t == max_total_ || t == sum_total_) continue;
    if (t.ndim() > 2) {
      place(t, res_, block, false);
      continue;
    }
    // (rows of no block, at the root: computed once, before the blocks, in buffers no block's
    // stage is stored in)
    s[t].set_scope(env_.acc_scope);
    s[t].pragma(s[t].axis(0), env_.alu);
  }
  for (const auto& t : out_chunk_) place(t, res_, c, copied(t, out_chunk_));
  s[res_].pragma(k, env_.dma_copy);
  return s;
}

DLAVM_INLINE std::function<tir::PrimFunc(const tir::PrimFunc&)>
IntegerSoftmaxKernel::skip_masked_work(te::Schedule& s) const {
  // the chunk loops: passes 1 and 2 their totals' reduction axes, pass 3 the result's (the last)
  std::vector<ne::Var> chunks;
  for (const auto& total : {max_total_, sum_total_})
    if (total.defined()) chunks.push_back(s[total].reduce_axis(0).var());
  const auto& leaf = s[res_].leaf_iter_vars();  // product, tile, chunk, key, batch, lane
  chunks.push_back(leaf[2].var());
  return [kernel = *this, product = leaf[0].var(), chunks](const tir::PrimFunc& f) {
    // (last, the running rows narrowed: the GEMM core's sums are formed from their one loop
    // level; a causal normalization's stored buffers allocated around the block's passes;
    // then the constant rows moved before the blocks, from the kernels as they end, and
    // the blocks paired, after the rewrites that read what a block's index allows: sums_by_gemm
    // kept ACC_8BIT loads it could not prove were not needed in the second block of a pair, 384
    // more instructions in the gallery's normalization)
    const auto narrowed = [&](tir::PrimFunc g) {
      g.body = detail::narrow_running_rows(g.body, kernel.env_.acc_tile());
      if (detail::softmax_skips(kernel.shape_)) {
        if (kernel.shape_.part == IntegerSoftmaxPart::Normalize)
          g.body = detail::stored_at_block_level(g.body, product, g.flat_params.back());
        g.body = detail::constant_rows_once(g.body, product, kernel.env_.acc_tile());
        g.body = detail::pair_blocks(g.body, product);
      }
      return g;
    };
    tir::PrimFunc out = kernel.skip_masked(f, product, chunks);
    if (!kernel.weights_.defined()) return narrowed(out);
    // (the parameters in args()'s order, the scores first, the weights before the result:
    // copies, as the rewrites below replace `out`)
    const auto params = out.flat_params;
    const te::Buffer weights = params.end()[-2];
    const auto& env = kernel.env_;
    const std::int64_t tiles = (kernel.scores_by_gemm_ || kernel.sums_by_gemm_ ? 1 : 0) +
                               static_cast<std::int64_t>(kernel.gemm_adds_.size());
    const te::Buffer wgt = te::make_buffer(weights.name() + ".tiles", env.wgt_dtype,
                                           {ne::Expr(tiles * env.wgt_tile())}, env.wgt_scope);
    const te::Buffer masks = kernel.masks_.defined() ? params[1] : te::Buffer();
    if (kernel.sums_by_gemm_)
      out =
          detail::sums_by_gemm(out, env, params.front(), masks, wgt, chunks.front(), kernel.chunk_);
    if (kernel.scores_by_gemm_)
      out = detail::scores_by_gemm(out, env, params.front(), masks, wgt, kernel.max_total_.name(),
                                   fewest_fraction_bits(kernel.shape_.fixed).multiplier,
                                   kernel.chunk_);
    // the tiles loaded once, before the blocks (and the input row the constants are added
    // against, after them in DRAM)
    const auto load = [&](runtime::MemId memory, const te::Buffer& to, std::int64_t dram,
                          std::int64_t size) {
      std::vector<te::Expr> args;
      for (const std::int64_t v :
           {static_cast<std::int64_t>(memory), std::int64_t{0}, dram, std::int64_t{1}, size, size,
            std::int64_t{0}, std::int64_t{0}, std::int64_t{0}, std::int64_t{0}})
        args.push_back(te::make_const(v, DType::int32()));
      return tir::make_evaluate(
          te::call(std::string(vta::intrin::load), DType::int32(), std::move(args), {to, weights}));
    };
    const tir::Stmt tiles_load = load(runtime::MemId::Wgt, wgt, 0, tiles);
    if (kernel.gemm_adds_.empty()) {
      out.body = tir::make_allocate(wgt, tir::make_seq({tiles_load, out.body}));
      return narrowed(out);
    }
    const te::Buffer row = te::make_buffer(weights.name() + ".row", env.inp_dtype,
                                           {ne::Expr(env.inp_tile())}, env.inp_scope);
    const std::int64_t first = tiles - static_cast<std::int64_t>(kernel.gemm_adds_.size());
    // (the row's DRAM entry: the tiles' bytes in input entries)
    const tir::Stmt row_load =
        load(runtime::MemId::Inp, row, tiles * env.wgt_tile() / env.inp_tile(), 1);
    out.body = tir::make_allocate(
        wgt, tir::make_allocate(row, tir::make_seq({tiles_load, row_load,
                                                    detail::adds_by_gemm(out.body, row, wgt, first,
                                                                         kernel.gemm_adds_)})));
    return narrowed(out);
  };
}

namespace detail {

// The epilogue of 0 in the ALU's 32-bit arithmetic (the steps fusion writes: adds, right shifts
// by 0 to 31, bounds), if an ADD immediate of `config`.
inline std::optional<std::int64_t> epilogue_of_zero(const Epilogue& epilogue,
                                                    const vta::Config& config) {
  std::int64_t v = 0;
  for (const auto& step : epilogue.steps) {
    using K = EpilogueStep::Kind;
    if (step.kind == K::Add)
      v = static_cast<std::int32_t>(static_cast<std::uint32_t>(v) +
                                    static_cast<std::uint32_t>(step.imm));
    else if (step.kind == K::Shr && step.imm >= 0 && step.imm <= 31)
      v >>= step.imm;
    else if (step.kind == K::Max || step.kind == K::Min)
      v = step.kind == K::Max ? std::max(v, step.imm) : std::min(v, step.imm);
    else
      return std::nullopt;
  }
  const auto [lo, hi] = vta::alu_imm_range(runtime::AluOp::Add, config);
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

// A chunk loop's body as the lowering writes it: allocations around the load's fill (a reset
// and an ADD of -32768 over the chunk's rows; a normalization's fill of 0, a reset alone; none
// where every chunk holds keys alone), the load, and the rest (pass 3: ending in the store).
struct ChunkBody {
  std::vector<tir::Buffer> allocated;
  std::vector<tir::Stmt> parts;
  std::size_t fill = 2;  // the fill's parts, before the load
  const te::CallNode* load = nullptr;
  const te::CallNode* store = nullptr;  // pass 3's, or null

  static std::optional<ChunkBody> of(const tir::Stmt& body) {
    ChunkBody b;
    tir::Stmt inner = body;
    while (const auto* a = inner.as<tir::AllocateNode>()) {
      b.allocated.push_back(a->buffer);
      inner = a->body;
    }
    const auto* seq = inner.as<tir::SeqNode>();
    if (seq == nullptr || seq->seq.size() < 3) return std::nullopt;
    b.parts = seq->seq;
    const auto* reset = vta::detail::first_call(b.parts[0], vta::intrin::gemm_reset);
    const auto* add =
        reset != nullptr ? vta::detail::first_call(b.parts[1], vta::intrin::alu) : nullptr;
    b.fill = reset == nullptr ? 0 : add == nullptr ? 1 : 2;
    b.load = vta::detail::first_call(b.parts[b.fill], vta::intrin::load);
    if (b.load == nullptr || (reset != nullptr && !reset->buffers[0].same_as(b.load->buffers[0])))
      return std::nullopt;
    if (add != nullptr && (add->args.size() != 5 ||
                           vta::detail::constant_index(add->args[0]) !=
                               static_cast<std::int64_t>(runtime::AluOp::Add) ||
                           vta::detail::constant_index(add->args[1]) != 1 ||
                           vta::detail::constant_index(add->args[2]) != -32768 ||
                           !add->buffers[0].same_as(b.load->buffers[0])))
      return std::nullopt;
    if (b.parts.back().as<tir::EvaluateNode>() != nullptr)
      b.store = vta::detail::first_call(b.parts.back(), vta::intrin::store);
    return b;
  }
};

}  // namespace detail

DLAVM_INLINE tir::PrimFunc IntegerSoftmaxKernel::skip_masked(
    const tir::PrimFunc& f, const ne::Var& product, const std::vector<ne::Var>& chunks) const {
  // the chunks the block's query sees (all of them where the softmax is not causal or runs in
  // uniform tiles)
  const ne::Expr seen = detail::softmax_seen(shape_, product, chunk_);
  struct ChunkLoops : tir::StmtMutator<ChunkLoops> {
    std::vector<ne::Var> chunks;
    ne::Expr seen;
    std::optional<std::int64_t> constant;  // pass 3's masked chunks' value, if causal
    // each pass's value of a key its block does not see, after its chain (trim_chain): the
    // sum's 0, pass 3's epilogue of 0 (nullopt: the chain is not trimmed)
    std::vector<std::optional<std::int64_t>> unseen_value;
    ne::Expr keys, keys_seen;  // N, and the keys the block's queries see (softmax_visible)
    bool alu_fill = false;     // a stored fill ends in an ALU op (Variant::store_reads_out_sram)
    bool max_first = false;    // the first chunk loop is the max's
    bool normalize = false;    // the kernel is a normalization (IntegerSoftmaxPart::Normalize)
    bool plain = false;        // the kernel has no epilogue
    // masks (detail::softmax_lane_masks): the block's window of keys they apply to, the
    // constant's row of its first key's (detail::softmax_mask_first), and whether in uniform
    // tiles (then `most`: M - 1, the constant's rows of masks)
    bool lane_masks = false, uniform = false;
    std::int64_t groups = 1, most = 0;
    detail::MaskWindow window;
    ne::Expr mask_first;
    // uniform tiles with chunk loops (detail::softmax_block_masks): the window's masks loaded
    // once a block, before its passes, into `block_masks` (placed: visit_seq), from the DRAM
    // buffer of the lowering's copies of the masks, read with their memory type
    te::Buffer block_masks, masks_dram;
    te::Expr masks_mem;
    bool block_placed = false;
    std::int64_t chunk = 1;
    std::int64_t tile = 1;  // an accumulator row's elements
    int rewritten = 0, guarded = 0;
    // the chunks of mask rows masked_rows shrank to the rows it reads
    std::unordered_map<const te::BufferNode*, te::Buffer> shrunk;
    // Resets once before the blocks rather than once a block (`reset_once`: the exponentials
    // alone, whose footprint leaves the room, pass_footprint), of the buffers whose every
    // chunk's chain leaves in each row a value the next chain reads as it would the reset's 0
    // (z_by_max, z_down_by_multiply: bounds that hold for any block's chain);
    // the buffers allocated around the blocks (skip_masked), so that their rows survive from
    // one block to the next.
    bool reset_once = false;
    std::vector<te::Buffer> once_buffers;
    std::vector<tir::Stmt> once_resets;
    // The reset of b, statement `reset` of a chunk's parts, whose rows keep across blocks what
    // the chunks' chains need: before the chunk loop, once a block (appended to `hoisted`), or
    // where reset_once, once before the blocks.
    void hoist(const tir::Stmt& reset, const te::Buffer& b, std::vector<tir::Stmt>& hoisted) {
      const tir::Stmt before = detail::with_extent(reset, block_rows());
      if (!reset_once) {
        hoisted.push_back(before);
      } else if (!among(once_buffers, b)) {  // (a loop met again: the arms of a dims condition)
        once_buffers.push_back(b);
        once_resets.push_back(before);
      }
    }
    // The body's buffers, with the mask rows' as masked_rows left them (those reset once before
    // the blocks allocated around them instead).
    std::vector<te::Buffer> allocated_in(const detail::ChunkBody& body) const {
      std::vector<te::Buffer> out;
      for (const auto& b : body.allocated) {
        if (among(once_buffers, b)) continue;
        const auto found = shrunk.find(b.get());
        out.push_back(found == shrunk.end() ? b : found->second);
      }
      return out;
    }
    // Those allocated around `s`.
    tir::Stmt allocated_around(const detail::ChunkBody& body, tir::Stmt s) const {
      return tir::make_allocate(allocated_in(body), std::move(s));
    }
    // A chunk body's parts after its load (`parts` from `first` on) that copy the mask rows and
    // apply them (their buffers' names end in ".mask"), only where the chunk (`c`) holds a key
    // of the block's window: elsewhere the rows leave every key as it is. A window across a
    // chunk's edge is applied in pieces, each chunk's keys of it. Returns the parts.
    std::vector<tir::Stmt> guard_masks(const std::vector<tir::Stmt>& parts, std::size_t first,
                                       const ne::Expr& c) {
      if (!lane_masks) return parts;
      const auto at = [&](std::size_t i) { return parts.begin() + static_cast<std::ptrdiff_t>(i); };
      const auto masking = [](const tir::Stmt& st) {
        return std::ranges::any_of(vta::detail::calls_in(st), [](const te::CallNode* call) {
          return std::ranges::any_of(
              call->buffers, [](const te::Buffer& b) { return b.name().ends_with(".mask"); });
        });
      };
      std::size_t end = first;
      while (end < parts.size() && masking(parts[end])) ++end;
      if (end == first) return parts;
      const ne::Expr start = ne::simplify(c * chunk);
      const ne::Expr lo = ne::simplify(ne::max(window.first, start));
      const ne::Expr hi = ne::simplify(ne::min(window.end, start + chunk));
      const std::vector<tir::Stmt> masking_parts(at(first), at(end));
      // (the mask rows' buffer read nowhere else in the body: masked_rows may shrink it)
      bool alone = true;
      for (std::size_t i = 0; i < parts.size(); ++i)
        if (i < first || i >= end) alone = alone && !masking(parts[i]);
      // (each clamped to what it is in the chunks before or after the one the branch takes, so
      // that their iterations read the same values: a loop memo's keys, which a value that
      // moved with the chunk would differ in every iteration, so that none is copied; a uniform
      // window ends at the last key, and its first key's offset is 0 in the chunks before it)
      const ne::Expr key = uniform ? lo - window.first : ne::min(lo - window.first, groups - 1);
      const auto rows =
          masked_rows(masking_parts, ne::min(lo - start, chunk), ne::max(hi - lo, 0), key, alone);
      std::vector<tir::Stmt> out(parts.begin(), at(first));
      out.push_back(
          tir::make_if(ne::simplify(lo < hi), rows ? *rows : tir::make_seq(masking_parts)));
      out.insert(out.end(), at(end), parts.end());
      ++guarded;
      return out;
    }
    // The masking parts as the rows they change: the lowering fills a chunk of mask rows with
    // what leaves a key as it is, loads the masks of the window's keys into it, and applies the
    // chunk, a micro-op for each key. But those keys are `count`, rows `row` on of the chunk, the
    // window's keys `key` on. One ALU instruction of two levels applies them, the first level's
    // two iterations at rows 0 (with rows of the constant that change nothing) and `row` (with
    // the masks), micro-ops that read no dim; the masks it reads:
    //   - with lane groups (at most G - 1 keys) the constant, G - 1 rows that leave a key as it
    //     is and the G - 1 masks, loaded whole, its masks from row G - 1 + key on;
    //   - in uniform tiles with chunk loops, `block_masks`, which the block loads once
    //     (block_load), its masks from row M - 1 + key on;
    //   - in uniform tiles with no chunk loop (each pass's one chunk), one LOAD of two rows of
    //     `count` entries, M - 1 apart in DRAM: the keys' masks, at DRAM row mask_first + key,
    //     and `count` rows that change nothing before them (detail::softmax_mask_rows).
    // With lane groups, where the parts alone read the chunk of mask rows (`alone`), its buffer
    // is shrunk to the 2 (G - 1) rows these read (`shrunk`; allocated_around): a chunk's
    // entries fewer beside each pass's buffers, which the whole softmax's kept chunks take
    // (detail::softmax_mask_entries). (Not in uniform tiles, a decode step's, whose replay
    // copies chunk iterations that the kept chunks' count would change.)
    // Null where the parts are not that, or the chunk holds the constant's rows or two rows of
    // `count` (at most M - 1) not.
    std::optional<tir::Stmt> masked_rows(const std::vector<tir::Stmt>& parts, const ne::Expr& row,
                                         const ne::Expr& count, const ne::Expr& key, bool alone) {
      const te::CallNode* load = nullptr;
      const te::CallNode* apply = nullptr;
      const tir::AttrNode* kernel = nullptr;
      for (const auto& part : parts)
        for (const auto* call : vta::detail::calls_in(part)) {
          if (call->name == vta::intrin::load) load = call;
          if (call->name == vta::intrin::alu && call->buffers.size() == 2 &&
              !call->buffers[0].name().ends_with(".mask") &&
              call->buffers[1].name().ends_with(".mask")) {
            apply = call;
            kernel = part.as<tir::AttrNode>();
          }
        }
      const bool block = block_masks.defined();
      const std::int64_t masks = uniform ? most : groups - 1;  // the most keys of a window
      if (load == nullptr || apply == nullptr || kernel == nullptr ||
          (!block && 2 * masks > chunk) || !load->buffers[0].same_as(apply->buffers[1]))
        return std::nullopt;
      const auto i32 = [](const ne::Expr& e) { return te::index_value(ne::simplify(e)); };
      const auto intrinsic = [](std::string_view name, std::vector<te::Expr> args) {
        return tir::make_evaluate(te::call(std::string(name), DType::int32(), std::move(args)));
      };
      // the masks' first row where they are read (in the chunk of mask rows, or block_masks)
      const ne::Expr window_keys = window.end - window.first;
      const ne::Expr src = !uniform ? key + (groups - 1) : block ? window_keys + key : count;
      auto apply_args = apply->args;
      apply_args[3] = i32(0);
      apply_args[4] = i32(0);
      masks_dram = load->buffers[1];
      masks_mem = load->args[0];
      // the masks applied from `masks`: one kernel of two loop levels
      const auto applied = [&](const te::Buffer& masks_read) {
        auto apply_buffers = apply->buffers;
        apply_buffers[1] = masks_read;
        const std::vector<tir::Stmt> levels{
            intrinsic(vta::intrin::uop_loop_begin, {i32(2), i32(row), i32(src), i32(0)}),
            intrinsic(vta::intrin::uop_loop_begin, {i32(count), i32(1), i32(1), i32(0)}),
            tir::make_evaluate(te::call(apply->name, apply->dtype(), apply_args, apply_buffers)),
            intrinsic(vta::intrin::uop_loop_end, {}), intrinsic(vta::intrin::uop_loop_end, {})};
        return tir::make_attr(kernel->key, kernel->node, 1, tir::make_seq(levels));
      };
      const te::Buffer& chunk_rows = load->buffers[0];
      if (block) return applied(block_masks);
      auto load_buffers = load->buffers;
      const std::int64_t elements = ne::bounds(chunk_rows.size()).max;
      const std::int64_t needed = 2 * masks * tile;
      if (alone && !uniform && needed < elements) {
        load_buffers[0] = te::make_buffer(chunk_rows.name(), chunk_rows.dtype(), {ne::Expr(needed)},
                                          chunk_rows.scope());
        shrunk.emplace(chunk_rows.get(), load_buffers[0]);
      }
      // the LOAD's DRAM row, rows and entries a row (its DRAM stride the constant's rows with
      // lane groups, M - 1 in uniform tiles)
      const ne::Expr dram = uniform ? mask_first + key - most : ne::Expr(0);
      const ne::Expr y = uniform ? 2 : 1, x = uniform ? count : ne::Expr(2 * masks);
      const ne::Expr stride = uniform ? most : 2 * masks;
      std::vector<te::Expr> load_args{load->args[0], i32(0), i32(dram),
                                      i32(y),        i32(x), i32(stride)};
      for (int k = 0; k < 4; ++k) load_args.push_back(i32(0));
      return tir::make_seq({tir::make_evaluate(te::call(load->name, load->dtype(),
                                                        std::move(load_args), load_buffers)),
                            applied(load_buffers[0])});
    }
    // The block's LOAD of block_masks (uniform tiles): two rows of the window's M - 1 keys, M - 1
    // apart in DRAM, rows that change nothing then the masks of the window's keys, from DRAM row
    // mask_first - (M - 1) (affine in the block, which no other value of the block reads); none
    // where the window is empty (M = 1).
    tir::Stmt block_load() const {
      const auto i32 = [](const ne::Expr& e) { return te::index_value(ne::simplify(e)); };
      const ne::Expr window_keys = ne::simplify(window.end - window.first);
      std::vector<te::Expr> args{masks_mem, i32(0),           i32(mask_first - most),
                                 i32(2),    i32(window_keys), i32(most)};
      for (int k = 0; k < 4; ++k) args.push_back(i32(0));
      const tir::Stmt load =
          tir::make_evaluate(te::call(std::string(vta::intrin::load), DType::int32(),
                                      std::move(args), {block_masks, masks_dram}));
      const ne::Expr any = ne::simplify(window_keys >= 1);
      return ne::can_prove(any) ? load : tir::make_if(any, load);
    }
    // Whether `buffers` hold `b`.
    static bool among(const std::vector<te::Buffer>& buffers, const te::Buffer& b) {
      return std::ranges::any_of(buffers, [&](const te::Buffer& a) { return a.same_as(b); });
    }
    // A kernel of the chain below: its loop's call and its operation's, or an operation alone.
    struct Link {
      const te::CallNode* loop = nullptr;
      const te::CallNode* op = nullptr;
    };
    // The chain of per-key kernels in a chunk body's `parts` (the fill still first), from the
    // first part after the load and the masks: each kernel of one loop level over the chunk's
    // rows as the lowering writes them (the chunk, or the keys left where they are symbolic),
    // or of one micro-op and no loop (a row the chain reads, such as a constant's). Its parts
    // [first, end), and the buffers of the chunk's rows: the load's, then those the chain writes.
    struct Chain {
      std::size_t first = 0, end = 0;
      std::vector<Link> links;
      std::vector<te::Buffer> buffers;
    };
    Chain chain_of(const detail::ChunkBody& body, const std::vector<tir::Stmt>& parts,
                   const ne::Expr& c) const {
      const ne::Expr chunk_rows = ne::simplify(ne::min(ne::Expr(chunk), keys - c * chunk));
      const auto whole_chunk = [&](const te::Expr& extent) {
        const auto e = vta::detail::index_arg(extent);
        return e && (e->as_int() == chunk || ne::can_prove(ne::simplify(*e - chunk_rows) == 0));
      };
      const auto link = [&](const tir::Stmt& st) -> std::optional<Link> {
        const auto* attr = st.as<tir::AttrNode>();
        if (attr == nullptr) return std::nullopt;
        const auto calls = vta::detail::calls_in(attr->body);
        const auto operation = [](const te::CallNode* call) {
          return call->name == vta::intrin::alu || call->name == vta::intrin::gemm_reset;
        };
        if (calls.size() == 1 && operation(calls[0])) return Link{nullptr, calls[0]};
        const auto* seq = attr->body.as<tir::SeqNode>();
        if (seq == nullptr || seq->seq.size() != 3 || calls.size() != 3 ||
            calls[0]->name != vta::intrin::uop_loop_begin || !operation(calls[1]) ||
            calls[1]->buffers.empty() || !whole_chunk(calls[0]->args[0]))
          return std::nullopt;
        return Link{calls[0], calls[1]};
      };
      Chain ch;
      std::size_t i = body.fill + 1;
      while (i < parts.size() && parts[i].as<tir::IfThenElseNode>() != nullptr) ++i;  // masks
      ch.first = i;
      ch.buffers.push_back(body.load->buffers[0]);
      for (; i < parts.size(); ++i) {
        const auto l = link(parts[i]);
        if (!l) break;
        ch.links.push_back(*l);
        if (l->loop != nullptr) ch.buffers.push_back(l->op->buffers[0]);
      }
      ch.end = i;
      return ch;
    }
    // The chunk's chain of per-key kernels (each an ALU pass or a reset over the chunk's rows,
    // from the load and the masks on) trimmed to the keys the block sees, min(chunk, keys_seen -
    // c * chunk) rows: a prefill's last seen chunk holds half a chunk of unseen keys on average,
    // each the exponential's dozens of ALU cycles. After the chain only the buffer it ends in
    // is read (stored, or a sum's halving); that buffer's unseen rows get `value` from a fill
    // (a reset, and an ADD where the value is not 0 or a stored fill must end in an ALU op) in
    // the last seen chunk, before the buffer's first write: where that is a reset of the whole
    // chunk, the reset stays whole and is the fill. The load's own fill of -32768 is then read by
    // no one, and dropped. `parts`: the body's parts, the fill still first. Nullopt where they
    // are not that.
    std::optional<std::vector<tir::Stmt>> trim_chain(const detail::ChunkBody& body,
                                                     const std::vector<tir::Stmt>& parts,
                                                     const ne::Expr& c, std::int64_t value,
                                                     bool stored) const {
      const Chain ch = chain_of(body, parts, c);
      const std::vector<Link>& chain = ch.links;
      const std::size_t first = ch.first, i = ch.end;
      const std::vector<te::Buffer>& chunk_buffers = ch.buffers;
      if (chunk_buffers.size() == 1) return std::nullopt;
      const te::Buffer last = chunk_buffers.back();  // the buffer the chain ends in
      // the rows touch no chunk buffer (their rows past the keys stay as they were), and after
      // the chain no chunk buffer but `last` is read
      for (const Link& l : chain)
        if (l.loop == nullptr && std::ranges::any_of(l.op->buffers, [&](const te::Buffer& b) {
              return among(chunk_buffers, b);
            }))
          return std::nullopt;
      for (std::size_t j = i; j < parts.size(); ++j)
        for (const auto* call : vta::detail::calls_in(parts[j]))
          for (const auto& b : call->buffers)
            if (among(body.allocated, b) && !b.same_as(last)) return std::nullopt;
      const auto filled_with = fill_with(body, last, value, stored);
      if (!filled_with) return std::nullopt;
      const std::vector<tir::Stmt>& fill = *filled_with;
      const ne::Expr last_seen = c + 1 >= seen;
      std::vector<tir::Stmt> out;
      const bool fill_first = body.load->buffers[0].same_as(last);
      if (fill_first) out.push_back(tir::make_if(last_seen, tir::make_seq(fill)));
      out.insert(out.end(), parts.begin() + static_cast<std::ptrdiff_t>(body.fill),
                 parts.begin() + static_cast<std::ptrdiff_t>(first));
      // the chain trimmed in the last chunk the block sees alone: elsewhere its rows are the
      // chunk's, and the lowering's extents (the chunk, or a block's min(keys - c * chunk,
      // chunk)) are what a replay evaluates fastest
      const te::Expr rows = te::index_value(  // (keys_seen <= keys: the chunk's rows or fewer)
          ne::simplify(ne::min(ne::Expr(chunk), keys_seen - c * chunk)));
      std::vector<tir::Stmt> trimmed;
      bool filled = fill_first;
      for (std::size_t j = first; j < i; ++j) {
        const Link& l = chain[j - first];
        if (l.loop == nullptr) {
          trimmed.push_back(parts[j]);
          continue;
        }
        if (!filled && l.op->buffers[0].same_as(last)) {
          filled = true;
          if (l.op->name == vta::intrin::gemm_reset && fill.size() == 1) {
            trimmed.push_back(parts[j]);  // the whole reset is the fill
            continue;
          }
          trimmed.insert(trimmed.end(), fill.begin(), fill.end());
        }
        const auto* attr = parts[j].as<tir::AttrNode>();
        const auto& seq = attr->body.as<tir::SeqNode>()->seq;
        auto args = l.loop->args;
        args[0] = rows;
        trimmed.push_back(tir::make_attr(
            attr->key, attr->node, attr->value,
            tir::make_seq({tir::make_evaluate(te::call(l.loop->name, l.loop->dtype(),
                                                       std::move(args), l.loop->buffers)),
                           seq[1], seq[2]})));
      }
      out.push_back(tir::make_if(last_seen, tir::make_seq(trimmed),
                                 tir::make_seq({parts.begin() + static_cast<std::ptrdiff_t>(first),
                                                parts.begin() + static_cast<std::ptrdiff_t>(i)})));
      out.insert(out.end(), parts.begin() + static_cast<std::ptrdiff_t>(i), parts.end());
      return out;
    }
    // Kept exponentials (the whole softmax): pass 2 copies the exponentials of each of a
    // block's first `kept_count` chunks to `kept` (rows c * chunk on) before its sum's halving
    // adds them up in place, and pass 3 computes and stores those chunks' probabilities there,
    // in place of its load, masks and exponential, which would compute the same bits again.
    std::int64_t kept_count = 0;
    bool all_kept = false;     // every chunk of every block: no branch
    std::size_t sum_pass = 0;  // the sum's index in `chunks`
    te::Buffer kept;
    std::vector<std::array<std::int64_t, 4>> exponential;  // pass 2's chain: each link's form
    bool kept_read = false, kept_allocated = false;
    std::optional<tir::Stmt> kept_spans;  // pass 3's loop over the kept chunks' spans
    // the reset of the kept rows the block's pass 2 writes, before its chunk loop (keep), and
    // whether it was put there (visit_seq)
    std::optional<tir::Stmt> kept_reset;
    bool hoist_reset = true, kept_reset_placed = false;
    // a prefill's scores kept (scores_in_kept): the first pass loaded its kept chunks into
    // `kept`, with 0 in the last seen chunk's other rows where pass 2's chain is trimmed to the
    // keys seen (`scores_trimmed`), and the whole softmax's pass 2 (chain_from_scores) or the
    // halves' pass 3 (pass3_from_kept) computes from them where its load is the first
    // pass's (`scores_load`, whose chunk is chunks[0], and its DRAM buffer `scores_dram`)
    bool scores_kept = false, scores_trimmed = false;
    // the first pass of a half left the kept rows of the last chunk a block sees unfilled past
    // its keys, which pass 3's chain then must not read (pass3_from_kept), where `may_unfill`
    bool kept_unfilled = false, may_unfill = true;
    std::vector<te::Expr> scores_load;
    te::Buffer scores_dram;
    std::int64_t max_loop = 0;  // a GEMM loop's most iterations (its iter_out field)
    // the most rows one ALU loop level and one STORE cover (their iter_out and x_size fields)
    std::int64_t max_rows = 0;
    // The rows of `kept` the block's passes write: its first min(kept, seen) chunks, keys alone
    // where a chunk's kernels run over the keys it holds (`to_keys`), else whole chunks.
    ne::Expr kept_rows(bool to_keys) const {
      const ne::Expr whole = ne::min(ne::Expr(kept_count), seen) * chunk;
      return ne::simplify(to_keys ? ne::min(whole, keys) : whole);
    }
    // Chunk c's first row in `kept`, read only where c < kept_count: past the kept chunks the
    // last one's, so that those iterations read the same value (a loop memo's key, as above).
    ne::Expr kept_row(const ne::Expr& c) const {
      return ne::simplify((all_kept ? c : ne::min(c, kept_count - 1)) * chunk);
    }
    // A link's form: its operation, opcode, whether immediate, the immediate (-1: not constant).
    static std::array<std::int64_t, 4> form(const Link& l) {
      const auto arg = [&](std::size_t k) {
        return k < l.op->args.size() ? vta::detail::constant_index(l.op->args[k]).value_or(-1) : -1;
      };
      const bool alu = l.op->name == vta::intrin::alu;
      return {alu ? 1 : 0, alu ? arg(0) : -1, alu ? arg(1) : -1, alu ? arg(2) : -1};
    }
    // Whether looped link `l` steps its destination by `dst` rows and its source by `src` an
    // iteration (an elementwise kernel: 1 and 1; a reset: 1 and 0).
    static bool steps(const Link& l, std::int64_t dst, std::int64_t src) {
      const auto f = [&](std::size_t k) {
        return vta::detail::constant_index(l.loop->args[k]).value_or(-1);
      };
      return f(1) == dst && f(2) == src;
    }
    // The first looped reset in chain `ch` of a buffer whose name ends in `suffix`, or its links'
    // count.
    static std::size_t first_reset(const Chain& ch, std::string_view suffix) {
      std::size_t k = 0;
      while (k < ch.links.size() &&
             !(ch.links[k].loop != nullptr && ch.links[k].op->name == vta::intrin::gemm_reset &&
               ch.links[k].op->buffers[0].name().ends_with(suffix)))
        ++k;
      return k;
    }
    // Chain kernel `kernel` (link `l`, of one loop level) with buffers `buffers` and its
    // micro-op's row offsets `rows` (an ALU op's destination and source, a reset's entry).
    static tir::Stmt moved(const tir::Stmt& kernel, const Link& l, std::vector<te::Buffer> buffers,
                           const std::vector<ne::Expr>& rows) {
      const auto* attr = kernel.as<tir::AttrNode>();
      const auto& seq = attr->body.as<tir::SeqNode>()->seq;
      auto args = l.op->args;
      const std::size_t at = l.op->name == vta::intrin::alu ? 3 : 0;
      for (std::size_t k = 0; k < rows.size(); ++k)
        args[at + k] = te::index_value(ne::simplify(rows[k]));
      return tir::make_attr(
          attr->key, attr->node, attr->value,
          tir::make_seq({seq[0],
                         tir::make_evaluate(te::call(l.op->name, l.op->dtype(), std::move(args),
                                                     std::move(buffers))),
                         seq[2]}));
    }
    // A copy of the chain's rows of chunk buffer `from` to `to`, row `to_row` on: a reset and
    // an ADD, the chain's own first looped reset and copying ADD moved there (where the chain
    // has no reset left, z_down_by_multiply's having gone, one over the ADD's rows). Nullopt
    // where the chain has no such ADD.
    static std::optional<std::vector<tir::Stmt>> copy_rows(const std::vector<tir::Stmt>& parts,
                                                           const Chain& ch, const te::Buffer& from,
                                                           const te::Buffer& to,
                                                           const ne::Expr& to_row) {
      std::optional<std::size_t> reset, add;
      for (std::size_t k = 0; k < ch.links.size(); ++k) {
        const Link& l = ch.links[k];
        if (l.loop == nullptr) continue;
        if (!reset && l.op->name == vta::intrin::gemm_reset && steps(l, 1, 0)) reset = k;
        if (!add && form(l) == std::array<std::int64_t, 4>{1, 2, 0, 0} &&
            l.op->buffers.size() == 2 && steps(l, 1, 1))
          add = k;
      }
      if (!add) return std::nullopt;
      const tir::Stmt& adding = parts[ch.first + *add];
      return std::vector<tir::Stmt>{
          reset ? moved(parts[ch.first + *reset], ch.links[*reset], {to}, {to_row})
                : reset_over(adding, to, to_row),
          moved(adding, ch.links[*add], {to, from}, {to_row, 0})};
    }
    // A reset of `buffer`'s rows from `row` on, over the rows of looped kernel `kernel` (its
    // loop's extent and destination step), as the lowering writes one.
    static tir::Stmt reset_over(const tir::Stmt& kernel, const te::Buffer& buffer,
                                const ne::Expr& row) {
      const auto* attr = kernel.as<tir::AttrNode>();
      const auto& seq = attr->body.as<tir::SeqNode>()->seq;
      const auto* begin = seq[0].as<tir::EvaluateNode>()->value.as<te::CallNode>();
      auto args = begin->args;
      args[2] = te::make_const(0, args[2].dtype());  // (a reset reads no source)
      return tir::make_attr(
          attr->key, std::string(vta::intrin::gemm_reset).substr(4), attr->value,
          tir::make_seq(
              {tir::make_evaluate(
                   te::call(begin->name, begin->dtype(), std::move(args), begin->buffers)),
               tir::make_evaluate(te::call(std::string(vta::intrin::gemm_reset), DType::int32(),
                                           {te::index_value(ne::simplify(row))}, {buffer})),
               seq[2]}));
    }
    // Pass 2's parts `out` (rewritten from `parts`, whose chain is `ch`) with the chain's
    // exponentials copied to `kept` in the kept chunks; false where the chain has no copy.
    // The copy's reset clears all the rows the block's kept chunks take at once, before the
    // chunk loop (kept_reset), where its loop runs over a chunk's rows (its keys, or the
    // whole chunk): one instruction a block rather than one a kept chunk, whose micro-ops, at
    // rows that move with the chunk, a replay writes call by call. Else each chunk resets its
    // own rows.
    bool keep(const std::vector<tir::Stmt>& parts, const Chain& ch, const ne::Expr& c,
              const std::vector<te::Buffer>& allocated, bool trimmed, std::vector<tir::Stmt>& out,
              std::vector<tir::Stmt>& before, std::vector<tir::Stmt>& after, te::Buffer& sums) {
      if (ch.buffers.size() < 2) return false;
      const te::Buffer e = ch.buffers.back();
      // (pass 1's where it kept the scores there, of as many entries)
      if (scores_kept && !ne::can_prove(ne::simplify(kept.size() - e.size() * kept_count) == 0))
        return false;
      const te::Buffer to = scores_kept
                                ? kept
                                : te::make_buffer(e.name() + ".kept", e.dtype(),
                                                  {ne::simplify(e.size() * kept_count)}, e.scope());
      auto copy = copy_rows(parts, ch, e, to, kept_row(c));
      if (!copy) return false;
      kept = to;
      const auto* reset = (*copy)[0].as<tir::AttrNode>();
      const auto calls = vta::detail::calls_in(reset->body);
      const auto extent = vta::detail::index_arg(calls[0]->args[0]);
      const ne::Expr chunk_rows = ne::simplify(ne::min(ne::Expr(chunk), keys - c * chunk));
      const bool whole = extent && extent->as_int() == chunk;
      if (hoist_reset && kept_count * chunk <= max_loop &&
          (whole || (extent && ne::can_prove(ne::simplify(*extent - chunk_rows) == 0)))) {
        kept_reset = detail::with_extent(copy_rows(parts, ch, e, to, ne::Expr(0)).value()[0],
                                         kept_rows(!whole));
        copy->erase(copy->begin());
      }
      exponential.clear();
      for (const Link& l : ch.links) exponential.push_back(form(l));
      if (kept_reset && !uniform &&
          sum_in_kept(parts, ch, c, allocated, trimmed, out, before, after, sums))
        return true;
      const auto tail = static_cast<std::ptrdiff_t>(parts.size() - ch.end);
      std::vector<tir::Stmt> with(out.begin(), out.end() - tail);
      // the copy's rows move with the chunk: a replay writes it call by call, and copies the
      // pass's other statements where they repeat (vta::intrin::replay_apart)
      with.push_back(tir::make_attr(
          std::string(vta::intrin::replay_apart), e.name(), 0,
          all_kept ? tir::make_seq(*copy) : tir::make_if(c < kept_count, tir::make_seq(*copy))));
      with.insert(with.end(), out.end() - tail, out.end());
      out = std::move(with);
      return true;
    }
    // Pass 2's kept chunks with their exponentials computed in `kept` itself, where keep()
    // copies them there (a reset and an ADD a key, of the 36 ALU cycles a key the chain takes
    // at the gallery's scale): the chain's kernels on the buffer it ends in, e, moved to the
    // chunk's kept rows, with no reset of e (kept_reset zeroed the kept rows before the loop:
    // what the reset before the copy of z into e, or the trimmed chain's fill of the keys the
    // block does not see with the sum's 0, gave). The chunk's sum then cannot halve e in place:
    // `sums` (e's size) is a running row for each of its entries instead, reset before the
    // loop (`before`), each chunk adding its e or its kept rows to it, and the halving and the
    // update of the block's sum after the loop on `sums` (`after`). In the chunks past the
    // kept ones the chain stays in e. `sums` lives around pass 2's loop alone, beside its
    // chunk buffers, which are a chunk fewer than pass 3's. Only where the softmax is not in
    // uniform tiles: the chain's micro-ops at rows that move with the chunk, which a replay
    // writes call by call, would undo what a decode step's replay gains from copying its
    // chunks' iterations. False, and `out` as it was, where the statements after the chain
    // are not kernels on e and the block's rows (no other of the chunk's buffers, `allocated`).
    bool sum_in_kept(const std::vector<tir::Stmt>& parts, const Chain& ch, const ne::Expr& c,
                     const std::vector<te::Buffer>& allocated, bool trimmed,
                     std::vector<tir::Stmt>& out, std::vector<tir::Stmt>& before,
                     std::vector<tir::Stmt>& after, te::Buffer& sums) {
      const te::Buffer e = ch.buffers.back();
      const std::vector<tir::Stmt> tail(parts.begin() + static_cast<std::ptrdiff_t>(ch.end),
                                        parts.end());
      for (const auto& st : tail) {
        if (st.as<tir::AttrNode>() == nullptr) return false;
        for (const auto* call : vta::detail::calls_in(st))
          if (call->name != vta::intrin::uop_loop_begin &&
              call->name != vta::intrin::uop_loop_end &&
              (call->name != vta::intrin::alu ||
               std::ranges::any_of(call->buffers, [&](const te::Buffer& b) {
                 return !b.same_as(e) && among(allocated, b);
               })))
            return false;
      }
      const te::Buffer rows = te::make_buffer(e.name() + std::string(detail::kRunningRows),
                                              e.dtype(), {e.size()}, e.scope());
      const auto added = copy_rows(parts, ch, e, rows, ne::Expr(0));
      if (!added) return false;
      const auto add_kept = in_kept((*added)[1], e, kept_row(c));
      // the statements before the tail, with e's resets dropped and e in the kept rows
      struct DropResets : tir::StmtMutator<DropResets> {
        te::Buffer e;
        bool resets(const tir::Stmt& st) const {
          const auto* attr = st.as<tir::AttrNode>();
          return attr != nullptr &&
                 std::ranges::any_of(
                     vta::detail::calls_in(attr->body), [&](const te::CallNode* call) {
                       return call->name == vta::intrin::gemm_reset && call->buffers[0].same_as(e);
                     });
        }
        tir::Stmt visit_seq(const tir::SeqNode& n, const tir::Stmt&) {
          std::vector<tir::Stmt> rest;
          for (const auto& st : n.seq)
            if (!resets(st)) rest.push_back(visit(st));
          return tir::make_seq(rest);
        }
      } drop;
      drop.e = e;
      const auto head_end = out.end() - static_cast<std::ptrdiff_t>(tail.size());
      std::vector<tir::Stmt> in_rows;
      auto from_scores = scores_trimmed == trimmed
                             ? chain_from_scores(parts, ch, c, {out.begin(), head_end})
                             : std::nullopt;
      if (from_scores) in_rows = std::move(*from_scores);
      for (auto it = out.begin(); it != head_end && !from_scores; ++it) {
        if (drop.resets(*it)) continue;
        const auto moved_st = in_kept(drop.visit(*it), e, kept_row(c));
        if (!moved_st) return false;
        in_rows.push_back(*moved_st);
      }
      if (!add_kept) return false;
      in_rows.push_back(*add_kept);
      std::vector<tir::Stmt> in_e(out.begin(), head_end);
      in_e.push_back((*added)[1]);
      // (the kept chunks' rows move with the chunk: vta::intrin::replay_apart, as keep()'s copy)
      const tir::Stmt kept_chunks = tir::make_attr(std::string(vta::intrin::replay_apart), e.name(),
                                                   0, tir::make_seq(in_rows));
      out = {all_kept ? kept_chunks
                      : tir::make_if(c < kept_count, kept_chunks, tir::make_seq(in_e))};
      before.push_back(detail::with_extent((*added)[0], ne::Expr(chunk)));
      const tir::BufferMap to_rows{{e.get(), rows}};
      for (const auto& st : tail) after.push_back(tir::rewrite(st, {}, to_rows));
      sums = rows;
      // (the kept rows hold the scores before the loop: no reset there)
      if (from_scores) kept_reset.reset();
      return true;
    }
    // Whether the chunk body `parts` (chain `ch`, chunk `c`) loads its chain's first buffer as
    // pass 1 loaded the scores it kept (scores_in_kept): one row of tiles from the same DRAM
    // element of the chunk, in the same memory. (Not its length: each pass's clips the chunk
    // to the keys the block sees, in forms the simplifier does not always prove the same; the
    // chain reads no key past those, trimmed where the lowering's is.)
    bool loads_kept_scores(const std::vector<tir::Stmt>& parts, const Chain& ch,
                           const ne::Expr& c) const {
      if (!scores_kept) return false;
      const te::Buffer& s = ch.buffers.front();
      const te::CallNode* load = nullptr;
      for (std::size_t j = 0; j < ch.first && load == nullptr; ++j)
        if (const auto* l = vta::detail::first_call(parts[j], vta::intrin::load);
            l != nullptr && l->buffers[0].same_as(s))
          load = l;
      if (load == nullptr || load->args.size() != scores_load.size() ||
          !load->buffers[1].same_as(scores_dram))
        return false;
      for (std::size_t k = 0; k < scores_load.size(); ++k) {
        if (k == 4 || k == 5) continue;  // (the row's length and stride)
        const auto was = vta::detail::index_arg(scores_load[k]);
        const auto is = vta::detail::index_arg(load->args[k]);
        if (!was || !is ||
            !ne::can_prove(ne::simplify(ne::substitute(*was, {{chunks.front(), c}}) - *is) == 0))
          return false;
      }
      return true;
    }
    // Whether statement `st`, before a chain, writes the load's buffer `s` or mask rows alone
    // (the load's fill, the load, the masks).
    static bool before_chain(const tir::Stmt& st, const te::Buffer& s) {
      if (st.as<tir::EvaluateNode>() == nullptr && st.as<tir::IfThenElseNode>() == nullptr)
        return false;
      return std::ranges::all_of(vta::detail::calls_in(st), [&](const te::CallNode* call) {
        return call->name == vta::intrin::uop_loop_begin ||
               call->name == vta::intrin::uop_loop_end ||
               (!call->buffers.empty() &&
                (call->buffers[0].same_as(s) || call->buffers[0].name().ends_with(".mask")));
      });
    }
    // A half's pass 3 (`out`, rewritten from `parts`, whose chain is `ch`) in a kept chunk from
    // the input its first pass kept there (scores_in_kept): no fill, load or masks, the chain
    // (trimmed where the lowering's was) on the kept rows in place of the load's buffer. False,
    // and `out` as it was, where the first pass did not keep its input or its load is not this
    // one's.
    bool pass3_from_kept(const std::vector<tir::Stmt>& parts, const Chain& ch, const ne::Expr& c,
                         std::vector<tir::Stmt>& out) const {
      // (not where the chain ends in the load's buffer: a trimmed chain's fill of it is a
      // statement before the chain)
      if (!loads_kept_scores(parts, ch, c) || ch.buffers.back().same_as(ch.buffers.front()))
        return false;
      const te::Buffer& s = ch.buffers.front();
      std::size_t from = 0;
      while (from < out.size() && before_chain(out[from], s)) ++from;
      if (from == 0) return false;
      std::vector<tir::Stmt> from_kept;
      for (std::size_t k = from; k < out.size(); ++k) {
        auto moved_st = in_kept(out[k], s, kept_row(c));
        if (!moved_st) return false;
        from_kept.push_back(std::move(*moved_st));
      }
      // (the kept rows move with the chunk: vta::intrin::replay_apart, as keep()'s copy). Only
      // in the chunks the block sees, which the first pass loaded: a chunk past them that the
      // loop computes (where no constant stands for it) loads its own.
      const tir::Stmt kept_chunks = tir::make_attr(std::string(vta::intrin::replay_apart),
                                                   kept.name(), 0, tir::make_seq(from_kept));
      const ne::Expr loaded = ne::simplify(c < ne::min(ne::Expr(kept_count), seen));
      out = {ne::can_prove(loaded) ? kept_chunks
                                   : tir::make_if(loaded, kept_chunks, tir::make_seq(out))};
      return true;
    }
    // Pass 2's chain in a kept chunk from the scores pass 1 kept there (scores_in_kept), in
    // place of its load: the statements `head` (the fill, the load and its masks, then the
    // chain; `parts` the chunk body's, the chain `ch`) without those before the chain, with the
    // load's buffer s in the chunk's kept rows, and from the chain's copy of r (the MAX of the
    // buffer the exponential ends in, e, holding z_down <= 0, with s, holding r) on, s and e
    // swapped: the two hold the same rows there, so that the quadratic and the shifts compute
    // in the kept rows and read r in e, where they computed in e and read r in s. e keeps its
    // reset before the exponent is added to it, a chunk's rows a chunk, in place of the kept
    // rows' reset once a block (kept_reset). Nullopt where pass 1 did not keep the scores, its
    // load is not this one's, or the chain has no such copy.
    std::optional<std::vector<tir::Stmt>> chain_from_scores(
        const std::vector<tir::Stmt>& parts, const Chain& ch, const ne::Expr& c,
        const std::vector<tir::Stmt>& head) const {
      if (!scores_kept) return std::nullopt;
      const te::Buffer s = ch.buffers.front(), e = ch.buffers.back();
      if (s.same_as(e) || !ne::can_prove(ne::simplify(s.size() - e.size()) == 0))
        return std::nullopt;
      if (!loads_kept_scores(parts, ch, c)) return std::nullopt;
      std::size_t from = 0;
      while (from < head.size() && before_chain(head[from], s)) ++from;
      // (s in the kept rows until the copy of r; after it, s in e and e in the kept rows)
      const ne::Expr rows = kept_row(c);
      MoveBuffers swap;
      swap.moves = {{s, kept, rows}};
      swap.turned = {{s, e, std::nullopt}, {e, kept, rows}};
      swap.turn = [&](const te::CallNode& call) {
        return call.name == vta::intrin::alu && call.buffers.size() == 2 &&
               call.buffers[0].same_as(e) && call.buffers[1].same_as(s) && call.args.size() == 5 &&
               vta::detail::constant_index(call.args[0]) ==
                   static_cast<std::int64_t>(runtime::AluOp::Max) &&
               vta::detail::constant_index(call.args[1]) == 0;
      };
      std::vector<tir::Stmt> out;
      for (std::size_t k = from; k < head.size(); ++k) out.push_back(swap.visit(head[k]));
      if (from == 0 || swap.failed || swap.turns == 0 || !swap.is_turned) return std::nullopt;
      return out;
    }
    // `args` (those of `call`) with the row offset of its buffer `b` moved by `rows`: an ALU
    // op's destination or source, a reset's entry, a store's or a load's SRAM tile. False where
    // the buffer has no such argument, or it is not an index.
    static bool offset_row(const te::CallNode& call, std::size_t b, const ne::Expr& rows,
                           std::vector<te::Expr>& args) {
      std::size_t at = args.size();
      if (call.name == vta::intrin::alu && b < 2) at = 3 + b;
      if (call.name == vta::intrin::gemm_reset && b == 0) at = 0;
      if ((call.name == vta::intrin::store || call.name == vta::intrin::load) && b == 0) at = 1;
      const auto row = at < args.size() ? vta::detail::index_arg(args[at]) : std::nullopt;
      if (!row) return false;
      args[at] = te::index_value(ne::simplify(*row + rows));
      return true;
    }
    // A buffer a call reads or writes moved: `from` as `to`, its row offsets moved by `rows`
    // where given (offset_row).
    struct Move {
      te::Buffer from, to;
      std::optional<ne::Expr> rows;
    };
    // Statements with their calls' buffers moved: by `moves`, and after the first call `turn`
    // accepts (where given) by `turned`, each branch of an if from the state before it (both
    // must end the same). Failed where a moved buffer's row is no index.
    struct MoveBuffers : tir::StmtMutator<MoveBuffers> {
      std::vector<Move> moves, turned;
      std::function<bool(const te::CallNode&)> turn;
      bool is_turned = false, failed = false;
      int turns = 0;
      tir::Stmt visit_if(const tir::IfThenElseNode& n, const tir::Stmt&) {
        const bool was = is_turned;
        const tir::Stmt t = visit(n.then_case);
        const bool after_then = is_turned;
        is_turned = was;
        const tir::Stmt f = n.else_case.defined() ? visit(n.else_case) : tir::Stmt();
        failed = failed || is_turned != after_then;
        return tir::make_if(n.cond, t, f);
      }
      tir::Stmt visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt& st) {
        const auto* call = n.value.as<te::CallNode>();
        if (call == nullptr) return st;
        auto args = call->args;
        auto buffers = call->buffers;
        bool moved = false;
        for (std::size_t b = 0; b < buffers.size(); ++b)
          for (const Move& m : is_turned ? turned : moves) {
            if (!buffers[b].same_as(m.from)) continue;
            if (m.rows && !offset_row(*call, b, *m.rows, args)) {
              failed = true;
              return st;
            }
            buffers[b] = m.to;
            moved = true;
            break;
          }
        if (turn && turn(*call)) {
          ++turns;
          is_turned = true;
        }
        if (!moved) return st;
        return tir::make_evaluate(
            te::call(call->name, call->dtype(), std::move(args), std::move(buffers)));
      }
    };
    // `st` with chunk buffer `e` read and written in `kept` at rows `rows` on: each call's
    // buffer and its row offset (an ALU op's destination or source, a reset's entry, a store's
    // or a load's SRAM tile). Nullopt where another call reads or writes `e`.
    std::optional<tir::Stmt> in_kept(const tir::Stmt& st, const te::Buffer& e,
                                     const ne::Expr& rows) const {
      MoveBuffers move;
      move.moves = {{e, kept, rows}};
      tir::Stmt out = move.visit(st);
      if (move.failed) return std::nullopt;
      return out;
    }
    // The first pass's chunk body `parts` (its fill first) where the kernel keeps chunks and
    // is not in uniform tiles: the block's max (the normalization's sum) from running rows
    // `rows` (a chunk's size, allocated around the loop, at most -32768 before it, or reset,
    // `before`), each chunk's loaded keys maxed (added) into them by one ALU instruction, and
    // the chunk's halving once after the loop on `rows` (`after`), in place of a halving a
    // chunk in the load's buffer. A kept chunk's input then stays where it was loaded: the
    // chunk's kept rows, which the whole softmax's pass 2 (chain_from_scores) or the halves'
    // pass 3 (pass3_from_kept) computes from rather than loading it again. The last chunk the
    // block sees fills its kept rows first: with 0 where pass 2's chain is trimmed to the keys
    // the block sees (what the exponentials of the others are, for the sum and pass 3); not
    // where a half's pass 3 will trim its chain so (kept_unfilled: no one reads those rows);
    // else with the load's fill, if any. (No fill in the load's buffer: the max and the sum
    // read the keys loaded alone.) `out` the loop's body; false, and the outputs as they were,
    // where the body is not that.
    bool scores_in_kept(const detail::ChunkBody& body, const std::vector<tir::Stmt>& parts,
                        const ne::Expr& c, std::vector<tir::Stmt>& out,
                        std::vector<tir::Stmt>& before, std::vector<tir::Stmt>& after,
                        te::Buffer& rows) {
      // (a causal softmax's chunks are filled, and pass 2's chains trimmed; one whose chunks
      // hold keys alone has no fill)
      // (a half's pass 3 computes from the kept rows as from its load: they take the load's
      // fill where its chain is not trimmed, kept_unfilled)
      const bool trims = chunks.size() == 3 && unseen_value[sum_pass].has_value();
      // (the normalization's fill is a reset: a masked key's exponential loads as 0)
      const bool fills = normalize ? body.fill <= 1 : body.fill == 2 || (body.fill == 0 && !trims);
      if (kept_count == 0 || uniform || !fills || body.load->args.size() < 5 ||
          vta::detail::constant_index(body.load->args[3]) != 1)
        return false;
      const te::Buffer s = body.load->buffers[0];
      const auto loaded = vta::detail::index_arg(body.load->args[4]);  // the chunk's keys loaded
      std::size_t first = body.fill + 1;
      while (first < parts.size() && parts[first].as<tir::IfThenElseNode>() != nullptr) ++first;
      if (!loaded || first == parts.size()) return false;
      // after the load and the masks, the halving: kernels on s and the block's rows alone, the
      // first a MAX over one loop level
      for (std::size_t k = first; k < parts.size(); ++k) {
        if (parts[k].as<tir::AttrNode>() == nullptr) return false;
        for (const auto* call : vta::detail::calls_in(parts[k]))
          if (std::ranges::any_of(call->buffers, [&](const te::Buffer& b) {
                return !b.same_as(s) && among(body.allocated, b);
              }))
            return false;
      }
      const auto calls = vta::detail::calls_in(parts[first]);
      if (calls.size() != 3 || calls[0]->name != vta::intrin::uop_loop_begin ||
          calls[1]->buffers.size() != 2)
        return false;
      const Link level{calls[0], calls[1]};
      const auto halving = normalize ? runtime::AluOp::Add : runtime::AluOp::Max;
      if (form(level) != std::array<std::int64_t, 4>{1, static_cast<std::int64_t>(halving), 0, 0} ||
          !steps(level, 1, 1))
        return false;
      const ne::Expr row = kept_row(c);
      const te::Buffer running = te::make_buffer(s.name() + std::string(detail::kRunningRows),
                                                 s.dtype(), {s.size()}, s.scope());
      // the fill's reset and ADD (k = 0, 1) over a whole chunk of `to` from row `at`
      const auto whole_fill = [&](std::size_t k, const te::Buffer& to, const ne::Expr& at) {
        const auto fill_calls = vta::detail::calls_in(parts[k]);
        const Link l{fill_calls[0], fill_calls[1]};
        return detail::with_extent(
            k == 0 ? moved(parts[k], l, {to}, {at}) : moved(parts[k], l, {to, to}, {at, at}),
            ne::Expr(chunk));
      };
      for (std::size_t k = 0; k < body.fill; ++k) {
        const auto fill_calls = vta::detail::calls_in(parts[k]);
        if (parts[k].as<tir::AttrNode>() == nullptr || fill_calls.size() != 3 ||
            fill_calls[0]->name != vta::intrin::uop_loop_begin)
          return false;
      }
      // (in_kept moves s to `kept`, which no pass before this one defined)
      kept = te::make_buffer(s.name() + ".kept", s.dtype(), {ne::simplify(s.size() * kept_count)},
                             s.scope());
      // the fill (a whole chunk's reset where the chain is trimmed), the load and the masks, in
      // the chunk's kept rows
      // (none where a half's pass 3 trims its chain to the keys the block sees: no one reads
      // the others, in the kept rows or in the running rows; pass3_from_kept refuses a chain
      // it could not trim)
      std::vector<tir::Stmt> fill, in_rows;
      kept_unfilled = may_unfill && chunks.size() == 2 && unseen_value.back().has_value();
      if (trims) fill.push_back(whole_fill(0, kept, row));
      for (std::size_t k = trims || kept_unfilled ? body.fill : 0; k < first; ++k) {
        auto moved_st = in_kept(parts[k], s, row);
        if (!moved_st) {
          kept = te::Buffer();
          return false;
        }
        (k < body.fill ? fill : in_rows).push_back(std::move(*moved_st));
      }
      if (!fill.empty())
        in_rows.insert(in_rows.begin(),
                       tir::make_if(ne::simplify(c + 1 >= seen), tir::make_seq(fill)));
      // the chunk's keys loaded into `from`, from row `at`, maxed into the running rows
      const auto max_into_rows = [&](const te::Buffer& from, const ne::Expr& at) {
        return detail::with_extent(moved(parts[first], level, {running, from}, {ne::Expr(0), at}),
                                   *loaded);
      };
      in_rows.push_back(max_into_rows(kept, row));
      std::vector<tir::Stmt> in_s(parts.begin() + static_cast<std::ptrdiff_t>(body.fill),
                                  parts.begin() + static_cast<std::ptrdiff_t>(first));
      in_s.push_back(max_into_rows(s, ne::Expr(0)));
      // (the kept rows move with the chunk: vta::intrin::replay_apart, as keep()'s copy)
      const tir::Stmt kept_chunks = tir::make_attr(std::string(vta::intrin::replay_apart),
                                                   kept.name(), 0, tir::make_seq(in_rows));
      out = {all_kept ? kept_chunks
                      : tir::make_if(c < kept_count, kept_chunks, tir::make_seq(in_s))};
      const tir::BufferMap to_rows{{s.get(), running}};
      // the rows' start before the loop (the halving's first level made these kernels): the
      // sum's 0, a reset; the max's MIN with -32768, as any value at most that starts it, every
      // lane seeing a score of at least -128
      const tir::Stmt start = detail::with_extent(
          moved(parts[first], level, {running, running}, {ne::Expr(0), ne::Expr(0)}),
          ne::Expr(chunk));
      before = {normalize ? reset_over(start, running, ne::Expr(0))
                          : detail::with_alu(start, runtime::AluOp::Min, true, -32768)};
      after.clear();
      for (std::size_t k = first; k < parts.size(); ++k)
        after.push_back(tir::rewrite(parts[k], {}, to_rows));
      rows = running;
      scores_kept = true;
      scores_trimmed = trims;
      scores_load = body.load->args;
      scores_dram = body.load->buffers[1];
      return true;
    }
    // Pass 3's parts `out` (rewritten from `parts`, whose chain is `ch`) starting, in the
    // kept chunks, from the kept exponentials: the chain's kernels after the exponential,
    // and what follows the chain (the store), on the kept rows in place of the buffer the
    // exponential ends in: in spans before the chunk loop (kept_in_spans) where the loop
    // starts at 0 (`from_zero`), else in its kept iterations. False where its chain does not
    // start with pass 2's exponential, or reads another of its buffers after it.
    bool read_kept(const std::vector<tir::Stmt>& parts, const Chain& ch, const ne::Var& c,
                   const std::vector<te::Buffer>& allocated, tir::ForKind kind, bool from_zero,
                   std::vector<tir::Stmt>& out) {
      const std::size_t n = exponential.size();
      if (ch.links.size() <= n) return false;
      for (std::size_t k = 0; k < n; ++k)
        if (form(ch.links[k]) != exponential[k]) return false;
      std::vector<te::Buffer> computed{ch.buffers.front()};  // the exponential's chunk buffers
      for (std::size_t k = 0; k < n; ++k)
        if (ch.links[k].loop != nullptr) computed.push_back(ch.links[k].op->buffers[0]);
      const te::Buffer e = computed.back();
      for (std::size_t k = n; k < parts.size() - ch.first; ++k)
        for (const auto* call : vta::detail::calls_in(parts[ch.first + k]))
          for (const auto& b : call->buffers)
            if (!b.same_as(e) && among(computed, b)) return false;
      const std::vector<tir::Stmt> rest(parts.begin() + static_cast<std::ptrdiff_t>(ch.first + n),
                                        parts.end());
      if (auto spans = from_zero ? kept_in_spans(rest, e, allocated, c, kind) : std::nullopt) {
        kept_spans = std::move(*spans);  // (and the chunk loop starts past them: visit_for)
        return true;
      }
      std::vector<tir::Stmt> from_kept;
      for (const auto& st : rest) {
        const auto moved = in_kept(st, e, kept_row(c));
        if (!moved) return false;
        from_kept.push_back(*moved);
      }
      if (all_kept) {
        out = std::move(from_kept);
      } else {
        out = {tir::make_if(c < kept_count, tir::make_seq(from_kept), tir::make_seq(out))};
      }
      return true;
    }
    // Pass 3's statements `rest` after the exponential (the chain's kernels on `e`, then the
    // store), over the kept chunks the block sees in spans of chunks rather than one at a
    // time: their rows are contiguous in `kept`, and so are their keys' probabilities in DRAM,
    // so that one kernel computes a span and one STORE writes it. A span is as many chunks
    // as the entries of pass 3's chunk buffers (`allocated`) hold of those it uses: its span
    // buffers take their place, which is free before pass 3's chunk loop. In place of a chunk loop
    // whose kept iterations each wrote the chain's micro-ops at rows that move with the chunk
    // (no two alike for a loop memo to copy), a loop of a few spans; the same micro-ops a
    // key. The kernels at the end of the chain that work on `e` in place with an immediate
    // alone (the probability's rounding), and the store, run once after the loop over every
    // kept row (where one instruction's loop holds them, and pass 1 does not keep the scores
    // there: the next block's pass 1 would load into the kept rows as that STORE of all of them
    // began, and wait for it; each span's store is done as the spans after it compute, and the
    // last is a span's): elementwise, each row sees the same operations in the same order, and
    // each of the loop's iterations writes three fewer kernels whose micro-ops move with the
    // span (each one the replay writes anew: no loop memo copies such an iteration) and no
    // STORE. Nullopt where the statements are not kernels
    // of one loop level over the chunk's rows and a store of one row of tiles, or a span
    // would hold one chunk.
    std::optional<tir::Stmt> kept_in_spans(const std::vector<tir::Stmt>& rest, const te::Buffer& e,
                                           const std::vector<te::Buffer>& allocated,
                                           const ne::Var& c, tir::ForKind kind) const {
      std::vector<te::Buffer> used;  // the chunk buffers `rest` uses besides e
      for (const auto& st : rest)
        for (const auto* call : vta::detail::calls_in(st))
          for (const auto& b : call->buffers)
            if (!b.same_as(e) && among(allocated, b) && !among(used, b)) used.push_back(b);
      // the entries of pass 3's chunk buffers, over those a chunk of the used ones takes
      std::int64_t space = 0, taken = 0;
      for (const auto& b : allocated) {
        const auto size = b.size().as_int();
        if (!size) return std::nullopt;
        space += *size;
        if (among(used, b)) taken += *size;
      }
      const std::int64_t span = taken > 0 ? space / taken : 0;
      if (span < 2) return std::nullopt;
      const std::int64_t span_rows = span * chunk;
      const ne::Expr total = kept_rows(true);
      const std::int64_t most = (kept_count * chunk + span_rows - 1) / span_rows;
      const ne::Var g = ne::var(c.name() + ".span", 0, most - 1);
      const ne::Expr span_first = ne::simplify(g * span_rows);
      const ne::Expr span_count = ne::simplify(ne::min(ne::Expr(span_rows), total - span_first));
      // the kernels from `tail` on, and the store, after the loop (see above)
      std::size_t tail = rest.empty() ? 0 : rest.size() - 1;
      const bool hoist = !rest.empty() && kept_count * chunk <= max_rows && !scores_kept;
      if (hoist)
        while (tail > 0 && in_place_immediate(rest[tail - 1], e)) --tail;
      std::vector<te::Buffer> spanned;
      for (const auto& b : used)
        spanned.push_back(te::make_buffer(b.name() + ".span", b.dtype(),
                                          {ne::simplify(b.size() * span)}, b.scope()));
      const auto i32 = [](const ne::Expr& x) { return te::index_value(ne::simplify(x)); };
      const ne::Expr chunk_rows = ne::simplify(ne::min(ne::Expr(chunk), keys - c * chunk));
      // a call with `e` read or written in `kept` at row `first` on (its row argument `at`),
      // the chunk buffers it uses in their spans' (from their row 0); null where a row argument
      // is not one, or a chunk buffer's is not 0. `step`: each on-chip buffer's step a row of
      // the kernel's loop (a store's 1), which is 1 for the chunk's and 0 for a row of the
      // block (whose entries the longer loop then reads no more of)
      const auto in_span = [&](const te::CallNode& call, std::vector<te::Expr> args,
                               std::size_t row_at, const std::vector<std::int64_t>& step,
                               const ne::Expr& first) -> std::optional<te::Expr> {
        auto buffers = call.buffers;
        for (std::size_t b = 0; b < buffers.size() && b < step.size(); ++b) {
          const std::size_t at = row_at + b;
          const auto row = at < args.size() ? vta::detail::index_arg(args[at]) : std::nullopt;
          const bool chunked = buffers[b].same_as(e) || among(used, buffers[b]);
          if (!row || step[b] != (chunked ? 1 : 0) ||
              (chunked && !buffers[b].same_as(e) && row->as_int() != 0))
            return std::nullopt;
          for (std::size_t u = 0; u < used.size(); ++u)
            if (buffers[b].same_as(used[u])) buffers[b] = spanned[u];
          if (!buffers[b].same_as(e)) continue;
          args[at] = i32(*row + first);
          buffers[b] = kept;
        }
        return te::call(call.name, call.dtype(), std::move(args), std::move(buffers));
      };
      std::vector<tir::Stmt> body, after;
      for (std::size_t k = 0; k < rest.size(); ++k) {
        const tir::Stmt& st = rest[k];
        // the rows the statement starts at and covers: a span's, or every kept row (after the
        // loop)
        const bool hoisted = hoist && k >= tail;
        const ne::Expr first = hoisted ? ne::Expr(0) : span_first;
        const ne::Expr rows = hoisted ? total : span_count;
        std::vector<tir::Stmt>& to = hoisted ? after : body;
        if (const auto* attr = st.as<tir::AttrNode>()) {
          const auto* seq = attr->body.as<tir::SeqNode>();
          const auto calls = vta::detail::calls_in(attr->body);
          if (seq == nullptr || seq->seq.size() != 3 || calls.size() != 3 ||
              calls[0]->name != vta::intrin::uop_loop_begin ||
              (calls[1]->name != vta::intrin::alu && calls[1]->name != vta::intrin::gemm_reset))
            return std::nullopt;
          const auto extent = vta::detail::index_arg(calls[0]->args[0]);
          if (!extent || !(extent->as_int() == chunk ||
                           ne::can_prove(ne::simplify(*extent - chunk_rows) == 0)))
            return std::nullopt;
          // the loop's steps a row: the destination's, then the source's
          std::vector<std::int64_t> steps;
          for (std::size_t a = 1; a < 3 && a < calls[0]->args.size(); ++a)
            steps.push_back(vta::detail::constant_index(calls[0]->args[a]).value_or(-1));
          auto loop_args = calls[0]->args;
          loop_args[0] = i32(rows);
          const auto op = in_span(*calls[1], calls[1]->args,
                                  calls[1]->name == vta::intrin::alu ? 3 : 0, steps, first);
          if (!op) return std::nullopt;
          to.push_back(tir::make_attr(
              attr->key, attr->node, attr->value,
              tir::make_seq({tir::make_evaluate(te::call(calls[0]->name, calls[0]->dtype(),
                                                         std::move(loop_args), calls[0]->buffers)),
                             tir::make_evaluate(*op), seq->seq[2]})));
          continue;
        }
        // the store, last: a row of `x` tiles from row args[1] to DRAM element args[2]
        const auto* eval = st.as<tir::EvaluateNode>();
        const auto* store = eval != nullptr ? eval->value.as<te::CallNode>() : nullptr;
        if (k + 1 != rest.size() || store == nullptr || store->name != vta::intrin::store ||
            store->args.size() != 6 || !store->buffers[0].same_as(e) ||
            vta::detail::constant_index(store->args[3]) != 1)
          return std::nullopt;
        // its keys' probabilities one a DRAM element: a span's at chunk g x span's
        const auto dram = vta::detail::index_arg(store->args[2]);
        const auto x = vta::detail::index_arg(store->args[4]);
        if (!dram || !x ||
            !(x->as_int() == chunk || ne::can_prove(ne::simplify(*x - chunk_rows) == 0)))
          return std::nullopt;
        const ne::Expr at = ne::substitute(*dram, {{c, g * span}});
        const ne::Expr at_first = ne::substitute(*dram, {{c, 0}});  // the first kept chunk's
        if (!ne::can_prove(ne::simplify(at - at_first - span_first) == 0)) return std::nullopt;
        auto args = store->args;
        args[2] = i32(hoisted ? at_first : at);
        args[4] = args[5] = i32(rows);
        const auto moved = in_span(*store, std::move(args), 1, {1}, first);
        if (!moved) return std::nullopt;
        to.push_back(tir::make_evaluate(*moved));
      }
      tir::Stmt loop = tir::make_for(g, ne::Expr(0),
                                     ne::simplify(ne::floordiv(total + (span_rows - 1), span_rows)),
                                     kind, tir::make_allocate(spanned, tir::make_seq(body)));
      if (after.empty()) return loop;
      if (!body.empty()) after.insert(after.begin(), std::move(loop));
      return tir::make_seq(std::move(after));
    }
    // The most rows a chunk's chain computes, min(chunk, keys) (its rows, or fewer where
    // trim_chain trimmed it to the keys the block sees).
    ne::Expr block_rows() const { return ne::simplify(ne::min(ne::Expr(chunk), keys)); }
    // The exponent's z (detail::exponent_stages) copied from u by a MAX where the lowering
    // wrote a reset and an ADD, the reset once before the chunk loop rather than once a chunk. The
    // copy reads u in the load's buffer, u >= q.shift * 2^7 >= 128 (t >= q.shift * 2^frac_bits: the
    // max at least every score of the block, masked ones too); z's buffer ends each chunk's chain
    // with a MIN by an immediate below 128 in place (a shift amount of at most 15), and the reset
    // leaves 0 for the first chunk, so a MAX with u gives u in each row a chunk computes (the rows
    // a trimmed chain leaves are read by no one). `parts` with the copy rewritten and the reset
    // appended to `hoisted`; false, and `parts` as they were, where the chain is not that.
    bool z_by_max(const detail::ChunkBody& body, std::vector<tir::Stmt>& parts, const ne::Expr& c,
                  std::vector<tir::Stmt>& hoisted) {
      const Chain ch = chain_of(body, parts, c);
      const auto writes = [](const Link& l, const te::Buffer& b) {
        return l.loop != nullptr && l.op->buffers[0].same_as(b);
      };
      const std::size_t reset = first_reset(ch, ".z");
      if (reset == ch.links.size()) return false;
      const te::Buffer z = ch.links[reset].op->buffers[0];
      std::optional<std::size_t> copy, last;
      for (std::size_t k = 0; k < ch.links.size(); ++k) {
        if (k == reset || !ch.links[k].op->buffers[0].same_as(z)) continue;
        if (k < reset || !writes(ch.links[k], z)) return false;  // z written before, or one row
        if (!copy) copy = k;
        last = k;
      }
      if (!copy || !among(body.allocated, z) ||
          form(ch.links[*copy]) != std::array<std::int64_t, 4>{1, 2, 0, 0} ||
          ch.links[*copy].op->buffers.size() != 2 ||
          !ch.links[*copy].op->buffers[1].same_as(ch.buffers.front()) ||
          !steps(ch.links[*copy], 1, 1))
        return false;
      const auto end = form(ch.links[*last]);
      if (end[0] != 1 || end[1] != static_cast<std::int64_t>(runtime::AluOp::Min) || end[2] != 1 ||
          end[3] < 0 || end[3] >= 128)
        return false;
      if (written_outside(parts, ch, {z})) return false;
      const std::size_t at = ch.first + reset;
      hoist(parts[at], z, hoisted);
      parts[ch.first + *copy] =
          detail::with_alu(parts[ch.first + *copy], runtime::AluOp::Max, false, 0);
      parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(at));
      return true;
    }
    // Whether a statement of `parts` outside chain `ch` (the masks before it, what follows it)
    // writes one of `buffers`: the first buffer of each call but a STORE's, which reads it.
    static bool written_outside(const std::vector<tir::Stmt>& parts, const Chain& ch,
                                std::initializer_list<te::Buffer> buffers) {
      for (std::size_t j = 0; j < parts.size(); ++j) {
        if (j >= ch.first && j < ch.end) continue;
        for (const auto* call : vta::detail::calls_in(parts[j]))
          if (call->name != vta::intrin::store && !call->buffers.empty() &&
              std::ranges::any_of(buffers,
                                  [&](const te::Buffer& b) { return call->buffers[0].same_as(b); }))
            return true;
      }
      return false;
    }
    // The exponentials' z_down = -2^k z (k the shift that makes z of u) as a MIN and a multiply
    // where the lowering wrote a reset, an ADD of z and a MUL by -2^k: z_down's MIN with -2^k
    // gives -2^k in every row, as each holds at least that (the kernel has no epilogue: below;
    // 0 from the reset once before the chunk loop, appended to `hoisted`), and z_down times z
    // gives -2^k z where z fits the 8 bits VTA's multiplier takes from a tile: u clipped first
    // to ((M + 1) << k) - 1 by a MIN, so that z <= M, M a z whose shift leaves 0 of any
    // v < 2^23 (the quadratic's values). A clipped key's exponential is 0 as its own is: its z
    // above M, it gets z = M and r = 2^k - 1, which the shifts take to 0. The two exponentials:
    //   - an int8 one (Exp): the MIN by m that clips z for the shift of v, then the shift of
    //     z_down by z, an ADD of a and a shift right by b, the chain's end: M = m, since
    //     ((2^23 - 1) >> m) + a < 2^b, and the MIN by m dropped (the clip makes it redundant).
    //     z_down ends each chunk's chain an int8 exponential (or a trimmed chain's fill of 0);
    //   - the whole softmax's v >> z as (v >> min(z + a, m)) >> b in z_down (exponential_stages:
    //     an ADD of a <= 0 to z in place, then its MIN by m, the shift of v by z, and a shift
    //     right by b): M = m - a, where the shifts take v by m + b >= 23 (v >> 23 is 0), and the
    //     MIN by m dropped (z + a <= M + a = m). z_down ends each chunk's chain an exponential,
    //     a sum of them (pass 2's halving, after the chain) or a probability (pass 3), or r
    //     where the kept chunks compute the exponential in their own rows (keep, read_kept:
    //     r = u + z_down, then the MAX of z_down with r, the copy the quadratic multiplies by):
    //     each at least 0.
    // z still ends each chunk at most m, below u, as z_by_max's copy by a MAX needs. A reset a
    // chunk fewer, a MIN for the ADD, and the clip for the MIN dropped. `parts` rewritten;
    // false, and `parts` as they were, where the chain is neither.
    bool z_down_by_multiply(const detail::ChunkBody& body, std::vector<tir::Stmt>& parts,
                            const ne::Expr& c, std::vector<tir::Stmt>& hoisted) {
      if (!plain) return false;
      const Chain ch = chain_of(body, parts, c);
      const std::vector<Link>& l = ch.links;
      const te::Buffer u = ch.buffers.front();
      using enum runtime::AluOp;
      const auto is = [&](std::size_t k, runtime::AluOp op, bool immediate) {
        const auto f = form(l[k]);
        return l[k].loop != nullptr && f[0] == 1 && f[1] == static_cast<std::int64_t>(op) &&
               f[2] == (immediate ? 1 : 0) && l[k].op->buffers.size() == 2 && steps(l[k], 1, 1);
      };
      const auto on = [&](std::size_t k, const te::Buffer& dst, const te::Buffer& src) {
        return l[k].op->buffers[0].same_as(dst) && l[k].op->buffers[1].same_as(src);
      };
      std::size_t at = 0;  // the copy of u into z
      while (at < l.size() && !(is(at, Max, false) && l[at].op->buffers[1].same_as(u) &&
                                l[at].op->buffers[0].name().ends_with(".z")))
        ++at;
      if (at + 5 > l.size()) return false;
      const te::Buffer z = l[at].op->buffers[0], down = l[at + 2].op->buffers[0];
      const std::int64_t k = form(l[at + 1])[3];
      if (!is(at + 1, Shr, true) || !l[at + 1].op->buffers[0].same_as(z) || k < 1 || k > 7 ||
          l[at + 2].loop == nullptr || l[at + 2].op->name != vta::intrin::gemm_reset ||
          !steps(l[at + 2], 1, 0) || !down.name().ends_with(".z_down") ||
          !among(body.allocated, down) || !is(at + 3, Add, false) || !on(at + 3, down, z) ||
          !is(at + 4, Mul, true) || !l[at + 4].op->buffers[0].same_as(down) ||
          form(l[at + 4])[3] != -(std::int64_t{1} << k))
        return false;
      // z's reads and writes after: the whole softmax's ADD of a <= 0 in place, the MIN by m,
      // then the shift of v by z
      std::optional<std::size_t> less, clip, by_z;
      for (std::size_t j = at + 5; j < l.size(); ++j) {
        const bool writes_z = l[j].op->buffers[0].same_as(z);
        const bool reads_z = l[j].op->buffers.size() == 2 && l[j].op->buffers[1].same_as(z);
        if (writes_z && !less && !clip && is(j, Add, true) && on(j, z, z)) {
          less = j;
        } else if (writes_z && !clip && is(j, Min, true)) {
          clip = j;
        } else if (reads_z && clip && !by_z && is(j, Shr, false)) {
          by_z = j;
        } else if (writes_z || reads_z) {
          return false;
        }
      }
      if (!clip || !by_z || !l[*by_z].op->buffers[0].same_as(down)) return false;
      constexpr std::int64_t v_bits = 23;  // v < 2^23: v >> 23 is 0
      const std::int64_t m = form(l[*clip])[3], a = less ? form(l[*less])[3] : 0;
      if (m < 0 || m > 15 || a > 0 || a < -16) return false;
      const std::int64_t most = m - a;  // M: z + a <= m
      if (!less) {
        if (*by_z + 3 != l.size() || !is(*by_z + 1, Add, true) || !is(*by_z + 2, Shr, true) ||
            !l[*by_z + 1].op->buffers[0].same_as(down) ||
            !l[*by_z + 2].op->buffers[0].same_as(down))
          return false;
        const std::int64_t add = form(l[*by_z + 1])[3], b = form(l[*by_z + 2])[3];
        if (add < 0 || b < 1 || b > 30 || ((((1 << v_bits) - 1) >> m) + add) >= (1 << b))
          return false;
      } else {
        if (*by_z + 2 > l.size() || !is(*by_z + 1, Shr, true) ||
            !l[*by_z + 1].op->buffers[0].same_as(down))
          return false;
        const std::int64_t b = form(l[*by_z + 1])[3];
        if (b < 1 || b > 15 || m + b < v_bits) return false;
      }
      const std::int64_t top = ((most + 1) << k) - 1;
      if (top > 32767 || written_outside(parts, ch, {z}) ||
          (!less && written_outside(parts, ch, {down})))
        return false;
      const auto row = [&](std::size_t j, std::size_t arg) {
        return vta::detail::index_arg(l[j].op->args[arg]);
      };
      const auto u_row = row(at, 4), z_row = row(at + 3, 4), down_row = row(at + 3, 3);
      if (!u_row || !z_row || !down_row) return false;
      const std::size_t first = ch.first;
      const tir::Stmt clip_u = detail::with_alu(
          moved(parts[first + at + 1], l[at + 1], {u, u}, {*u_row, *u_row}), Min, true, top);
      const tir::Stmt fill_down = detail::with_alu(
          moved(parts[first + at + 3], l[at + 3], {down, down}, {*down_row, *down_row}), Min, true,
          -(std::int64_t{1} << k));
      const tir::Stmt times_z = detail::with_alu(
          moved(parts[first + at + 4], l[at + 4], {down, z}, {*down_row, *z_row}), Mul, false, 0);
      hoist(parts[first + at + 2], down, hoisted);
      std::vector<tir::Stmt> out(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(first));
      for (std::size_t j = 0; j < l.size(); ++j) {
        const tir::Stmt& st = parts[first + j];
        if (j == at) out.push_back(clip_u);
        if (j == at + 2 || j == *clip) continue;
        out.push_back(j == at + 3 ? fill_down : j == at + 4 ? times_z : st);
      }
      out.insert(out.end(), parts.begin() + static_cast<std::ptrdiff_t>(ch.end), parts.end());
      parts = std::move(out);
      return true;
    }
    // A normalization's reciprocal R (a row of the block) copied beside pass 3's chunk by a MAX
    // where the lowering wrote a reset and an ADD, the reset once before the chunk loop rather
    // than once a chunk. The chain is the copy's reset and ADD, the multiply of the copy by the
    // exponentials e the chunk loaded (int8), and the rounding in place, an ADD of c and a
    // shift right by k, then the store: each row computed holds y = (R e + c) >> k <= R, for
    // 127 R + c < 2^k (R + 1) where c < 2^k and 127 < 2^k (R >= 0: a quotient; a negative e
    // gives less), and the rows a trimmed chain fills hold 0: a MAX of those with R gives R.
    // `parts` with the copy rewritten and the reset appended to `hoisted`; false, and `parts`
    // as they were, where the chain is not that.
    bool r_by_max(const detail::ChunkBody& body, std::vector<tir::Stmt>& parts, const ne::Expr& c,
                  std::vector<tir::Stmt>& hoisted) const {
      const Chain ch = chain_of(body, parts, c);
      if (ch.links.size() != 5 || body.store == nullptr || ch.end + 1 != parts.size() ||
          std::ranges::any_of(ch.links, [](const Link& l) { return l.loop == nullptr; }))
        return false;
      const te::Buffer x = ch.links[0].op->buffers[0];
      using enum runtime::AluOp;
      const auto is = [&](std::size_t k, runtime::AluOp op, bool immediate) {
        const auto f = form(ch.links[k]);
        return f[0] == 1 && f[1] == static_cast<std::int64_t>(op) && f[2] == (immediate ? 1 : 0) &&
               ch.links[k].op->buffers.size() == 2 && ch.links[k].op->buffers[0].same_as(x);
      };
      if (ch.links[0].op->name != vta::intrin::gemm_reset || !steps(ch.links[0], 1, 0) ||
          !among(body.allocated, x) || !is(1, Add, false) || !steps(ch.links[1], 1, 0) ||
          among(body.allocated, ch.links[1].op->buffers[1]) || !is(2, Mul, false) ||
          !steps(ch.links[2], 1, 1) || !ch.links[2].op->buffers[1].same_as(ch.buffers.front()) ||
          !is(3, Add, true) || !is(4, Shr, true) || !body.store->buffers[0].same_as(x) ||
          vta::detail::constant_index(body.load->args[0]) !=
              static_cast<std::int64_t>(runtime::MemId::Acc8))
        return false;
      const std::int64_t add = form(ch.links[3])[3], shift = form(ch.links[4])[3];
      if (shift < 7 || shift > 30 || add < 0 || add >= (std::int64_t{1} << shift)) return false;
      if (written_outside(parts, ch, {x})) return false;
      const std::size_t at = ch.first;
      hoisted.push_back(detail::with_extent(parts[at], block_rows()));
      parts[at + 1] = detail::with_alu(parts[at + 1], Max, false, 0);
      parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(at));
      return true;
    }
    // The normalization's pass 3 (`parts`, chunk `c`) with the buffer it stores, x, taking
    // turns with a second of its size, `odd` (its chunks alternately): the chain of a chunk
    // then writes one buffer while the STORE of the chunk before reads the other, where it
    // waited for that STORE (tokens order the accesses of a buffer). The chain's four ALU passes
    // take 8 cycles a key on the cycle model and the STORE 4.6: the chain waits for half of it
    // behind a load, for all of it in a kept chunk. The statements of `hoisted` that write x
    // (its reset once a block, r_by_max) write odd too. Where the last seen chunk resets its
    // buffer whole (`last_resets`: the chain trimmed), a buffer whose first chunk is that one
    // needs no reset once a block: x's is kept where the block sees 2 chunks or more, odd's 3
    // (a block of few keys no longer resets a buffer the block before may be storing). `parts`
    // as they were, and odd left undefined, where x is not the chunk's own buffer.
    std::vector<tir::Stmt> stored_by_turns(const detail::ChunkBody& body,
                                           const std::vector<tir::Stmt>& parts, const ne::Expr& c,
                                           bool last_resets, std::vector<tir::Stmt>& hoisted,
                                           te::Buffer& odd) const {
      if (body.store == nullptr) return parts;
      const te::Buffer x = body.store->buffers[0];
      if (!among(body.allocated, x)) return parts;
      MoveBuffers to_odd;
      const te::Buffer turn = te::make_buffer(x.name() + ".odd", x.dtype(), {x.size()}, x.scope());
      to_odd.moves = {{x, turn, std::nullopt}};
      std::vector<tir::Stmt> odd_parts;
      for (const auto& st : parts) odd_parts.push_back(to_odd.visit(st));
      const std::size_t hoisted_count = hoisted.size();
      // (a statement resetting x alone kept where the block sees more than `first` chunks)
      const auto unless_last = [&](const tir::Stmt& st, std::int64_t first) {
        const auto* reset = vta::detail::first_call(st, vta::intrin::gemm_reset);
        const auto calls =
            std::ranges::count_if(vta::detail::calls_in(st), [](const te::CallNode* call) {
              return call->name != vta::intrin::uop_loop_begin &&
                     call->name != vta::intrin::uop_loop_end;
            });
        if (!last_resets || reset == nullptr || calls != 1) return st;
        return tir::make_if(ne::simplify(seen > first), st);
      };
      for (std::size_t k = 0; k < hoisted_count; ++k)
        if (std::ranges::any_of(vta::detail::calls_in(hoisted[k]), [&](const te::CallNode* call) {
              return !call->buffers.empty() && call->buffers[0].same_as(x);
            })) {
          hoisted.push_back(unless_last(to_odd.visit(hoisted[k]), 2));
          hoisted[k] = unless_last(hoisted[k], 1);
        }
      odd = turn;
      return {tir::make_if(ne::simplify(ne::floormod(c, 2) == 0), tir::make_seq(parts),
                           tir::make_seq(odd_parts))};
    }
    // Whether statement st is a kernel on `e` alone, in place, with an immediate (kept_in_spans
    // runs those at the chain's end after its loop): dst and src e, the immediate used.
    static bool in_place_immediate(const tir::Stmt& st, const te::Buffer& e) {
      const auto* attr = st.as<tir::AttrNode>();
      if (attr == nullptr) return false;
      const auto calls = vta::detail::calls_in(attr->body);
      if (calls.size() != 3 || calls[1]->name != vta::intrin::alu || calls[1]->args.size() != 5 ||
          calls[1]->buffers.size() != 2)
        return false;
      const auto* use_imm = calls[1]->args[1].as<te::IntImmNode>();
      return use_imm != nullptr && use_imm->value == 1 && calls[1]->buffers[0].same_as(e) &&
             calls[1]->buffers[1].same_as(e);
    }
    // the block's statements that hold pass 3's chunk loop, with `kept` allocated around them
    // (and the kept chunks' spans before the loop, where pass 3 computes them so), and
    // block_masks loaded before the first pass's loop and allocated around them
    tir::Stmt visit_seq(const tir::SeqNode& n, const tir::Stmt& s) {
      tir::Stmt out = tir::StmtMutator<ChunkLoops>::visit_seq(n, s);
      const bool keeps = kept.defined() && !kept_allocated;
      const bool loads = block_masks.defined() && masks_dram.defined() && !block_placed;
      const auto* seq = out.as<tir::SeqNode>();
      if ((!keeps && !loads) || seq == nullptr) return out;
      // the first statement of seq that is (its allocations around) the chunk loop over `v`,
      // or statements that hold it (the resets before it, a sum's halving after it)
      const auto loop_at = [&](const ne::Var& v) {
        for (std::size_t k = 0; k < seq->seq.size(); ++k) {
          tir::Stmt st = seq->seq[k];
          while (const auto* a = st.as<tir::AllocateNode>()) st = a->body;
          const auto is_loop = [&](const tir::Stmt& x) {
            const auto* loop = x.as<tir::ForNode>();
            return loop != nullptr && loop->var.id() == v.id();
          };
          if (is_loop(st)) return k;
          if (const auto* around = st.as<tir::SeqNode>();
              around != nullptr && std::ranges::any_of(around->seq, is_loop))
            return k;
        }
        return seq->seq.size();
      };
      const std::size_t k = loop_at(chunks.back());
      if (k == seq->seq.size()) return out;
      auto parts = seq->seq;
      // (the first pass's loop, which writes the kept rows where it keeps the scores, among
      // them too)
      if (keeps && scores_kept && loop_at(chunks.front()) > k) return out;
      if (keeps) {
        kept_allocated = true;
        if (kept_spans) parts.insert(parts.begin() + static_cast<std::ptrdiff_t>(k), *kept_spans);
        // the kept rows' reset before pass 2's chunk loop, inside the allocation
        if (const std::size_t j = loop_at(chunks[sum_pass]); kept_reset && j < k) {
          parts.insert(parts.begin() + static_cast<std::ptrdiff_t>(j), *kept_reset);
          kept_reset_placed = true;
        }
      }
      // (at the block's start: where the first pass's loop is among these statements)
      if (loads && loop_at(chunks.front()) <= k) {
        block_placed = true;
        parts.insert(parts.begin(), block_load());
      }
      tir::Stmt body = tir::make_seq(parts);
      if (keeps) body = tir::make_allocate(kept, body);
      return loads && block_placed ? tir::make_allocate(block_masks, body) : body;
    }
    // A buffer other than x, of its size, that a fill of `value` may take in x's place for
    // the chunks a block does not see, stored from there: one reset once before the blocks
    // (once_buffers), whose rows may hold the reset's 0 whenever a chain starts, and so a fill
    // of 0. Its rows are then not those the last seen chunk's STORE reads, which the fill of x
    // waited for (the exponentials: the buffer of z for the one of e8). Nullopt where there is
    // none, or `value` is not 0.
    std::optional<te::Buffer> zero_spare(const te::Buffer& x, std::int64_t value) const {
      if (value != 0) return std::nullopt;
      for (const auto& b : once_buffers)
        if (!b.same_as(x) && b.scope() == x.scope() && b.dtype() == x.dtype() &&
            ne::equal(ne::simplify(b.size()), ne::simplify(x.size())))
          return b;
      return std::nullopt;
    }
    // The body's fill (before its load) moved to `buffer` and set to `value`: its reset, then
    // an ADD of `value` where that is not 0 or where a stored fill must end in an ALU op.
    // Nullopt where the body has no fill, or no ADD to set.
    std::optional<std::vector<tir::Stmt>> fill_with(const detail::ChunkBody& body,
                                                    const te::Buffer& buffer, std::int64_t value,
                                                    bool stored) const {
      const bool add = value != 0 || (stored && alu_fill);
      if (body.fill == 0 || (add && body.fill != 2)) return std::nullopt;
      const tir::BufferMap to{{body.load->buffers[0].get(), buffer}};
      std::vector<tir::Stmt> fill{tir::rewrite(body.parts[0], {}, to)};
      if (add) fill.push_back(detail::with_alu_arg(tir::rewrite(body.parts[1], {}, to), 2, value));
      return fill;
    }
    // A pass whose keys fit one chunk has no chunk loop (the lowering drops a loop of one
    // iteration): its body, chunk 0, gets the lane masks alone.
    tir::Stmt visit_allocate(const tir::AllocateNode& n, const tir::Stmt& s) {
      const auto body = lane_masks ? detail::ChunkBody::of(s) : std::nullopt;
      if (!body) return tir::StmtMutator<ChunkLoops>::visit_allocate(n, s);
      return allocated_around(*body,
                              tir::make_seq(guard_masks(body->parts, body->fill + 1, ne::Expr(0))));
    }
    tir::Stmt visit_for(const tir::ForNode& n, const tir::Stmt& s) {
      std::size_t pass = chunks.size();
      for (std::size_t k = 0; k < chunks.size(); ++k)
        if (n.var.id() == chunks[k].id()) pass = k;
      if (pass == chunks.size()) return tir::StmtMutator<ChunkLoops>::visit_for(n, s);
      const auto body = detail::ChunkBody::of(n.body);
      if (!body) return s;
      const ne::Expr c = n.var;
      // the fill only where the chunk may hold a key the query does not see: the last it sees
      // (those before it are loaded whole)
      const auto fill_end = body->parts.begin() + static_cast<std::ptrdiff_t>(body->fill);
      std::vector<tir::Stmt> parts = guard_masks(body->parts, body->fill + 1, c);
      // resets before the loop in place of one a chunk (its buffers then allocated around it)
      std::vector<tir::Stmt> hoisted;
      if (z_by_max(*body, parts, c, hoisted) && !normalize)
        z_down_by_multiply(*body, parts, c, hoisted);
      if (normalize && pass + 1 == chunks.size()) r_by_max(*body, parts, c, hoisted);
      const std::vector<tir::Stmt> guarded = parts;
      const auto trimmed = unseen_value[pass] ? trim_chain(*body, parts, c, *unseen_value[pass],
                                                           pass + 1 == chunks.size())
                                              : std::nullopt;
      // The max's halving keeps the chunk's maxima in the load's buffer, all of keys the block
      // sees: a last seen chunk after others reads the rows it does not load as the chunk before
      // left them, which cannot raise the max. So the max pass fills only where its first chunk
      // is its last, and its buffers live across its chunks (allocated around the loop).
      const bool max_pass = max_first && pass == 0;
      if (trimmed) {
        parts = *trimmed;
      } else if (body->fill > 0) {
        parts[0] =
            tir::make_if(max_pass ? c + seen <= 1 : c + 1 >= seen,
                         tir::make_seq(std::vector<tir::Stmt>(body->parts.begin(), fill_end)));
        parts.erase(parts.begin() + 1, parts.begin() + static_cast<std::ptrdiff_t>(body->fill));
      }
      std::vector<tir::Stmt> after;  // statements after the loop
      te::Buffer sums;               // allocated around the loop, where defined
      if (kept_count > 0 && chunks.size() == 3 && pass == sum_pass) {  // (the whole softmax's)
        if (!keep(guarded, chain_of(*body, guarded, c), c, body->allocated, trimmed.has_value(),
                  parts, hoisted, after, sums))
          kept_count = 0;
      } else if (kept_count > 0 && kept.defined() && pass + 1 == chunks.size()) {
        // (the halves: from their kept input, the chain trimmed where the kept rows were left
        // unfilled; the whole softmax: from the kept exponentials)
        kept_read = chunks.size() == 2
                        ? (trimmed || !kept_unfilled) &&
                              pass3_from_kept(guarded, chain_of(*body, guarded, c), c, parts)
                        : read_kept(guarded, chain_of(*body, guarded, c), n.var,
                                    allocated_in(*body), n.for_kind, n.min.as_int() == 0, parts);
      }
      te::Buffer odd;  // allocated around the loop, where defined
      if (normalize && !uniform && pass + 1 == chunks.size())
        parts = stored_by_turns(*body, parts, c, trimmed.has_value(), hoisted, odd);
      tir::Stmt inner = tir::make_seq(parts);
      // a chunk the query sees none of: its stored buffer filled with the constant, stored.
      // Only the first such chunk (c == seen) fills it; the chunks after it store the same rows
      // again, with no fill and so no wait for the store before to have read them. (Not where
      // the fill has no ADD to set: a constant other than 0 is computed.)
      std::optional<std::vector<tir::Stmt>> fill;
      if (pass + 1 == chunks.size() && constant && body->store != nullptr)
        fill = fill_with(*body, body->store->buffers[0], *constant, true);
      if (fill) {
        const std::vector<tir::Stmt> unseen{tir::make_if(c <= seen, tir::make_seq(*fill)),
                                            body->parts.back()};
        tir::Stmt unseen_stmt = tir::make_seq(unseen);
        const te::Buffer x = body->store->buffers[0];
        if (odd.defined()) {
          MoveBuffers to_odd;
          to_odd.moves = {{x, odd, std::nullopt}};
          unseen_stmt = tir::make_if(ne::simplify(ne::floormod(seen, 2) == 0), unseen_stmt,
                                     to_odd.visit(unseen_stmt));
        } else if (const auto spare = zero_spare(x, *constant)) {
          MoveBuffers to_spare;
          to_spare.moves = {{x, *spare, std::nullopt}};
          unseen_stmt = to_spare.visit(unseen_stmt);
        }
        inner = tir::make_if(c < seen, inner, unseen_stmt);
      }
      ++rewritten;
      // the loop from `start`: its buffers allocated inside, or around it and the resets
      // before it
      const auto loop = [&](const ne::Expr& start, const ne::Expr& extent) {
        const bool around = !hoisted.empty() || !after.empty() || odd.defined();
        const tir::Stmt for_loop = tir::make_for(n.var, start, extent, n.for_kind,
                                                 around ? inner : allocated_around(*body, inner));
        if (!around) return for_loop;
        auto stmts = hoisted;
        stmts.push_back(for_loop);
        stmts.insert(stmts.end(), after.begin(), after.end());
        tir::Stmt all = allocated_around(*body, tir::make_seq(std::move(stmts)));
        if (odd.defined()) all = tir::make_allocate(odd, all);
        return sums.defined() ? tir::make_allocate(sums, all) : all;
      };
      // (the first pass loads the input that the last computes from: the max's scores, or the
      // normalization's exponentials for its sum)
      if (max_pass || (normalize && pass == 0 && pass + 1 < chunks.size())) {
        std::vector<tir::Stmt> in_loop, before;
        te::Buffer rows;
        if (scores_in_kept(*body, guarded, c, in_loop, before, after, rows)) {
          before.insert(before.begin(), hoisted.begin(), hoisted.end());
          before.push_back(
              tir::make_for(n.var, n.min, n.extent, n.for_kind, tir::make_seq(in_loop)));
          before.insert(before.end(), after.begin(), after.end());
          return tir::make_allocate(rows, allocated_around(*body, tir::make_seq(before)));
        }
      }
      if (max_pass)
        return allocated_around(*body, tir::make_for(n.var, n.min, n.extent, n.for_kind, inner));
      if (kept_read && kept_spans && pass + 1 == chunks.size()) {
        // pass 3 past the kept chunks the block sees, which its spans computed (no iteration
        // left empty: a loop memo records none, and gives up on the loop after a few)
        const ne::Expr start = ne::simplify(ne::min(ne::Expr(kept_count), seen));
        return loop(start, ne::simplify(n.extent - start));
      }
      return loop(n.min, n.extent);
    }
  } loops;
  loops.chunks = chunks;
  loops.seen = seen;
  // (a block skips chunks only where it may compute fewer keys than N: not in uniform tiles)
  const bool skips = detail::softmax_skips(shape_);
  if (skips) loops.constant = detail::epilogue_of_zero(epilogue_, env_.config);
  loops.lane_masks = detail::softmax_lane_masks(shape_);
  loops.uniform = detail::softmax_uniform(shape_);
  loops.groups = shape_.groups;
  loops.most = detail::softmax_mask_rows(shape_).masks;
  loops.chunk = chunk_;
  loops.tile = env_.acc_tile();
  const auto widest = [&](runtime::Form f, runtime::Field x) {
    return runtime::field_limit(env_.config.layout().pos(f, x).width);
  };
  loops.max_loop = widest(runtime::Form::Gemm, runtime::Field::iter_out);
  loops.max_rows = std::min(widest(runtime::Form::Alu, runtime::Field::iter_out),
                            widest(runtime::Form::Mem, runtime::Field::x_size));
  loops.keys = shape_.keys;
  loops.keys_seen = detail::softmax_visible(shape_, product);
  loops.alu_fill = env_.config.variant.store_reads_out_sram;
  loops.max_first = max_total_.defined();
  loops.normalize = shape_.part == IntegerSoftmaxPart::Normalize;
  loops.plain = epilogue_.steps.empty();
  // the chunk loops in skip_masked_work's order: the max's chain ends in a halving of keys
  // every one of which counts (its fill of -32768 stays), the sum's in one that adds 0. (Where
  // the softmax is not causal, the lowering's chain already ends at the keys. In uniform tiles
  // the keys a block computes are N, and the last chunk's chains are trimmed to them.)
  const bool causal = detail::softmax_causal(shape_);
  if (max_total_.defined()) loops.unseen_value.emplace_back();
  if (sum_total_.defined())
    loops.unseen_value.push_back(causal ? std::optional<std::int64_t>(0) : std::nullopt);
  loops.unseen_value.push_back(causal ? detail::epilogue_of_zero(epilogue_, env_.config)
                                      : std::nullopt);
  if (loops.lane_masks) {
    loops.window = detail::softmax_mask_window(shape_, product);
    loops.mask_first = detail::softmax_mask_first(shape_, product);
  }
  if (detail::softmax_block_masks(shape_, chunk_))
    loops.block_masks =
        te::make_buffer(masks_.name() + ".block", env_.acc_dtype,
                        {ne::Expr(2 * loops.most * env_.acc_tile())}, env_.acc_scope);
  loops.sum_pass = max_total_.defined() ? 1 : 0;
  loops.reset_once = shape_.part == IntegerSoftmaxPart::Exp;
  loops.kept_count = detail::kept_chunks(env_, shape_, chunk_);
  loops.all_kept = loops.kept_count >= detail::softmax_chunks(shape_, chunk_);
  auto unvisited = loops;
  tir::PrimFunc out = f;
  out.body = loops.visit(f.body);
  if (loops.block_masks.defined() && !loops.block_placed) {
    // no block statements before the passes' loops: each chunk loads the masks it applies
    unvisited.block_masks = te::Buffer();
    loops = unvisited;
    out.body = loops.visit(f.body);
  }
  if (loops.kept_reset && !loops.kept_reset_placed) {
    // no place for the kept rows' reset beside pass 3's loop: each chunk resets its own
    loops = unvisited;
    loops.hoist_reset = false;
    out.body = loops.visit(f.body);
  }
  if (loops.kept.defined() && !loops.kept_read && loops.kept_unfilled) {
    // a half's pass 3 could not trim its chain (a fill it cannot write: the normalization's
    // reset where an epilogue makes the constant other than 0): the kept rows filled
    loops = unvisited;
    loops.may_unfill = false;
    out.body = loops.visit(f.body);
  }
  if (loops.kept.defined() && (!loops.kept_read || !loops.kept_allocated)) {
    // pass 3 did not take what pass 2 kept: the passes as they were
    loops = unvisited;
    loops.kept_count = 0;
    out.body = loops.visit(f.body);
  }
  if (!loops.once_buffers.empty())
    out.body = detail::before_blocks(out.body, loops.once_buffers, loops.once_resets);
  return loops.rewritten > 0 || loops.guarded > 0 ? out : f;
}

DLAVM_INLINE std::int64_t IntegerSoftmaxKernel::kept_chunks() const {
  return detail::kept_chunks(env_, shape_, chunk_);
}

DLAVM_INLINE std::vector<te::NDArray> IntegerSoftmaxKernel::constants() const {
  std::vector<te::NDArray> out;
  if (masks_.defined()) out.push_back(mask_data());
  if (weights_.defined()) {
    // acc[o] += inp[i] x w[o][i]: diag(-multiplier), or the identity for the sum; then a tile a
    // constant added, every row its weights; then the input row they are added against
    te::NDArray w(env_.wgt_dtype, {*weights_.shape()[0].as_int(), env_.block_in});
    auto* at = w.data().data();
    if (scores_by_gemm_ || sums_by_gemm_) {
      const std::int64_t diagonal =
          sums_by_gemm_ ? 1 : -fewest_fraction_bits(shape_.fixed).multiplier;
      for (std::int64_t o = 0; o < env_.block_out; ++o) at[o * env_.block_in + o] = diagonal;
      at += env_.block_out * env_.block_in;
    }
    for (const std::int64_t c : gemm_adds_) {
      const auto row = *detail::gemm_add_weights(c, env_.block_in);
      for (std::int64_t o = 0; o < env_.block_out; ++o, at += env_.block_in)
        std::ranges::copy(row, at);
    }
    if (!gemm_adds_.empty()) {
      std::fill_n(at, env_.block_in - 1, detail::kAddUnit);
      at[env_.block_in - 1] = 1;
    }
    out.push_back(std::move(w));
  }
  return out;
}

DLAVM_INLINE te::NDArray IntegerSoftmaxKernel::mask_data() const {
  // rows that leave a key as it is, then row neutral + d for a key d after the last its first
  // group sees: the lanes of the groups that do not see it (0 to min(d, G - 1)) masked
  // (detail::softmax_mask_rows)
  const auto [neutral, masks] = detail::softmax_mask_rows(shape_);
  te::NDArray m(env_.acc_dtype, {neutral + masks, env_.batch, env_.block_out});
  auto d = m.data();
  const bool normalize = shape_.part == IntegerSoftmaxPart::Normalize;
  const std::int64_t as_is = normalize ? 1 : 0;
  for (std::int64_t i = 0; i < neutral + masks; ++i) {
    // the groups masked (none in the rows before the masks)
    const std::int64_t groups = std::min(i - neutral + 1, shape_.groups);
    for (std::int64_t l = 0; l < env_.block_out; ++l)
      d[static_cast<std::size_t>(i * env_.batch * env_.block_out + l)] =
          l < groups * shape_.lanes ? (normalize ? 0 : -32768) : as_is;
  }
  return m;
}

// (the whole exponential's first shift is by z - 8, from -4 to 15: detail::exponential_stages)
DLAVM_INLINE std::optional<std::string> check_softmax_shifts(const vta::Env& env,
                                                             IntegerSoftmaxPart part) {
  if (part != IntegerSoftmaxPart::Whole ||
      env.config.variant.shr_amount != vta::ShrAmount::UnsignedLow)
    return std::nullopt;
  return fmt::format(
      "the whole softmax's exponential shifts by amounts from -4 to 15, which the {} design reads "
      "unsigned (a negative one as a shift right)",
      env.config.variant.name());
}

DLAVM_INLINE std::optional<std::string> check_softmax_epilogue(const Epilogue& epilogue) {
  if (epilogue.int32_result)
    return std::string("the probabilities are stored as int8; an int32 result is not");
  for (const auto& step : epilogue.steps)
    if (step.kind == EpilogueStep::Kind::AddChannel || step.kind == EpilogueStep::Kind::AddTensor)
      return std::string(
          "VTA applies immediate steps (add, shift, max, min) to the probabilities; an operand "
          "read from DRAM (a bias, a residual) is not");
  return std::nullopt;
}

DLAVM_INLINE std::optional<std::string> check_chunk(const vta::Env& env,
                                                    const IntegerSoftmaxShape& shape,
                                                    std::int64_t chunk) {
  if (chunk < 2 || !std::has_single_bit(static_cast<std::uint64_t>(chunk)))
    return fmt::format("a chunk of {} keys is not a power of two of at least 2", chunk);
  const auto keys = ne::bounds(shape.keys).max;
  if (keys > runtime::kIntegerSoftmaxMaxExtent)
    return fmt::format("{} keys (at most {}); the sum of the exponentials holds at most {}",
                       shape.keys, keys, runtime::kIntegerSoftmaxMaxExtent);
  const auto f = footprint(env, shape, chunk);
  if (f.acc > env.config.acc_depth())
    return fmt::format(
        "a chunk of {} keys needs {} accumulator entries for its passes' buffers, it has {}", chunk,
        f.acc, env.config.acc_depth());
  return std::nullopt;
}

DLAVM_INLINE SramFootprint footprint(const vta::Env& env, const IntegerSoftmaxShape& shape,
                                     std::int64_t chunk) {
  SramFootprint f = detail::pass_footprint(shape, chunk);
  f.acc += detail::kept_chunks(env, shape, chunk) * chunk;
  const bool rows_by_gemm = detail::softmax_scores_by_gemm(env, shape, chunk) ||
                            detail::softmax_sums_by_gemm(env, shape, chunk);
  const auto adds = detail::softmax_adds_by_gemm(env, shape, chunk)
                        ? static_cast<std::int64_t>(
                              detail::softmax_gemm_adds(env, shape.part, shape.fixed).size())
                        : 0;
  f.inp = (rows_by_gemm ? chunk : 0) + (adds > 0 ? 1 : 0);
  f.wgt = (rows_by_gemm ? 1 : 0) + adds;
  return f;
}

namespace detail {

inline SramFootprint pass_footprint(const IntegerSoftmaxShape& shape, std::int64_t chunk) {
  // A block's rows, live through its three passes: the 9 one-entry rows the storage pass keeps
  // of the max, the exponent's rows, the sum and the division (the max and the sum running
  // rows, updated a chunk at a time; each quotient bit in the rows of the bit before). Inside,
  // the largest pass is the third: the load and four more chunk buffers (the others computed
  // in place, tir::reuse_inplace). Masks (lane groups, uniform tiles): the mask rows beside the
  // load (softmax_mask_entries). The exponentials alone: three rows of the block and three chunk
  // buffers in pass 3, two of them live through pass 1 as well; the normalization: the division's 4
  // rows and two chunk buffers, three where pass 3 stores by turns (measured from the lowering,
  // tests/graph).
  SramFootprint f;
  switch (shape.part) {
    case IntegerSoftmaxPart::Whole:
      f.acc = 9 + 4 * chunk;
      break;
    case IntegerSoftmaxPart::Exp:
      // (z and z_down, reset once before the blocks, live through pass 1 too: beside its load
      // and, not in uniform tiles, its running rows, narrowed to 2 kNarrowRows)
      f.acc = 3 + 3 * chunk;
      if (!softmax_uniform(shape) && softmax_chunks(shape, chunk) > 1)
        f.acc += narrowed_rows(chunk);
      break;
    case IntegerSoftmaxPart::Normalize:
      // (not in uniform tiles, the stored buffer's second, skip_masked's stored_by_turns; the
      // packed division's rows: the sum, the pairs [B, A + B] and of the candidates, the high
      // bits, and the kernel's constant rows, B + 1, 2 U's first value and the pair's bounds)
      f.acc = (softmax_packed_division(shape) ? 10 : 4) +
              (softmax_uniform(shape) || softmax_chunks(shape, chunk) <= 1 ? 2 : 3) * chunk;
      // (a causal one's stored buffers live through pass 2 too, beside its running rows:
      // stored_at_block_level)
      if (softmax_skips(shape) && softmax_chunks(shape, chunk) > 1) f.acc += narrowed_rows(chunk);
      break;
  }
  f.acc += softmax_mask_entries(shape, chunk);
  if (detail::softmax_block_masks(shape, chunk))
    f.acc += 2 * detail::softmax_mask_rows(shape).masks;
  return f;
}

inline std::int64_t kept_chunks(const vta::Env& env, const IntegerSoftmaxShape& shape,
                                std::int64_t chunk) {
  const std::int64_t chunks = softmax_chunks(shape, chunk);
  // (the halves keep the input their first pass loads, not in uniform tiles: skip_masked's
  // scores_in_kept)
  const bool keeps = shape.part == IntegerSoftmaxPart::Whole || !softmax_uniform(shape);
  if (!keeps || chunks <= 1) return 0;
  const std::int64_t free = env.config.acc_depth() - pass_footprint(shape, chunk).acc;
  return std::clamp<std::int64_t>(free / chunk, 0, chunks);
}

}  // namespace detail

DLAVM_INLINE KnobSpace knob_space(const vta::Env& env, const IntegerSoftmaxShape& shape) {
  std::vector<std::int64_t> chunks;
  // (a key count beyond what the sum holds fails every chunk's check)
  const auto most = std::bit_ceil(static_cast<std::uint64_t>(
      std::clamp<std::int64_t>(ne::bounds(shape.keys).max, 2, runtime::kIntegerSoftmaxMaxExtent)));
  for (std::uint64_t c = 2; c <= most; c *= 2) chunks.push_back(static_cast<std::int64_t>(c));
  KnobSpace space;
  space.knobs = {{"keys", std::move(chunks)}};
  space.check = [env, shape](std::span<const std::int64_t> v) {
    return check_chunk(env, shape, v[0]);
  };
  // Cycles a key and lane tile costs where a block's queries see it (the exponentials, trimmed
  // to those keys) and where its chunk is computed whole (the max, the fills, the sums'
  // halvings), and a chunk iteration, fitted to the cycle model's counts of each part at 2,048
  // causal keys in the chunks of 32 to 512 that fit (docs/performance.md: within 0.2% of each;
  // the halves', with no kept chunks, refitted after the normalization stored by turns and the
  // exponentials' z_down became a multiply), over the runs detail::SoftmaxRuns averages.
  struct Cost {
    double seen, padded, chunk;
  };
  const Cost cost = shape.part == IntegerSoftmaxPart::Whole ? Cost{91.88, 15.77, 597.6}
                    : shape.part == IntegerSoftmaxPart::Exp ? Cost{27.84, 11.25, 253.0}
                                                            : Cost{2.51, 13.53, 156.5};
  // The whole softmax's kept chunks (detail::kept_chunks) save pass 3's exponential and, not
  // in uniform tiles, pass 2's load (pass 1 keeps the scores; the halves' save pass 3's load,
  // and its masks, a chunk's fixed cost more than a key's): cycles a key seen and a chunk
  // iteration there, and cycles a block costs a key of a chunk where they are kept (the running
  // rows' start and halving, where the exponentials are computed in the kept rows: not in
  // uniform tiles; charged also where the kept rows' reset cannot be hoisted and they are
  // copied, which the fit does not cover), fitted likewise to the cycle model's counts with and
  // without them (docs/performance.md). In uniform tiles (a decode step's
  // stream, whose kept chunks copy their exponentials) the fit of the copies, from before
  // z's copies lost their resets in the chunk loops (a kept key saves about 2 cycles less
  // since).
  struct Kept {
    double seen, chunk, rows;
  };
  const Kept kept = shape.part == IntegerSoftmaxPart::Normalize ? Kept{2.17, 68.69, 1.17}
                    : shape.part == IntegerSoftmaxPart::Exp     ? Kept{2.20, 66.87, 2.28}
                    : detail::softmax_uniform(shape)            ? Kept{39.28, 215.9, 0}
                                                                : Kept{42.31, 378.7, 5.86};
  const detail::SoftmaxRuns runs(shape);
  const double seen = runs.entries(1);
  // The halves' fits, corrected (not refitted) for changes after them: their running rows, a
  // chunk's size in the fits, narrowed to 2 kNarrowRows (detail::narrow_running_rows), so the
  // block's rows' term counts those; the exponentials' z and z_down reset once before the
  // blocks, each block but one saves two resets of a chunk's rows (a cycle a row). (The whole
  // softmax's fit is kept as it was: with its rows' term so corrected it takes chunks up to
  // 2.3% slower on the cycle model, docs/performance.md.)
  const bool exponentials = shape.part == IntegerSoftmaxPart::Exp;
  const double blocks =
      static_cast<double>(std::max<std::int64_t>(ne::bounds(shape.products).max, 1));
  const double resets = exponentials ? 2.0 * (1.0 - 1.0 / blocks) : 0.0;
  const bool narrowed = shape.part != IntegerSoftmaxPart::Whole;
  const auto cycles = [&](std::int64_t chunk) {
    const double entries = runs.entries(chunk);
    const std::int64_t k = detail::kept_chunks(env, shape, chunk);
    const double kept_seen =
        runs.average([&](std::int64_t keys) { return std::min(keys, k * chunk); });
    const double kept_chunks =
        runs.average([&](std::int64_t keys) { return std::min(ne::ceil_div(keys, chunk), k); });
    return seen * cost.seen + entries * cost.padded +
           entries / static_cast<double>(chunk) * cost.chunk - kept_seen * kept.seen -
           kept_chunks * kept.chunk +
           (k > 0 ? static_cast<double>(narrowed ? detail::narrowed_rows(chunk) : chunk) * kept.rows
                  : 0.0) -
           resets * static_cast<double>(std::min(chunk, runs.keys));
  };
  // For the normalization, chunks within the fit's 2% of the fewest cycles are ties, and the
  // largest of them is estimated at the least: a stream in fewer, larger chunks has fewer
  // instructions, which a decode step rewrites every position, and its few ALU cycles a key
  // leave an instruction's issue a larger share (the gallery's layer with the halves: 128 keys
  // for the normalization, 64 estimated 0.4% above over its runs, a tie; docs/performance.md).
  // The whole softmax takes the least estimate: its kept chunks save, at fewer keys, more than
  // the fit at 2,048 says (prefills of 256 queries after 0 to 256 keys: 128 keys 4.9% slower
  // than 64 on the cycle model, estimated 2.4% slower). The exponentials take the smallest
  // chunk within 0.5% of the least: with the two corrections above, the gallery's layer
  // estimates 256 keys 0.24% below 128 over its runs, where 128 takes 0.8% fewer cycles in the
  // 2,048-token prefill and 0.08% fewer over prefills of 2,048 queries after 0, 1,024 and 2,048
  // keys (docs/performance.md).
  const double ties = shape.part == IntegerSoftmaxPart::Normalize ? 1.02
                      : exponentials                              ? 1.005
                                                                  : 1.0;
  std::vector<std::pair<std::int64_t, double>> fitting;  // each chunk that fits, its cycles
  for (const auto chunk : space.knobs[0].values)
    if (!check_chunk(env, shape, chunk)) fitting.emplace_back(chunk, cycles(chunk));
  double least = std::numeric_limits<double>::infinity();
  for (const auto& [chunk, c] : fitting) least = std::min(least, c);
  std::int64_t preferred = 0;
  for (const auto& [chunk, c] : fitting)
    if (c <= ties * least && (preferred == 0 || !exponentials)) preferred = chunk;
  const double above = std::nextafter(least, std::numeric_limits<double>::infinity());
  // (the estimate is asked of chunks that pass the check, all of them in `fitting`)
  space.estimate = [fitting, preferred, least, above](std::span<const std::int64_t> v) {
    if (v[0] == preferred) return least;
    const auto known = std::ranges::find(fitting, v[0], &std::pair<std::int64_t, double>::first);
    return known != fitting.end() ? std::max(known->second, above)
                                  : std::numeric_limits<double>::infinity();
  };
  return space;
}

DLAVM_INLINE ne::Expr softmax_traffic(const vta::Env& env, const IntegerSoftmaxShape& shape) {
  const std::int64_t moves = shape.part == IntegerSoftmaxPart::Whole ? 4 : 3;
  return ne::simplify(shape.products * shape.keys *
                      (moves * detail::lane_tiles(env, shape) * env.batch * env.block_out));
}

namespace detail {

inline std::vector<te::Tensor> part_stage_list(const vta::Env& env, IntegerSoftmaxPart part,
                                               runtime::IntegerExp fixed, std::int64_t keys) {
  // the stages over a symbolic key count, whose reductions are then one stage each (a window
  // reduction), and whose other stages have a row a key or one a block
  const auto n = ne::var("keys", 1, runtime::kIntegerSoftmaxMaxExtent);
  const auto scores = te::placeholder({n, env.block_out}, env.acc_dtype, "floor_s");
  std::vector<te::Tensor> stages;
  SoftmaxStageWriter w("floor", stages);
  // (one block: a leading dim of 1, which the kernel's constant rows, once for every block,
  // do not have)
  w.blocks({1}, n, env.block_out);
  part_stages(w, w.wrap(scores), part, fixed, keys);
  return stages;
}

}  // namespace detail

DLAVM_INLINE SoftmaxWork softmax_floor(const vta::Env& env, IntegerSoftmaxPart part,
                                       runtime::IntegerExp fixed, std::int64_t keys) {
  if (keys < 1) raise<ValueError>("softmax_floor: a block of {} keys; it needs 1 at least", keys);
  // (where the GEMM core may form t0 = -s * multiplier, sum the normalization's exponentials
  // or add a constant to a key's value, a GEMM micro-op a key in place of an ALU one, the
  // input loaded by the load module: the least chunk's kernel does; the exponentials still
  // load into the accumulator, for the probabilities)
  const IntegerSoftmaxShape least{.keys = keys, .fixed = fixed, .part = part};
  const bool by_gemm = detail::softmax_scores_by_gemm(env, least, 2);
  const bool sums_by_gemm = detail::softmax_sums_by_gemm(env, least, 4);
  const auto adds = detail::softmax_adds_by_gemm(env, least, 2)
                        ? detail::softmax_gemm_adds(env, part, fixed)
                        : std::vector<std::int64_t>{};
  std::int64_t per_key = 0, reductions = 0, per_block = 0, gemm = 0;
  for (const auto& t : detail::part_stage_list(env, part, fixed, keys)) {
    const auto added = detail::added_constant(t);
    if (!t.op()->reduce_axis.empty())
      ++(sums_by_gemm ? gemm : reductions);
    else if (t.ndim() == 2)
      continue;  // the kernel's constant rows: none a block
    else if (!detail::per_key_stage(t))
      per_block += *t.shape()[t.ndim() - 2].as_int();
    else if ((by_gemm && t.name().ends_with(".t0")) ||
             (added && std::ranges::find(adds, *added) != adds.end()))
      ++gemm;
    else
      ++per_key;
  }
  return {.alu_uops = (per_key * keys) + (reductions * (keys - 1)) + per_block,
          .acc_load_bytes = by_gemm ? 0 : keys * env.batch * env.block_out,
          .gemm_uops = gemm * keys};
}

}  // namespace dlavm::graph
