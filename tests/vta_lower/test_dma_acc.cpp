// DMA into the accumulator and strided DMA: int8 tensors loaded straight into the accumulator
// (ACC_8BIT) for a residual add, padding staged in the accumulator (filled by the ALU, the
// interior loaded), a stride-2 1x1 convolution whose copy stage loads only the columns it
// uses, and copies under a split guard. Results run on the simulator against te::evaluate;
// the LOAD fields are decoded from the instruction stream.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
namespace vta = dlavm::vta;

namespace dma_acc_test {

// The LOADs of a program instantiated at fixed addresses that move data (not the
// token-carrying no-ops), and the ALU instructions.
std::vector<vta::InsnFields> insns_of(const vta::Program& prog, vta::Opcode op) {
  std::vector<std::uint64_t> phys;
  for (std::size_t k = 0; k < prog.func().params.size(); ++k) phys.push_back(0x100000 * (k + 1));
  const auto stream = prog.instantiate({}, phys);
  std::vector<vta::InsnFields> out;
  for (std::size_t i = 0; i < stream.insns.size(); ++i) {
    const auto f = vta::decode(prog.env().config.layout(), stream.insns[i], i);
    if (f.opcode == op &&
        (op != vta::Opcode::Load || (f.x_size > 0 && f.memory_type != vta::MemId::Uop)))
      out.push_back(f);
  }
  return out;
}

}  // namespace dma_acc_test

using namespace dma_acc_test;

TEST_CASE("dma: a residual add of two int8 tensors loaded straight into the accumulator") {
  // Each int8 input is loaded as int32 by a cast copy stage (an ACC_8BIT load: DRAM holds 16
  // bytes per tile, the accumulator the sign-extended int32 values); add, shift, clip, store
  // int8. The ALU stages run in place: four ALU instructions, no copy.
  vta::Env env;
  const auto shape = te::shape(1, 4, 3, 5, 1, 16);
  auto A = te::placeholder(shape, env.inp_dtype, "A");
  auto B = te::placeholder(shape, env.inp_dtype, "B");
  auto A_buf = te::compute(
      shape, [&](auto... i) { return te::cast(env.acc_dtype, A(i...)); }, "A_buf");
  auto B_buf = te::compute(
      shape, [&](auto... i) { return te::cast(env.acc_dtype, B(i...)); }, "B_buf");
  auto sum = te::compute(
      shape, [&](auto... i) { return A_buf(i...) + B_buf(i...); }, "sum");
  auto shr = te::compute(
      shape, [&](auto... i) { return sum(i...) >> 1; }, "shr");
  auto hi = te::compute(
      shape, [&](auto... i) { return te::min(shr(i...), 127); }, "hi");
  auto lo = te::compute(
      shape, [&](auto... i) { return te::max(hi(i...), -128); }, "lo");
  auto R = te::compute(
      shape, [&](auto... i) { return te::cast(env.inp_dtype, lo(i...)); }, "R");
  auto s = te::create_schedule(R);
  for (const auto& t : {A_buf, B_buf, sum, shr, hi, lo}) s[t].set_scope(env.acc_scope);
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[B_buf].pragma(s[B_buf].axis(0), env.dma_copy);
  for (const auto& t : {sum, shr, hi, lo}) s[t].pragma(s[t].axis(0), env.alu);
  s[R].pragma(s[R].axis(0), env.dma_copy);
  const auto prog = vta::build(s, {A, B, R}, env);
  const auto loads = insns_of(prog, vta::Opcode::Load);
  REQUIRE(loads.size() == 2);
  for (const auto& f : loads) {
    CHECK(f.memory_type == vta::MemId::Acc8);
    CHECK(f.x_size == 4 * 3 * 5);
  }
  CHECK(insns_of(prog, vta::Opcode::Alu).size() == 4);
  auto a = te::NDArray::random(env.inp_dtype, {1, 4, 3, 5, 1, 16}, 1);
  auto b = te::NDArray::random(env.inp_dtype, {1, 4, 3, 5, 1, 16}, 2);
  te::NDArray r(env.inp_dtype, {1, 4, 3, 5, 1, 16});
  vta::SimDevice dev(env.config);
  const auto run = prog.run(dev, {&a, &b, &r});
  CHECK(run.result.finished);
  CHECK(r == te::evaluate(R, {{A, a}, {B, b}}));
  CHECK(run.result.counters.alu_uops == 4 * 60);
}

