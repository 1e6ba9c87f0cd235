// Definitions for dlavm/vta/lower/env.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/lower/env.hpp>

namespace dlavm::vta {

DLAVM_INLINE Config Env::validated(Config c) {
  c.validate();
  return c;
}

DLAVM_INLINE std::shared_ptr<const schedule::TensorIntrin> Env::make_gemm() const {
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

}  // namespace dlavm::vta
