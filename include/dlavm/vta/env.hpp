// vta::Env: what the TVM-VTA tutorials call `env`: the tile shape, the element types, the
// on-chip scopes, the pragma keys that target passes look for, and the GEMM tensor intrinsic,
// all derived from a Config.
//
//   vta::Env env;                                   // the default configuration
//   auto A = te::placeholder(te::shape(1, 64, env.batch, env.block_in), env.inp_dtype, "A");
//   s[A_buf].set_scope(env.inp_scope);
//   s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
//   s[C_buf].tensorize(s[C_buf].axis(2), env.gemm);
#pragma once

#include <dlavm/core/dtype.hpp>
#include <dlavm/schedule.hpp>
#include <dlavm/te.hpp>
#include <dlavm/vta/config.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace dlavm::vta {

// Names of the TIR intrinsics the VTA passes produce and the program builder consumes.
namespace intrin {
inline constexpr std::string_view gemm = "vta.gemm";  // tensorized GEMM tile
inline constexpr std::string_view gemm_reset = "vta.gemm_reset";
inline constexpr std::string_view load = "vta.load";    // 2D DMA into SRAM
inline constexpr std::string_view store = "vta.store";  // 2D DMA out of the accumulator
inline constexpr std::string_view alu = "vta.alu";      // vector ALU over accumulator tiles
// A micro-op kernel: one GEMM or ALU instruction (an Attr around its loop levels and uops).
inline constexpr std::string_view uop_kernel = "vta.uop_kernel";
inline constexpr std::string_view uop_loop_begin = "vta.uop_loop_begin";  // extent, dst, src, wgt
inline constexpr std::string_view uop_loop_end = "vta.uop_loop_end";
}  // namespace intrin

class Env {
 public:
  explicit Env(Config c = {})
      : config(validated(std::move(c))),
        batch(config.batch()),
        block_in(config.block_in()),
        block_out(config.block_out()),
        inp_dtype(config.inp_dtype()),
        wgt_dtype(config.wgt_dtype()),
        acc_dtype(config.acc_dtype()),
        out_dtype(config.out_dtype()),
        inp_width(config.inp_width()),
        gemm(make_gemm()) {}

  Config config;
  int batch, block_in, block_out;
  DType inp_dtype, wgt_dtype, acc_dtype, out_dtype;
  int inp_width;
  std::string inp_scope = "local.inp_buffer";
  std::string wgt_scope = "local.wgt_buffer";
  std::string acc_scope = "local.acc_buffer";
  std::string dma_copy = "dma_copy";
  std::string alu = "alu";
  // acc[BATCH, BLOCK_OUT] += inp[BATCH, BLOCK_IN] x wgt[BLOCK_OUT, BLOCK_IN]^T
  std::shared_ptr<const schedule::TensorIntrin> gemm;

  // Elements of one SRAM entry (a tile) of each on-chip buffer.
  int inp_tile() const { return batch * block_in; }
  int wgt_tile() const { return block_out * block_in; }
  int acc_tile() const { return batch * block_out; }

 private:
  static Config validated(Config c) {
    c.validate();
    return c;
  }
  std::shared_ptr<const schedule::TensorIntrin> make_gemm() const {
    auto inp = te::placeholder(te::shape(batch, block_in), inp_dtype, "inp");
    auto wgt = te::placeholder(te::shape(block_out, block_in), wgt_dtype, "wgt");
    auto k = te::reduce_axis({0, block_in}, "k");
    auto acc = te::compute(
        te::shape(batch, block_out),
        [&](auto i, auto j) {
          return te::sum(te::cast(acc_dtype, inp(i, k)) * te::cast(acc_dtype, wgt(j, k)), {k});
        },
        "acc");
    const int acc_t = acc_tile(), inp_t = inp_tile(), wgt_t = wgt_tile();
    return schedule::decl_tensor_intrin(
        acc,
        [acc_t, inp_t, wgt_t, bi = block_in, bo = block_out](const schedule::IntrinCall& c) {
          // VTA addresses whole SRAM entries: every operand must be one dense tile.
          const auto dense = [](const schedule::IntrinOperand& o, const char* what, int row) {
            if (!ne::equal(o.strides[0], row) || !ne::equal(o.strides[1], 1))
              raise<ScheduleError>(
                  "vta.gemm: the {} tile in '{}' has strides ({}, {}); VTA needs a dense tile "
                  "(strides ({}, 1))",
                  what, o.buffer.name(), o.strides[0], o.strides[1], row);
          };
          dense(c.inputs[0], "input", bi);
          dense(c.inputs[1], "weight", bi);
          dense(c.output, "accumulator", bo);
          // Offsets in SRAM entries: the element offset divided by the tile size. Lowering
          // checks the division is exact when it places the buffers.
          const auto tile = [](const schedule::IntrinOperand& o, int t) {
            return te::index_value(ne::simplify(ne::floordiv(o.elem_offset, t)));
          };
          const std::vector<te::Buffer> buffers{c.output.buffer, c.inputs[0].buffer,
                                                c.inputs[1].buffer};
          const std::vector<te::Expr> args{tile(c.output, acc_t), tile(c.inputs[0], inp_t),
                                           tile(c.inputs[1], wgt_t)};
          schedule::IntrinBody b;
          b.reset = {te::call(std::string(intrin::gemm_reset), DType::int32(), {args[0]},
                              {c.output.buffer})};
          b.update = {te::call(std::string(intrin::gemm), DType::int32(), args, buffers)};
          b.body = {b.reset.front(), b.update.front()};
          return b;
        },
        "vta.gemm");
  }
};

}  // namespace dlavm::vta