TEST_CASE("dma: an ALU stage whose output takes its second operand's storage") {
  // `sum = max(cast(int32, A_buf), B_buf)` with A_buf an int8 buffer in the accumulator (an
  // ACC_8BIT load): the storage pass gives sum B_buf's storage (same dtype), so the ALU
  // combines A_buf into it in place (every tensor-tensor ALU operation commutes) rather than
  // zeroing B_buf before reading it.
  vta::Env env;
  const auto shape = te::shape(2, 3, env.batch, env.block_out);
  auto A = te::placeholder(shape, env.inp_dtype, "A");
  auto B = te::placeholder(shape, env.acc_dtype, "B");
  auto A_buf = te::compute(
      shape, [&](auto... i) { return A(i...); }, "A_buf");
  auto B_buf = te::compute(
      shape, [&](auto... i) { return B(i...); }, "B_buf");
  auto sum = te::compute(
      shape, [&](auto... i) { return te::max(te::cast(env.acc_dtype, A_buf(i...)), B_buf(i...)); },
      "sum");
  auto R = te::compute(
      shape, [&](auto... i) { return te::cast(env.inp_dtype, sum(i...)); }, "R");
  auto s = te::create_schedule(R);
  for (const auto& t : {A_buf, B_buf, sum}) s[t].set_scope(env.acc_scope);
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[B_buf].pragma(s[B_buf].axis(0), env.dma_copy);
  s[sum].pragma(s[sum].axis(0), env.alu);
  s[R].pragma(s[R].axis(0), env.dma_copy);
  const auto prog = vta::build(s, {A, B, R}, env);
  const auto text = tir::to_string(prog.func());
  MESSAGE(text);
  CHECK(text.find("@vta.alu(B_buf, A_buf; 1, 0, 0, 0, 0)") != std::string::npos);
  CHECK(insns_of(prog, vta::Opcode::Alu).size() == 1);
  auto a = te::NDArray::random(env.inp_dtype, {2, 3, 1, 16}, 3);
  auto b = te::NDArray::random(env.acc_dtype, {2, 3, 1, 16}, 4, -100, 100);
  te::NDArray r(env.inp_dtype, {2, 3, 1, 16});
  vta::SimDevice dev(env.config);
  CHECK(prog.run(dev, {&a, &b, &r}).result.finished);
  CHECK(r == te::evaluate(R, {{A, a}, {B, b}}));
}

