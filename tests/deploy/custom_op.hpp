// An operator added through the public API only, nothing in the library edited: `gain`, y =
// saturate_int8(x * gain + offset), with its attributes, type rule, host kernel and firmware
// kernel (custom_kernels.hpp, which the generated header includes) in one OpRecord, and a model
// that runs it on the host between two dense layers on VTA.
#pragma once

#include <dlavm/dlavm.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace custom_op {

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
using dlavm::DType;

inline graph::OpRecord gain_op() {
  return {
      .name = "gain",
      .attrs = {{.name = "gain", .kind = graph::AttrKind::Int, .description = "the factor"},
                {.name = "offset",
                 .kind = graph::AttrKind::Int,
                 .default_value = graph::AttrValue(std::int64_t{0}),
                 .description = "added after the product"}},
      .type_rule =
          [](const graph::TypeCall& c) {
            if (c.type(0).dtype != DType::int8())
              dlavm::raise<dlavm::TypeError>("{}: {} is {}; gain takes int8", c.label, c.arg(0),
                                             c.type(0).dtype);
            return c.type(0);
          },
      .host_kernel =
          [](graph::HostArgs a, const graph::Attrs& attrs) {
            const auto gain = attrs.get_int("gain"), offset = attrs.get_int("offset");
            te::NDArray y(DType::int8(), a[0]->shape());
            for (std::size_t i = 0; i < y.size(); ++i)
              y.set_flat(i, std::clamp<std::int64_t>(a[0]->data()[i] * gain + offset, -128, 127));
            return y;
          },
      .firmware = {.support = [](const graph::FirmwareStep& s) -> std::optional<std::string> {
                     const auto gain = s.call.attrs.get_int("gain");
                     if (gain >= -1000 && gain <= 1000) return std::nullopt;
                     return fmt::format("a gain of {} has no firmware kernel (|gain| <= 1000)",
                                        gain);
                   },
                   .call =
                       [](const graph::FirmwareStep& s) {
                         using A = graph::FirmwareArg;
                         return graph::FirmwareCall{
                             "custom_kernels::gain",
                             {A::input(0), A::output(), A::dim(graph::element_count(s.input(0))),
                              A::integer(s.call.attrs.get_int("gain")),
                              A::integer(s.call.attrs.get_int("offset"))}};
                       }},
  };
}

// The default target with `gain` added.
inline graph::Target target() {
  graph::Target t;
  t.ops.add(gain_op());
  return t;
}

inline graph::Expr gain(graph::Expr x, std::int64_t factor, std::int64_t offset = 0) {
  return graph::call("gain", {std::move(x)}, {{"gain", factor}, {"offset", offset}});
}

// dense (VTA) -> gain (host) -> dense (VTA), over a symbolic batch.
inline graph::Function model(std::int64_t factor = 3) {
  const auto batch = ne::var("batch", 1, 8);
  auto x = graph::input("x", {batch, 32}, DType::int8());
  auto w1 = graph::constant("w1", te::NDArray::random(DType::int8(), {32, 32}, 11, -8, 8));
  auto w2 = graph::constant("w2", te::NDArray::random(DType::int8(), {16, 32}, 12, -8, 8));
  auto h = graph::requantize(graph::dense(x, w1), {.shift = 6});
  auto y = graph::requantize(graph::dense(gain(h, factor, -5), w2), {.shift = 6});
  return graph::function({x}, {y});
}

}  // namespace custom_op
