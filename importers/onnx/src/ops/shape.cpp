// Converters of shape operators: Shape, Size, Gather, Slice, Unsqueeze, Squeeze, Reshape,
// ConstantOfShape, Range, and the pass-through Identity and Dropout. Exporters compute
// Reshape targets from the input's Shape; the importer folds those computations at import
// time, also over symbolic dims (DimValues): `Reshape(x, Concat(Gather(Shape(x), 0), [-1]))`
// becomes a reshape to [batch, -1], with no shape arithmetic left in the graph.
#include <dlavm/ne/bounds.hpp>

#include <fmt/ranges.h>

#include "common.hpp"
#include <algorithm>
#include <optional>

namespace dlavm::onnx::detail {

namespace {

// The dims of input k: of its type, or the length of a computed shape.
std::vector<ne::Expr> shape_of(Importer& im, const Node& n, int k) {
  const Value& v = im.input(n, k);
  if (v.dims) {
    if (v.dims_scalar) return {};
    return {ne::Expr(static_cast<std::int64_t>(v.dims->size()))};
  }
  if (!v.expr.defined()) {
    std::vector<ne::Expr> out;
    for (auto d : v.constant->shape()) out.emplace_back(d);
    return out;
  }
  return im.type_of(v.expr).shape;
}

// Axes of a rank-`rank` result (Unsqueeze) or input, normalized and checked.
std::vector<std::int64_t> normalized_axes(std::vector<std::int64_t> axes, std::int64_t rank) {
  for (auto& a : axes) a = normalize_axis(a, rank, "axis");
  auto sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    raise<ValueError>("axes [{}] repeat an axis", fmt::join(axes, ", "));
  return sorted;
}

// Input 0's dims with `axes` (of the result) inserted as 1s.
Outs unsqueeze_by(Importer& im, const Node& n, std::vector<std::int64_t> axes) {
  if (const auto d = im.dims_of(n, 0); d && im.input(n, 0).dims) {
    // a scalar dim made a 1-element shape, as exporters build Concat's pieces
    if (!d->scalar || axes.size() != 1 || normalize_axis(axes[0], 1, "axis") != 0)
      unsupported("an Unsqueeze of a computed shape other than a scalar to [1]");
    return {im.dims_value(n, DimValues{d->values, false})};
  }
  const auto x = shape_of(im, n, 0);
  const auto rank = static_cast<std::int64_t>(x.size() + axes.size());
  axes = normalized_axes(std::move(axes), rank);
  std::vector<ne::Expr> out;
  std::size_t next = 0;
  for (std::int64_t k = 0; k < rank; ++k)
    out.push_back(std::binary_search(axes.begin(), axes.end(), k) ? ne::Expr(1) : x[next++]);
  return {reshape_to_dims(im, im.expr(n, 0), out)};
}

// Input 0's dims without `axes` (all dims of 1 when empty).
Outs squeeze_by(Importer& im, const Node& n, std::vector<std::int64_t> axes) {
  if (const auto d = im.dims_of(n, 0); d && im.input(n, 0).dims) {
    if (d->scalar || d->values.size() != 1) unsupported("a Squeeze of a computed shape");
    return {im.dims_value(n, DimValues{d->values, true})};
  }
  const auto x = shape_of(im, n, 0);
  const auto rank = static_cast<std::int64_t>(x.size());
  if (axes.empty()) {
    for (std::int64_t k = 0; k < rank; ++k) {
      if (!x[static_cast<std::size_t>(k)].is_const())
        unsupported(fmt::format("a Squeeze without axes over the symbolic dim {}",
                                x[static_cast<std::size_t>(k)]));
      if (x[static_cast<std::size_t>(k)].as_int() == 1) axes.push_back(k);
    }
  }
  axes = normalized_axes(std::move(axes), rank);
  std::vector<ne::Expr> out;
  for (std::int64_t k = 0; k < rank; ++k) {
    const auto& d = x[static_cast<std::size_t>(k)];
    if (!std::binary_search(axes.begin(), axes.end(), k)) {
      out.push_back(d);
    } else if (!ne::can_prove(ne::simplify(d) == 1)) {
      raise<ShapeError>("axis {} has {} elements; Squeeze removes dims of 1", k, d);
    }
  }
  return {reshape_to_dims(im, im.expr(n, 0), out)};
}

// Slice of a computed shape (DimValues) along axis 0.
Outs slice_dims(Importer& im, const Node& n, const DimValues& d, std::vector<std::int64_t> starts,
                std::vector<std::int64_t> ends, std::vector<std::int64_t> axes,
                std::vector<std::int64_t> steps) {
  if (d.scalar) raise<ValueError>("Slice of a scalar");
  if (starts.size() != 1 || ends.size() != 1 ||
      (!axes.empty() && axes != std::vector<std::int64_t>{0} &&
       axes != std::vector<std::int64_t>{-1}))
    unsupported("a Slice of a computed shape along other axes than 0");
  const auto len = static_cast<std::int64_t>(d.values.size());
  const std::int64_t step = steps.empty() ? 1 : steps[0];
  if (step == 0) raise<ValueError>("Slice step 0");
  // ONNX's clamping: negative indices count from the end
  const auto clamp = [&](std::int64_t i, std::int64_t lo, std::int64_t hi) {
    if (i < 0) i += len;
    return std::clamp(i, lo, hi);
  };
  std::int64_t begin = starts[0], end = ends[0];
  if (step > 0) {
    begin = clamp(begin, 0, len);
    end = clamp(end, 0, len);
  } else {
    begin = clamp(begin, -1, len - 1);
    end = clamp(end, -1, len - 1);
  }
  DimValues out;
  for (std::int64_t i = begin; step > 0 ? i < end : i > end; i += step)
    out.values.push_back(d.values[static_cast<std::size_t>(i)]);
  return {im.dims_value(n, out)};
}

// ONNX's Reshape target: 0 copies the input's dim (unless allowzero), -1 is inferred.
Outs reshape_onnx(Importer& im, const Node& n, const std::vector<ne::Expr>& target) {
  const auto x = shape_of(im, n, 0);
  const bool allowzero = attr_int(im, n, "allowzero", 0) != 0;
  std::vector<std::optional<ne::Expr>> dims;
  for (std::size_t k = 0; k < target.size(); ++k) {
    const auto c = target[k].as_int();
    if (c == 0 && allowzero) unsupported("allowzero = 1 with a 0 in the shape (an empty tensor)");
    if (c == 0) {
      if (k >= x.size())
        raise<ShapeError>("shape entry {} is 0 (copy), but the input has rank {}", k, x.size());
      dims.emplace_back(x[k]);
    } else if (c == -1) {
      dims.emplace_back(std::nullopt);
    } else {
      dims.emplace_back(target[k]);
    }
  }
  return {reshape_to_inferred(im, im.expr(n, 0), dims)};
}

}  // namespace

graph::Expr reshape_to_inferred(Importer& im, const graph::Expr& x,
                                const std::vector<std::optional<ne::Expr>>& dims) {
  const auto in = im.type_of(x).shape;
  std::vector<std::int64_t> newshape;
  bool inferred = false;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const auto& d = dims[k];
    const auto c = d ? ne::simplify(*d).as_int() : std::nullopt;
    if (d && c) {
      newshape.push_back(*c);
    } else if (d && k < in.size() && ne::can_prove(ne::simplify(*d - in[k]) == 0)) {
      newshape.push_back(0);  // the input's own dim at this position
    } else if (!inferred) {
      newshape.push_back(-1);
      inferred = true;
    } else {
      std::vector<std::string> said;
      said.reserve(dims.size());
      for (const auto& e : dims) said.push_back(e ? fmt::format("{}", *e) : std::string("-1"));
      unsupported(
          fmt::format("a reshape to [{}], which has more symbolic dims than a reshape "
                      "can say (one inferred, the others where the input has them)",
                      fmt::join(said, ", ")));
    }
  }
  auto y = graph::reshape(x, {.newshape = newshape});
  const auto out = im.type_of(y).shape;
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (dims[k] && !ne::can_prove(ne::simplify(out[k] - *dims[k]) == 0))
      unsupported(fmt::format("a reshape whose dim {} is {}, which the reshape makes {}", k,
                              *dims[k], out[k]));
  return y;
}