TEST_CASE("dma: padding staged in the accumulator") {
  // VTA's accumulator loads have no pad fields: the border is filled by the ALU, then the
  // interior loaded (one load per row when the columns are padded, one for all rows when only
  // the rows are).
  vta::Env env;
  struct Case {
    std::vector<ne::Expr> before, after;
    std::int64_t value;
    std::size_t loads;
  };
  for (const auto& c : {Case{{0, 0, 1, 2, 0, 0}, {0, 0, 2, 1, 0, 0}, -128, 2 * 4},
                        Case{{0, 0, 1, 0, 0, 0}, {0, 0, 3, 0, 0, 0}, 77, 2},
                        Case{{0, 1, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, 0, 1},
                        Case{{0, 0, 2, 2, 0, 0}, {0, 0, 2, 2, 0, 0}, 5, 2 * 4}}) {
    CAPTURE(c.value);
    auto data = te::placeholder(te::shape(1, 2, 4, 4, 1, 16), env.inp_dtype, "data");
    auto padded = te::pad(data, c.before, c.after, c.value, "data_pad");
    std::vector<std::int64_t> ps;
    for (const auto& d : padded.shape()) ps.push_back(*ne::simplify(d).as_int());
    auto R = te::compute_dynamic(
        padded.shape(),
        [&](std::span<const ne::Var> i) {
          return padded.read({i.begin(), i.end()});
        },
        "R");
    auto s = te::create_schedule(R);
    s[padded].set_scope(env.acc_scope);
    s[padded].pragma(s[padded].axis(0), env.dma_copy);
    s[R].pragma(s[R].axis(0), env.dma_copy);
    const auto prog = vta::build(s, {data, R}, env);
    const auto loads = insns_of(prog, vta::Opcode::Load);
    CHECK(loads.size() == c.loads);
    for (const auto& f : loads) {
      CHECK(f.memory_type == vta::MemId::Acc8);
      CHECK(f.y_pad_0 + f.y_pad_1 + f.x_pad_0 + f.x_pad_1 == 0);
    }
    auto d = te::NDArray::random(env.inp_dtype, {1, 2, 4, 4, 1, 16}, 7);
    te::NDArray r(env.inp_dtype, ps);
    vta::SimDevice dev(env.config);
    CHECK(prog.run(dev, {&d, &r}).result.finished);
    CHECK(r == te::evaluate(R, {{data, d}}));
  }
}

namespace dma_acc_test {
// A 1x1 convolution of stride 2 over 14x14 pixels and two input channel tiles. `strided`: the
// copy stage is declared strided, data_buf(.., y, x, ..) = data(.., 2y, 2x, ..), and the GEMM
// reads data_buf(.., i, j, ..); otherwise the copy is plain and the GEMM reads at (2i, 2j).
struct StridedConv {
  vta::Env env;
  te::Tensor data, kernel, res;
  std::optional<vta::Program> prog;
  explicit StridedConv(bool strided) {
    const int h = 14, oh = 7;
    data = te::placeholder(te::shape(1, 2, h, h, 1, 16), env.inp_dtype, "data");
    kernel = te::placeholder(te::shape(1, 2, 1, 1, 16, 16), env.wgt_dtype, "kernel");
    const auto rows = strided ? oh : h;
    auto data_buf = te::compute(
        te::shape(1, 2, rows, rows, 1, 16),
        [&](auto n, auto c, auto y, auto x, auto b, auto k) {
          return strided ? data(n, c, y * 2, x * 2, b, k) : data(n, c, y, x, b, k);
        },
        "data_buf");
    auto kernel_buf = te::compute(
        te::shape(1, 2, 1, 1, 16, 16), [&](auto... i) { return kernel(i...); }, "kernel_buf");
    auto ic = te::reduce_axis({0, 2}, "ic");
    auto k = te::reduce_axis({0, 16}, "k");
    const int st = strided ? 1 : 2;
    auto conv = te::compute(
        te::shape(1, 1, oh, oh, 1, 16),
        [&](auto bo, auto co, auto i, auto j, auto bi, auto ci) {
          return te::sum(te::cast(env.acc_dtype, data_buf(bo, ic, i * st, j * st, bi, k)) *
                             te::cast(env.acc_dtype, kernel_buf(co, ic, 0, 0, ci, k)),
                         {ic, k});
        },
        "conv");
    res = te::compute(
        te::shape(1, 1, oh, oh, 1, 16),
        [&](auto... i) { return te::cast(env.inp_dtype, conv(i...)); }, "res");
    auto s = te::create_schedule(res);
    s[data_buf].set_scope(env.inp_scope);
    s[kernel_buf].set_scope(env.wgt_scope);
    s[conv].set_scope(env.acc_scope);
    const auto c = s[conv].node()->root;
    s[conv].reorder({ic, c[0], c[1], c[2], c[3], c[4], c[5], k});
    s[data_buf].pragma(s[data_buf].axis(0), env.dma_copy);
    s[kernel_buf].pragma(s[kernel_buf].axis(0), env.dma_copy);
    s[res].pragma(s[res].axis(0), env.dma_copy);
    s[conv].tensorize(c[4], env.gemm);
    prog.emplace(vta::build(s, {data, kernel, res}, env));
  }
  vta::ProgramRun run() const {
    auto d = te::NDArray::random(env.inp_dtype, {1, 2, 14, 14, 1, 16}, 5);
    auto w = te::NDArray::random(env.wgt_dtype, {1, 2, 1, 1, 16, 16}, 6, -8, 8);
    te::NDArray r(env.inp_dtype, {1, 1, 7, 7, 1, 16});
    vta::SimDevice dev(env.config);
    auto out = prog->run(dev, {&d, &w, &r});
    CHECK(out.result.finished);
    CHECK(r == te::evaluate(res, {{data, d}, {kernel, w}}));
    return out;
  }
};
}  // namespace dma_acc_test

TEST_CASE("dma: a stride-2 1x1 convolution loads only the pixels it uses") {
  const StridedConv plain(false), strided(true);
  const auto a = plain.run();
  const auto b = strided.run();
  // The plain copy loads all 14 x 14 pixels; the strided one the 7 x 7 the convolution uses:
  // per channel tile and output row, one LOAD of 7 tiles one tile wide, 2 tiles apart in DRAM
  // (x_size 1, y_size 7, x_stride 2).
  CHECK(a.result.counters.inp_load_bytes == 2 * 14 * 14 * 16);
  CHECK(b.result.counters.inp_load_bytes == 2 * 7 * 7 * 16);
  std::vector<vta::InsnFields> inp;
  for (const auto& f : insns_of(*strided.prog, vta::Opcode::Load))
    if (f.memory_type == vta::MemId::Inp) inp.push_back(f);
  REQUIRE(inp.size() == 2 * 7);
  for (std::size_t k = 0; k < inp.size(); ++k) {
    CHECK(inp[k].x_size == 1);
    CHECK(inp[k].y_size == 7);
    CHECK(inp[k].x_stride == 2);
    CHECK(inp[k].sram_base == 7 * k);
    // Channel tile c, output row y: input row 2y of 14-pixel rows, 196 pixels per channel.
    const auto c = k / 7, y = k % 7;
    CHECK(inp[k].dram_base - inp[0].dram_base == c * 196 + 2 * y * 14);
  }
  CHECK(b.result.timing.total_cycles < a.result.timing.total_cycles);
}

TEST_CASE("dma: virtual threads over a split whose factor does not divide the extent") {
  // 10 rows in blocks of 3 over two virtual threads: the output copy is guarded by
  // `if (row < 10)`; the guard bounds one loop, which is clipped to min(3, 10 - first row).
  vta::Env env;
  auto shape = te::shape(10, 4, env.batch, env.block_out);
  auto A = te::placeholder(shape, env.acc_dtype, "A");
  auto B = te::placeholder(shape, env.acc_dtype, "B");
  auto A_buf = te::compute(
      shape, [&](auto... i) { return A(i...); }, "A_buf");
  auto B_buf = te::compute(
      shape, [&](auto... i) { return B(i...); }, "B_buf");
  auto C_buf = te::compute(
      shape, [&](auto... i) { return A_buf(i...) + B_buf(i...); }, "C_buf");
  auto C = te::compute(
      shape, [&](auto... i) { return te::cast(env.inp_dtype, C_buf(i...)); }, "C");
  auto s = te::create_schedule(C);
  for (const auto& t : {A_buf, B_buf, C_buf}) s[t].set_scope(env.acc_scope);
  auto [o, i] = s[C].split(s[C].axis(0), 3);
  auto [oo, tx] = s[C].split(o, 2);
  s[C].reorder({tx, oo, i});
  s[C].bind(tx, te::thread_axis("cthread"));
  for (const auto& t : {A_buf, B_buf, C_buf}) s[t].compute_at(s[C], oo);
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[B_buf].pragma(s[B_buf].axis(0), env.dma_copy);
  s[C_buf].pragma(s[C_buf].axis(0), env.alu);
  s[C].pragma(i, env.dma_copy);
  const auto prog = vta::build(s, {A, B, C}, env);
  std::int64_t stored = 0;
  for (const auto& f : insns_of(prog, vta::Opcode::Store)) stored += f.x_size * f.y_size;
  CHECK(stored == 10 * 4);
  // each thread's A_buf holds a block of 3 rows of 4 tiles: the guarded extent
  // 1 - 6o - 3t + min(6o + 3t + 2, 9) is bounded with the min distributed over the sum, not
  // term by term (which allowed all 10 rows)
  int a_bufs = 0;
  for (const auto& [buffer, slot] : prog.sram())
    if (buffer->name.starts_with("A_buf")) {
      ++a_bufs;
      CHECK(slot.entries == 3 * 4);
    }
  CHECK(a_bufs == 2);
  auto a = te::NDArray::random(env.acc_dtype, {10, 4, 1, 16}, 8, -60, 60);
  auto b = te::NDArray::random(env.acc_dtype, {10, 4, 1, 16}, 9, -60, 60);
  te::NDArray c(env.inp_dtype, {10, 4, 1, 16});
  vta::SimDevice dev(env.config);
  CHECK(prog.run(dev, {&a, &b, &c}).result.finished);
  CHECK(c == te::evaluate(C, {{A, a}, {B, b}}));
}
