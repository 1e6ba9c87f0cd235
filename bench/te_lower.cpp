// Lowering speed: a ResNet-18 conv2d layer (14x14x256 -> 256, 3x3, pad 1, stride 1) in VTA's
// blocked layout, scheduled the way the VTA conv2d tutorial does (padding stage, on-chip
// copies attached inside the reduction, output tiled), lowered to TIR. Target: under 2 ms.
#include <dlavm/schedule.hpp>
#include <dlavm/tir.hpp>

#include <benchmark/benchmark.h>

namespace te = dlavm::te;
using dlavm::DType;

namespace {

struct Conv2d {
  te::Tensor data, kernel, data_buf, kernel_buf, res_conv, res_shr, res;
  te::IterVar ic, dy, dx, ic_tns;
  Conv2d() {
    const int n = 1, ci = 256 / 16, co = 256 / 16, h = 14, w = 14, k = 3, pad = 1;
    data = te::placeholder(te::shape(n, ci, h, w, 1, 16), DType::int8(), "data");
    kernel = te::placeholder(te::shape(co, ci, k, k, 16, 16), DType::int8(), "kernel");
    auto padded = te::compute(
        te::shape(n, ci, h + 2 * pad, w + 2 * pad, 1, 16),
        [&](auto b, auto c, auto y, auto x, auto bi, auto cc) {
          return te::select(y >= pad && y < h + pad && x >= pad && x < w + pad,
                            data(b, c, y - pad, x - pad, bi, cc), 0);
        },
        "data_buf");
    data_buf = padded;
    kernel_buf = te::compute(
        te::shape(co, ci, k, k, 16, 16), [&](auto... i) { return kernel(i...); }, "kernel_buf");
    ic = te::reduce_axis({0, ci}, "ic");
    dy = te::reduce_axis({0, k}, "dy");
    dx = te::reduce_axis({0, k}, "dx");
    ic_tns = te::reduce_axis({0, 16}, "ic_tns");
    res_conv = te::compute(
        te::shape(n, co, h, w, 1, 16),
        [&](auto b, auto o, auto y, auto x, auto bi, auto oc) {
          return te::sum(te::cast(DType::int32(), data_buf(b, ic, y + dy, x + dx, bi, ic_tns)) *
                             te::cast(DType::int32(), kernel_buf(o, ic, dy, dx, oc, ic_tns)),
                         {ic, dy, dx, ic_tns});
        },
        "res_conv");
    res_shr = te::compute(
        te::shape(n, co, h, w, 1, 16), [&](auto... i) { return res_conv(i...) >> 8; }, "res_shr");
    res = te::compute(
        te::shape(n, co, h, w, 1, 16),
        [&](auto... i) { return te::cast(DType::int8(), te::min(te::max(res_shr(i...), 0), 127)); },
        "res");
  }

  dlavm::tir::PrimFunc lower() const {
    auto s = te::create_schedule(res);
    s[data_buf].set_scope("local.inp_buffer");
    s[kernel_buf].set_scope("local.wgt_buffer");
    s[res_conv].set_scope("local.acc_buffer");
    s[res_shr].set_scope("local.acc_buffer");
    auto [b_o, b_i] = s[res].split(s[res].axis(0), 1);
    auto [co_o, co_i] = s[res].split(s[res].axis(1), 8);
    auto [y_o, y_i] = s[res].split(s[res].axis(2), 7);
    auto [x_o, x_i] = s[res].split(s[res].axis(3), 14);
    s[res].reorder({b_o, co_o, y_o, x_o, b_i, co_i, y_i, x_i});
    s[res_conv].compute_at(s[res], x_o);
    s[res_shr].compute_at(s[res], x_o);
    auto [ic_o, ic_i] = s[res_conv].split(ic, 4);
    s[res_conv].reorder({ic_o, s[res_conv].axis(0), s[res_conv].axis(1), s[res_conv].axis(2), ic_i,
                         dy, dx, s[res_conv].axis(3), s[res_conv].axis(4), s[res_conv].axis(5),
                         ic_tns});
    s[data_buf].compute_at(s[res_conv], ic_o);
    s[kernel_buf].compute_at(s[res_conv], ic_o);
    s[data_buf].pragma(s[data_buf].axis(0), "dma_copy");
    s[kernel_buf].pragma(s[kernel_buf].axis(0), "dma_copy");
    s[res_shr].pragma(s[res_shr].axis(0), "alu");
    s[res].pragma(co_i, "dma_copy");
    return te::lower(s, {data, kernel, res}, "conv2d");
  }
};

void BM_LowerConv2d(benchmark::State& state) {
  const Conv2d conv;
  for (auto _ : state) {
    auto f = conv.lower();
    benchmark::DoNotOptimize(f.body);
  }
  state.SetLabel("ResNet-18 C5: 14x14x256 -> 256, 3x3, pad 1");
}
BENCHMARK(BM_LowerConv2d)->Unit(benchmark::kMillisecond);

void BM_DeclareAndLowerConv2d(benchmark::State& state) {
  for (auto _ : state) {
    const Conv2d conv;
    auto f = conv.lower();
    benchmark::DoNotOptimize(f.body);
  }
}
BENCHMARK(BM_DeclareAndLowerConv2d)->Unit(benchmark::kMillisecond);

}  // namespace
