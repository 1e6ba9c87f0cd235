// Converters of convolutions, pooling, products and normalizations: Conv, Gemm, MatMul,
// MaxPool, AveragePool, GlobalAveragePool, BatchNormalization, LayerNormalization.
#include <dlavm/ne/structural.hpp>

#include <fmt/ranges.h>

#include "common.hpp"
#include <algorithm>
#include <array>

namespace dlavm::onnx::detail {

namespace {

// Pads of a 2-D window op: ONNX's `pads` ([top, left, bottom, right]) or auto_pad, as the
// host ops' (top, left, bottom, right).
// `one_d`: a 1-D window (its pads [begin, end]) on x viewed as a height-1 image.
std::array<std::int64_t, 4> window_pads(Importer& im, const Node& n, const graph::Expr& x,
                                        std::array<std::int64_t, 2> kernel,
                                        std::array<std::int64_t, 2> strides, bool one_d = false) {
  const std::string auto_pad = attr_string(im, n, "auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    auto pads =
        attr_ints(im, n, "pads",
                  one_d ? std::vector<std::int64_t>{0, 0} : std::vector<std::int64_t>{0, 0, 0, 0});
    if (pads.size() != (one_d ? 2u : 4u))
      unsupported(fmt::format("pads of {} entries ({}: {})", pads.size(), one_d ? "1-D" : "2-D",
                              one_d ? 2 : 4));
    for (auto p : pads)
      if (p < 0) unsupported(fmt::format("a negative pad {}", p));
    if (one_d) pads = {0, pads[0], 0, pads[1]};
    return {pads[0], pads[1], pads[2], pads[3]};
  }
  if (auto_pad == "VALID") return {0, 0, 0, 0};
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    raise<ValueError>("auto_pad '{}' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", auto_pad);
  // SAME: the output has ceil(in / stride) positions, the pad split evenly, the odd one at
  // the end (UPPER) or the start (LOWER)
  const auto type = im.type_of(x);
  if (type.ndim() != 4)
    unsupported(fmt::format("auto_pad {} on an input of rank {}: only 2-D windows are handled",
                            auto_pad, type.ndim()));
  std::array<std::int64_t, 4> out{};
  for (int k = 0; k < 2; ++k) {
    // (strides are at least 1: pair_attr; (o - 1) * stride - in is in [-stride, 0), so no
    // step overflows)
    const std::int64_t in = static_dim(type.shape[2 + k], "auto_pad " + auto_pad);
    const std::int64_t o = in / strides[k] + (in % strides[k] != 0 ? 1 : 0);
    const std::int64_t total = std::max<std::int64_t>((o - 1) * strides[k] - in + kernel[k], 0);
    const std::int64_t small = total / 2, large = total - small;
    out[k] = auto_pad == "SAME_UPPER" ? small : large;
    out[2 + k] = auto_pad == "SAME_UPPER" ? large : small;
  }
  return out;
}

// A window attribute of a 2-D node, or of a 1-D one (`one_d`: one entry, returned as the
// width of a height-1 window).
std::array<std::int64_t, 2> pair_attr(Importer& im, const Node& n, std::string_view name,
                                      std::array<std::int64_t, 2> fallback, bool one_d = false) {
  const auto v = attr_ints(im, n, name,
                           one_d ? std::vector<std::int64_t>{fallback[1]}
                                 : std::vector<std::int64_t>{fallback[0], fallback[1]});
  if (v.size() != (one_d ? 1u : 2u))
    unsupported(
        fmt::format("{} of {} entries for a {} window", name, v.size(), one_d ? "1-D" : "2-D"));
  for (auto x : v)
    if (x < 1 && find_attr(n, name) != nullptr)
      raise<ValueError>("{} = [{}]: window sizes and strides are at least 1", name,
                        fmt::join(v, ", "));
  return one_d ? std::array<std::int64_t, 2>{1, v[0]} : std::array<std::int64_t, 2>{v[0], v[1]};
}

void require_unit(Importer& im, const Node& n, std::string_view name) {
  for (auto d : attr_ints(im, n, name, {}))
    if (d != 1)
      unsupported(fmt::format("{} = [{}]", name, fmt::join(attr_ints(im, n, name, {}), ", ")));
}

// A 1-D pool runs as a 2-D one over its input viewed as [N, C, 1, L].
Outs pool(Importer& im, const Node& n, bool max) {
  auto x = im.expr(n, 0);
  const std::size_t rank = im.type_of(x).ndim();
  if (rank != 3 && rank != 4)
    unsupported(fmt::format("an input of rank {}: only 1-D and 2-D pooling are handled", rank));
  const bool one_d = rank == 3;
  if (one_d) x = graph::reshape(x, {.newshape = {0, 0, 1, -1}});
  if (n.output_size() > 1 && !n.output(1).empty()) unsupported("the Indices output");
  if (attr_int(im, n, "storage_order", 0) != 0) unsupported("storage_order = 1");
  require_unit(im, n, "dilations");
  const auto kernel = pair_attr(im, n, "kernel_shape", {0, 0}, one_d);
  const auto strides = pair_attr(im, n, "strides", {1, 1}, one_d);
  auto pads = window_pads(im, n, x, kernel, strides, one_d);
  const bool include_pad = !max && attr_int(im, n, "count_include_pad", 0) != 0;
  if (attr_int(im, n, "ceil_mode", 0) != 0) {
    // ceil: the last window may overhang the padded input; padding that the window does not
    // count (max ignores it, an average without count_include_pad too) says the same
    if (include_pad) unsupported("ceil_mode = 1 with count_include_pad = 1");
    const auto type = im.type_of(x);
    for (int k = 0; k < 2; ++k) {
      const std::int64_t span =
          window_sum({static_dim(type.shape[2 + k], "ceil_mode"), pads[k], pads[2 + k], -kernel[k]},
                     "ceil_mode's window");
      // the last window's index, out - 1: ceil(span / stride)
      const std::int64_t last =
          window_sum({span, strides[k], -1}, "ceil_mode's window") / strides[k];
      pads[2 + k] = window_sum({pads[2 + k], last * strides[k], -span}, "ceil_mode's pad");
    }
  }
  const host::Pool2dParams p{
      .pool_size = kernel, .strides = strides, .padding = pads, .count_include_pad = include_pad};
  auto y = max ? graph::max_pool2d(x, p) : graph::avg_pool2d(x, p);
  if (one_d) y = graph::reshape(y, {.newshape = {0, 0, -1}});
  return {y};
}

// The input viewed as 2-D: [N, C, L] as [N, C, 1, L] for a 1-D node (its weight likewise).
graph::Expr as_image(const graph::Expr& e) {
  return graph::reshape(e, {.newshape = {0, 0, 1, -1}});
}

// ConvTranspose's attributes as conv2d_transpose's; the pads from output_shape or auto_pad
// (SAME: an output of in * stride) split as ONNX says: the odd one at the end for SAME_UPPER,
// at the start otherwise.
host::ConvTranspose2dParams conv_transpose_params(Importer& im, const Node& n, const graph::Expr& x,
                                                  const graph::Expr& w, bool one_d) {
  const auto xt = im.type_of(x), wt = im.type_of(w);
  if (wt.ndim() != 4)
    unsupported(
        fmt::format("a weight of rank {}: only 1-D and 2-D convolutions are handled", wt.ndim()));
  host::ConvTranspose2dParams p{.strides = pair_attr(im, n, "strides", {1, 1}, one_d),
                                .groups = attr_int(im, n, "group", 1),
                                .dilations = pair_attr(im, n, "dilations", {1, 1}, one_d)};
  auto output_padding = attr_ints(im, n, "output_padding", {});
  if (!output_padding.empty()) {
    if (output_padding.size() != (one_d ? 1u : 2u))
      unsupported(fmt::format("output_padding of {} entries", output_padding.size()));
    p.output_padding = one_d ? std::array<std::int64_t, 2>{0, output_padding[0]}
                             : std::array<std::int64_t, 2>{output_padding[0], output_padding[1]};
  }
  const auto output_shape = attr_ints(im, n, "output_shape", {});
  const std::string auto_pad = attr_string(im, n, "auto_pad", "NOTSET");
  if (output_shape.empty() && (auto_pad == "NOTSET" || auto_pad == "VALID")) {
    if (auto_pad == "NOTSET") p.padding = window_pads(im, n, x, {1, 1}, {1, 1}, one_d);
    return p;
  }
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    raise<ValueError>("auto_pad '{}' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", auto_pad);
  const std::size_t given = output_shape.size();
  if (given != 0 && given != (one_d ? 1u : 2u) && given != (one_d ? 3u : 4u))
    unsupported(fmt::format("output_shape of {} entries", given));
  for (std::size_t k = 0; k < 2; ++k) {
    if (one_d && k == 0) continue;  // the height of 1 stays
    const std::int64_t in = static_dim(xt.shape[2 + k], "ConvTranspose's output_shape or auto_pad");
    const std::int64_t kernel = static_dim(wt.shape[2 + k], "the kernel");
    std::int64_t out = in * p.strides[k];
    if (given != 0) out = output_shape[given - (one_d ? 1 : 2) + (one_d ? 0 : k)];
    const std::int64_t total =
        p.strides[k] * (in - 1) + p.output_padding[k] + (kernel - 1) * p.dilations[k] + 1 - out;
    if (total < 0) {
      p.output_padding[k] -= total;  // an output larger than the windows cover: zeros at the end
      continue;
    }
    const std::int64_t small = total / 2, large = total - small;
    p.padding[k] = auto_pad == "SAME_UPPER" ? small : large;
    p.padding[k + 2] = auto_pad == "SAME_UPPER" ? large : small;
  }
  return p;
}

}  // namespace

host::Conv2dParams conv_params(Importer& im, const Node& n, const graph::Expr& x,
                               const graph::Expr& w, bool one_d) {
  const auto wt = im.type_of(w);
  if (wt.ndim() != 4)
    unsupported(
        fmt::format("a weight of rank {}: only 1-D and 2-D convolutions are handled", wt.ndim()));
  const std::int64_t groups = attr_int(im, n, "group", 1);
  if (groups < 1) raise<ValueError>("group = {}: it must be at least 1", groups);
  const auto dilations = pair_attr(im, n, "dilations", {1, 1}, one_d);
  const std::array<std::int64_t, 2> kernel = {
      (static_dim(wt.shape[2], "the kernel height") - 1) * dilations[0] + 1,
      (static_dim(wt.shape[3], "the kernel width") - 1) * dilations[1] + 1};
  const auto strides = pair_attr(im, n, "strides", {1, 1}, one_d);
  return {.strides = strides,
          .padding = window_pads(im, n, x, kernel, strides, one_d),
          .groups = groups,
          .dilations = dilations};
}

namespace convert {

// Conv and ConvTranspose: `layer(x, w, one_d)` of the input and weight, then B's bias_add. A
// 1-D convolution runs as a 2-D one over its input viewed as [N, C, 1, L] (the weight as
// [O, C / G, 1, K] or [C, O / G, 1, K]), its result viewed back as [N, O, L'].
template <class Layer>
Outs convolution(Importer& im, const Node& n, Layer layer) {
  auto x = im.expr(n, 0), w = im.expr(n, 1);
  const bool one_d = im.type_of(x).ndim() == 3;
  if (one_d) {
    x = as_image(x);
    w = as_image(w);
  }
  auto y = layer(x, w, one_d);
  if (Importer::has_input(n, 2)) y = graph::bias_add(y, im.expr(n, 2), {.axis = 1});
  if (one_d) y = graph::reshape(y, {.newshape = {0, 0, -1}});
  return {y};
}

Outs conv(Importer& im, const Node& n) {
  return convolution(im, n, [&](const graph::Expr& x, const graph::Expr& w, bool one_d) {
    return graph::conv2d(x, w, conv_params(im, n, x, w, one_d));
  });
}

Outs conv_transpose(Importer& im, const Node& n) {
  return convolution(im, n, [&](const graph::Expr& x, const graph::Expr& w, bool one_d) {
    return graph::conv2d_transpose(x, w, conv_transpose_params(im, n, x, w, one_d));
  });
}

Outs gemm(Importer& im, const Node& n) {
  auto a = im.expr(n, 0);
  auto b = im.expr(n, 1);
  const float alpha = attr_float(im, n, "alpha", 1.0f);
  const float beta = attr_float(im, n, "beta", 1.0f);
  if (attr_int(im, n, "transA", 0) != 0) a = graph::transpose(a, {.perm = {1, 0}});
  // A . B^T is a dense layer, the form VTA runs with a constant B
  graph::Expr y = attr_int(im, n, "transB", 0) != 0 ? graph::dense(a, b) : graph::matmul(a, b);
  const DType dt = im.type_of(a).dtype;
  const auto scalar = [&](std::string_view name, float v) {
    if (!dt.is_float()) unsupported(fmt::format("{} = {} on integers", name, v));
    return im.make_constant(n, name, te::NDArray::from_floats({}, {v}));
  };
  if (alpha != 1.0f) y = graph::mul(y, scalar("alpha", alpha));
  if (Importer::has_input(n, 2) && beta != 0.0f) {
    auto c = im.expr(n, 2);
    if (beta != 1.0f) c = graph::mul(c, scalar("beta", beta));
    y = graph::add(y, c);
  }
  return {y};
}

Outs matmul(Importer& im, const Node& n) {
  const auto a = im.expr(n, 0), b = im.expr(n, 1);
  if (im.type_of(a).ndim() < 2 || im.type_of(b).ndim() < 2)
    unsupported("a 1-D operand (MatMul of vectors)");
  return {graph::matmul(a, b)};
}

Outs max_pool(Importer& im, const Node& n) { return pool(im, n, true); }
Outs average_pool(Importer& im, const Node& n) { return pool(im, n, false); }

Outs global_average_pool(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  if (im.type_of(x).ndim() != 4)
    unsupported(
        fmt::format("an input of rank {}: only 2-D pooling is handled", im.type_of(x).ndim()));
  return {graph::global_avg_pool2d(x)};
}

// Inference with running statistics: the channel is dim 1 (written -1 for a 2-D input, so
// that the fold into a dense layer before it sees the last dim).
Outs batch_normalization(Importer& im, const Node& n) {
  for (int k = 1; k < n.output_size(); ++k)
    if (!n.output(k).empty()) unsupported(fmt::format("output {} (training statistics)", k));
  if (attr_int(im, n, "training_mode", 0) != 0) unsupported("training_mode = 1");
  if (attr_int(im, n, "spatial", 1) != 1) unsupported("spatial = 0");
  const auto x = im.expr(n, 0);
  const auto rank = im.type_of(x).ndim();
  if (rank < 2) unsupported(fmt::format("an input of rank {}", rank));
  return {graph::batch_norm(
      x, im.expr(n, 1), im.expr(n, 2), im.expr(n, 3), im.expr(n, 4),
      {.axis = rank == 2 ? -1 : 1, .epsilon = attr_float(im, n, "epsilon", 1e-5f)})};
}

// Versions 1 and 6 ran in training mode unless is_test was set.
Outs batch_normalization_v1(Importer& im, const Node& n) {
  if (attr_int(im, n, "is_test", 0) == 0) unsupported("is_test = 0 (training mode)");
  return batch_normalization(im, n);
}

// Normalized over the dims from `axis` on; Scale and B broadcast to those dims (exporters give
// them exactly, or as the last dim); no B is a zero bias. The optional outputs Mean and
// InvStdDev (x's rank, the normalized dims 1) are computed beside it with the reductions.
Outs layer_normalization(Importer& im, const Node& n) {
  if (attr_int(im, n, "stash_type", 1) != 1) unsupported("a stash_type other than float32");
  const auto x = im.expr(n, 0);
  const auto type = im.type_of(x);
  const auto rank = static_cast<std::int64_t>(type.ndim());
  const std::int64_t axis = normalize_axis(attr_int(im, n, "axis", -1), rank, "axis");
  const float epsilon = attr_float(im, n, "epsilon", 1e-5f);
  std::vector<ne::Expr> normalized(type.shape.begin() + axis, type.shape.end());
  const auto static_normalized = [&](std::string_view what) {
    std::vector<std::int64_t> dims;
    for (const auto& d : normalized) dims.push_back(static_dim(d, what));
    return dims;
  };
  const auto fit = [&](graph::Expr e) {
    const auto shape = im.type_of(e).shape;
    if (shape.size() == normalized.size() &&
        std::equal(shape.begin(), shape.end(), normalized.begin(),
                   [](const ne::Expr& a, const ne::Expr& b) { return ne::equal(a, b); }))
      return e;
    return graph::broadcast_to(std::move(e),
                               {.shape = static_normalized("a broadcast Scale or B")});
  };
  const graph::Expr bias =
      Importer::has_input(n, 2)
          ? fit(im.expr(n, 2))
          : im.make_constant(n, "bias",
                             te::NDArray(DType::float32(), static_normalized("a missing B")));
  Outs out{graph::layer_norm(x, fit(im.expr(n, 1)), bias, {.axis = axis, .epsilon = epsilon})};
  const bool wants_mean = n.output_size() > 1 && !n.output(1).empty();
  const bool wants_inv = n.output_size() > 2 && !n.output(2).empty();
  if (!wants_mean && !wants_inv) return out;
  host::ReduceParams over{.axes = {}, .keepdims = true};
  for (std::int64_t k = axis; k < rank; ++k) over.axes.push_back(k);
  const auto mean = graph::reduce_mean(x, over);
  const auto centred = graph::sub(x, mean);
  const auto variance = graph::reduce_mean(graph::mul(centred, centred), over);
  const auto eps = im.make_constant(n, "epsilon", te::NDArray::from_floats({}, {epsilon}));
  out.emplace_back(mean);
  if (wants_inv) out.emplace_back(graph::reciprocal(graph::sqrt(graph::add(variance, eps))));
  return out;
}

}  // namespace convert

}  // namespace dlavm::onnx::detail