graph::Expr reshape_to_dims(Importer& im, const graph::Expr& x, const std::vector<ne::Expr>& dims) {
  std::vector<std::optional<ne::Expr>> known(dims.begin(), dims.end());
  return reshape_to_inferred(im, x, known);
}

std::optional<Outs> binary_dims(Importer& im, const Node& n, ne::Kind kind, bool constants_too) {
  // shapes are int64: a computed one, or an int64 constant of rank 0 or 1
  const auto shape_like = [&](int k) {
    const Value& v = im.input(n, k);
    return v.dims ||
           (v.constant && v.constant->dtype() == DType::int64() && v.constant->shape().size() <= 1);
  };
  if (!shape_like(0) || !shape_like(1)) return std::nullopt;
  if (!constants_too && !im.input(n, 0).dims && !im.input(n, 1).dims) return std::nullopt;
  const auto a = im.dims_of(n, 0), b = im.dims_of(n, 1);
  const std::size_t len = std::max(a->values.size(), b->values.size());
  if ((a->values.size() != len && a->values.size() != 1) ||
      (b->values.size() != len && b->values.size() != 1))
    raise<ShapeError>("shapes of {} and {} elements do not broadcast", a->values.size(),
                      b->values.size());
  DimValues out{.scalar = a->scalar && b->scalar};
  for (std::size_t i = 0; i < len; ++i) {
    const auto& x = a->values[a->values.size() == 1 ? 0 : i];
    const auto& y = b->values[b->values.size() == 1 ? 0 : i];
    // (dims are positive: ONNX's integer division, which truncates, is floor division here)
    if (kind == ne::Kind::FloorDiv && !(ne::can_prove(x >= 0) && ne::can_prove(y > 0)))
      unsupported(fmt::format("a division of computed dims {} / {} that may be negative", x, y));
    out.values.push_back(ne::binary(kind, x, y));
  }
  return Outs{im.dims_value(n, out)};
}

