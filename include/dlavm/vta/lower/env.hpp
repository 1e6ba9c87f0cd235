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

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/schedule.hpp>
#include <dlavm/te.hpp>
#include <dlavm/vta/hw/config.hpp>

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
// A statement of a loop's body whose calls differ from one iteration to the next (a copy to
// rows that move with the loop): the generated replay (vta::replay_source) memoizes the
// statements before and after it apart, each copied where it repeats, and writes it call by
// call. The host's replay plan and the stream read through it.
inline constexpr std::string_view replay_apart = "vta.replay_apart";
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
  static Config validated(Config c);
  std::shared_ptr<const schedule::TensorIntrin> make_gemm() const;
};

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/lower/env-inl.hpp>
#endif
