// Converters of element-wise operators: Add, Mul, Relu, Clip, Softmax.
#include <dlavm/ne/bounds.hpp>

#include <fmt/ranges.h>

#include "common.hpp"
#include <limits>

namespace dlavm::onnx::detail {

namespace {

// Clip's bounds as given (attributes before version 11, inputs since), or the dtype's range. A
// bound computed at run time (a spectrogram clamped to its maximum less 80 dB) is a maximum or
// minimum with it: min(max(x, lo), hi) is also ONNX's rule for lo > hi (every value hi).
Outs clip_between(Importer& im, const Node& n, bool from_inputs) {
  const auto x = im.expr(n, 0);
  const DType dt = im.type_of(x).dtype;
  double lo = dt.is_float() ? -std::numeric_limits<double>::infinity()
                            : static_cast<double>(dt.min_value());
  double hi =
      dt.is_float() ? std::numeric_limits<double>::infinity() : static_cast<double>(dt.max_value());
  if (!from_inputs) {
    lo = attr_float(im, n, "min", static_cast<float>(lo));
    hi = attr_float(im, n, "max", static_cast<float>(hi));
  } else {
    const auto computed = [&](int k) {
      return Importer::has_input(n, k) && im.input(n, k).constant == nullptr &&
             !im.input(n, k).dims;
    };
    if (computed(1) || computed(2)) {
      graph::Expr y = x;
      for (const int k : {1, 2}) {
        if (!Importer::has_input(n, k)) continue;
        const graph::Expr bound = im.expr(n, k);
        const auto t = im.type_of(bound);
        ne::Expr count(1);
        for (const auto& d : t.shape) count = count * d;
        if (!ne::can_prove(ne::simplify(count) == 1))
          raise<ShapeError>("its {} (input {} '{}') has shape [{}]; a bound is one value",
                            k == 1 ? "min" : "max", k, n.input(k), fmt::join(t.shape, ", "));
        const graph::Expr scalar =
            t.shape.empty() ? bound : graph::reshape(bound, {.newshape = {}});
        y = k == 1 ? graph::maximum(y, scalar) : graph::minimum(y, scalar);
      }
      return {y};
    }
    if (Importer::has_input(n, 1)) lo = scalar_of(im.constant(n, 1, "min"), "min");
    if (Importer::has_input(n, 2)) hi = scalar_of(im.constant(n, 2, "max"), "max");
  }
  if (lo > hi) {
    // ONNX: every value becomes max when min > max
    lo = hi;
  }
  return {graph::clip(x, {.lo = lo, .hi = hi})};
}

}  // namespace

namespace convert {

Outs relu(Importer& im, const Node& n) { return {graph::relu(im.expr(n, 0))}; }

Outs add_v1(Importer& im, const Node& n) {
  refuse_legacy_broadcast(im, n);
  return add(im, n);
}
Outs add(Importer& im, const Node& n) {
  if (auto dims = binary_dims(im, n, ne::Kind::Add)) return *dims;
  return {graph::add(im.expr(n, 0), im.expr(n, 1))};
}
Outs mul_v1(Importer& im, const Node& n) {
  refuse_legacy_broadcast(im, n);
  return mul(im, n);
}
Outs mul(Importer& im, const Node& n) {
  if (auto dims = binary_dims(im, n, ne::Kind::Mul)) return *dims;
  return {graph::mul(im.expr(n, 0), im.expr(n, 1))};
}

// Computed shapes fold (int64 constants too, exact), other operands are the graph's sub and
// div.
Outs sub(Importer& im, const Node& n) {
  if (auto dims = binary_dims(im, n, ne::Kind::Sub)) return *dims;
  return sub_tensors(im, n);
}
Outs div(Importer& im, const Node& n) {
  if (auto dims = binary_dims(im, n, ne::Kind::FloorDiv)) return *dims;
  return div_tensors(im, n);
}

Outs clip_v1(Importer& im, const Node& n) { return clip_between(im, n, false); }
Outs clip(Importer& im, const Node& n) { return clip_between(im, n, true); }

// Versions 1 and 11: over the dims from axis (default 1) on, as one (the input flattened to
// 2-D).
Outs softmax_v1(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  const auto type = im.type_of(x);
  const auto rank = static_cast<std::int64_t>(type.ndim());
  const std::int64_t axis = normalize_axis(attr_int(im, n, "axis", 1), rank, "axis");
  if (axis == rank - 1) return {graph::softmax(x, {.axis = axis})};
  std::vector<std::int64_t> back;
  for (const auto& d : type.shape) back.push_back(static_dim(d, "Softmax before version 13"));
  const auto flat = graph::flatten(x, {.axis = axis});
  return {graph::reshape(graph::softmax(flat, {.axis = 1}), {.newshape = back})};
}

Outs softmax(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  const auto rank = static_cast<std::int64_t>(im.type_of(x).ndim());
  return {graph::softmax(x, {.axis = normalize_axis(attr_int(im, n, "axis", -1), rank, "axis")})};
}

}  // namespace convert

}  // namespace dlavm::onnx::detail