std::optional<Outs> concat_dims(Importer& im, const Node& n) {
  bool symbolic = false, empty = false;
  DimValues out;
  for (int k = 0; k < n.input_size(); ++k) {
    const auto d = im.dims_of(n, k);
    if (!d || d->scalar) return std::nullopt;
    symbolic = symbolic || im.input(n, k).dims.has_value();
    empty = empty || d->values.empty();
    out.values.insert(out.values.end(), d->values.begin(), d->values.end());
  }
  // other constants fold as any call does; an empty one has no graph value to concatenate
  if (!symbolic && !empty) return std::nullopt;
  return Outs{im.dims_value(n, out)};
}

namespace convert {

Outs shape(Importer& im, const Node& n) {
  const auto dims = shape_of(im, n, 0);
  const auto rank = static_cast<std::int64_t>(dims.size());
  // (start and end, version 15, clamp to [0, rank] after counting negatives from the end)
  const auto at = [&](std::string_view name, std::int64_t fallback) {
    auto i = attr_int(im, n, name, fallback);
    if (i < 0) i += rank;
    return std::clamp<std::int64_t>(i, 0, rank);
  };
  const auto begin = at("start", 0), end = at("end", rank);
  DimValues out;
  for (auto k = begin; k < end; ++k) out.values.push_back(dims[static_cast<std::size_t>(k)]);
  return {im.dims_value(n, out)};
}

Outs size(Importer& im, const Node& n) {
  ne::Expr count = 1;
  for (const auto& d : shape_of(im, n, 0)) count = count * d;
  return {im.dims_value(n, DimValues{{count}, true})};
}

Outs gather(Importer& im, const Node& n) {
  const auto d = im.dims_of(n, 0);
  if (!d || !im.input(n, 0).dims || !im.dims_of(n, 1)) return take(im, n);
  if (d->scalar) raise<ValueError>("Gather of a scalar");
  const auto len = static_cast<std::int64_t>(d->values.size());
  if (normalize_axis(attr_int(im, n, "axis", 0), 1, "axis") != 0)
    raise<ValueError>("Gather of a 1-D shape along an axis other than 0");
  const auto idx = im.dims_of(n, 1);
  DimValues out{.scalar = idx->scalar};
  for (const auto i : constant_ints(im, n, 1, "indices")) {
    if (i < -len || i >= len)
      raise<ValueError>("index {} is outside [-{}, {}) for a shape of {} dims", i, len, len, len);
    out.values.push_back(d->values[static_cast<std::size_t>(i < 0 ? i + len : i)]);
  }
  return {im.dims_value(n, out)};
}

Outs slice_v1(Importer& im, const Node& n) {
  const auto d = im.dims_of(n, 0);
  if (!d || !im.input(n, 0).dims)
    return slice_tensor(im, n, attr_ints(im, n, "starts", {}), attr_ints(im, n, "ends", {}),
                        attr_ints(im, n, "axes", {}), {});
  return slice_dims(im, n, *d, attr_ints(im, n, "starts", {}), attr_ints(im, n, "ends", {}),
                    attr_ints(im, n, "axes", {}), {});
}

Outs slice(Importer& im, const Node& n) {
  const auto d = im.dims_of(n, 0);
  if (!d || !im.input(n, 0).dims)
    return slice_tensor(
        im, n, constant_ints(im, n, 1, "starts"), constant_ints(im, n, 2, "ends"),
        Importer::has_input(n, 3) ? constant_ints(im, n, 3, "axes") : std::vector<std::int64_t>{},
        Importer::has_input(n, 4) ? constant_ints(im, n, 4, "steps") : std::vector<std::int64_t>{});
  return slice_dims(
      im, n, *d, constant_ints(im, n, 1, "starts"), constant_ints(im, n, 2, "ends"),
      Importer::has_input(n, 3) ? constant_ints(im, n, 3, "axes") : std::vector<std::int64_t>{},
      Importer::has_input(n, 4) ? constant_ints(im, n, 4, "steps") : std::vector<std::int64_t>{});
}

Outs unsqueeze_v1(Importer& im, const Node& n) {
  return unsqueeze_by(im, n, attr_ints(im, n, "axes", {}));
}
Outs unsqueeze(Importer& im, const Node& n) {
  return unsqueeze_by(im, n, constant_ints(im, n, 1, "axes"));
}
Outs squeeze_v1(Importer& im, const Node& n) {
  return squeeze_by(im, n, attr_ints(im, n, "axes", {}));
}
Outs squeeze(Importer& im, const Node& n) {
  return squeeze_by(
      im, n,
      Importer::has_input(n, 1) ? constant_ints(im, n, 1, "axes") : std::vector<std::int64_t>{});
}

Outs reshape_v1(Importer& im, const Node& n) {
  const auto ints = attr_ints(im, n, "shape", {});
  return reshape_onnx(im, n, {ints.begin(), ints.end()});
}
Outs reshape(Importer& im, const Node& n) {
  const auto d = im.dims_of(n, 1);
  if (!d) unsupported("its shape (input 1) is not a constant or a computed shape");
  return reshape_onnx(im, n, d->values);
}

Outs identity(Importer& im, const Node& n) { return {im.input(n, 0)}; }

// Inference: the input as it is; the mask output and training mode are refused.
Outs dropout(Importer& im, const Node& n) {
  if (n.output_size() > 1 && !n.output(1).empty()) unsupported("the mask output");
  if (Importer::has_input(n, 2) &&
      scalar_of(im.constant(n, 2, "training_mode"), "training_mode") != 0)
    unsupported("training_mode = true");
  if (attr_int(im, n, "is_test", 1) == 0) unsupported("is_test = 0 (training)");
  return {im.input(n, 0)};
}

Outs constant_of_shape(Importer& im, const Node& n) {
  const auto shape = constant_ints(im, n, 0, "shape");
  te::NDArray value = te::NDArray::from_floats({1}, {0.0f});
  if (const auto* a = find_attr(n, "value"))
    value = to_array(a->t(), im.label(n) + ": attribute 'value'");
  if (value.size() != 1) raise<ValueError>("value has {} elements; one is needed", value.size());
  te::NDArray out(value.dtype(), shape);
  for (std::size_t i = 0; i < out.size(); ++i)
    if (value.dtype().is_float())
      out.fdata()[i] = value.fdata()[0];
    else
      out.set_flat(i, value.data()[0]);
  return {im.constant_value(n, "value", std::move(out))};
}

Outs range(Importer& im, const Node& n) {
  const te::NDArray& start = im.constant(n, 0, "start");
  const te::NDArray& limit = im.constant(n, 1, "limit");
  const te::NDArray& delta = im.constant(n, 2, "delta");
  if (start.dtype() != limit.dtype() || start.dtype() != delta.dtype())
    raise<TypeError>("start, limit and delta are {}, {} and {}; they must agree", start.dtype(),
                     limit.dtype(), delta.dtype());
  const double s = scalar_of(start, "start"), l = scalar_of(limit, "limit"),
               d = scalar_of(delta, "delta");
  if (d == 0) raise<ValueError>("delta is 0");
  // ONNX: max(ceil((limit - start) / delta), 0) elements
  const double count = std::max(std::ceil((l - s) / d), 0.0);
  if (count > double{1 << 24}) unsupported(fmt::format("a Range of {} elements", count));
  const auto len = static_cast<std::int64_t>(count);
  te::NDArray out(start.dtype(), {len});
  for (std::int64_t i = 0; i < len; ++i)
    if (start.dtype().is_float())
      out.fdata()[static_cast<std::size_t>(i)] =
          static_cast<float>(start.fdata()[0] + static_cast<float>(i) * delta.fdata()[0]);
    else
      out.set_flat(static_cast<std::size_t>(i), start.data()[0] + i * delta.data()[0]);
  return {im.constant_value(n, "range", std::move(out))};
}

}  // namespace convert

}  // namespace dlavm::onnx::detail
