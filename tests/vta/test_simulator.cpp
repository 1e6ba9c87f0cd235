#include <dlavm/vta.hpp>

#include <doctest/doctest.h>

#include "alu_run.hpp"
#include "what_of.hpp"
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace vta = dlavm::vta;
using vta::MemId;
using vta::Queue;

namespace {
using dlavm_test::what_of;

// (TVM's simulator: the default Config)
std::vector<std::int8_t> run_alu(vta::AluOp op, const std::vector<std::int32_t>& a,
                                 const std::vector<std::int32_t>& b, bool imm,
                                 std::int32_t imm_value, vta::Counters* counters = nullptr) {
  return dlavm_test::run_alu(vta::Config{}, op, a, b, imm, imm_value, counters);
}
}  // namespace

TEST_CASE("vta simulator: ALU semantics with int8 store truncation") {
  std::vector<std::int32_t> a(32), b(32);
  std::mt19937 rng(1);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<std::int32_t>(rng() % 2001) - 1000;
    b[i] = static_cast<std::int32_t>(rng() % 41) - 20;
  }
  a[0] = INT32_MAX;
  b[0] = 1;  // wraps
  auto expect = [&](auto f) {
    std::vector<std::int8_t> e(a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      e[i] = static_cast<std::int8_t>(static_cast<std::uint32_t>(f(a[i], b[i])) & 0xFF);
    return e;
  };
  vta::Counters c;
  CHECK(run_alu(vta::AluOp::Add, a, b, false, 0, &c) == expect([](std::int32_t x, std::int32_t y) {
          return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) +
                                           static_cast<std::uint32_t>(y));
        }));
  CHECK(c.acc_load_bytes == 2 * 32 * 4);
  CHECK(c.out_store_bytes == 32);
  CHECK(c.alu_uops == 2);
  CHECK(c.uop_load_bytes == 4);
  CHECK(run_alu(vta::AluOp::Min, a, b, false, 0) ==
        expect([](std::int32_t x, std::int32_t y) { return std::min(x, y); }));
  CHECK(run_alu(vta::AluOp::Max, a, b, false, 0) ==
        expect([](std::int32_t x, std::int32_t y) { return std::max(x, y); }));
  CHECK(run_alu(vta::AluOp::Mul, a, b, false, 0) == expect([](std::int32_t x, std::int32_t y) {
          return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) *
                                           static_cast<std::uint32_t>(y));
        }));
  // SHR both ways: y >= 0 shifts right (arithmetic), y < 0 shifts left.
  CHECK(run_alu(vta::AluOp::Shr, a, b, false, 0) == expect([](std::int32_t x, std::int32_t y) {
          return y >= 0 ? x >> y : static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << -y);
        }));
  CHECK(run_alu(vta::AluOp::Shr, a, b, true, 2) ==
        expect([](std::int32_t x, std::int32_t) { return x >> 2; }));
  CHECK(run_alu(vta::AluOp::Shr, a, b, true, -3) == expect([](std::int32_t x, std::int32_t) {
          return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << 3);
        }));
  CHECK(run_alu(vta::AluOp::Add, a, b, true, -7) ==
        expect([](std::int32_t x, std::int32_t) { return x - 7; }));
}

TEST_CASE("vta simulator: GEMM with padding and ACC_8BIT sign extension matches a reference") {
  vta::SimDevice dev;
  auto& sim = dev.simulator();
  // inp: 2 rows of 1 element (16 int8), loaded with one zero row before (y_pad_0 = 1).
  std::vector<std::int8_t> x(2 * 16), w(16 * 16), bias(3 * 16);
  std::mt19937 rng(3);
  for (auto& v : x) v = static_cast<std::int8_t>(rng());
  for (auto& v : w) v = static_cast<std::int8_t>(rng());
  for (auto& v : bias) v = static_cast<std::int8_t>(rng());
  x[0] = -128;
  w[0] = -128;
  const auto X = dev.alloc_for(std::span<const std::int8_t>(x));
  const auto W = dev.alloc_for(std::span<const std::int8_t>(w));
  const auto Bi = dev.alloc_for(std::span<const std::int8_t>(bias));
  const auto Y = dev.alloc(3 * 16);
  vta::Builder b{dev.config()};
  b.load({.memory = MemId::Inp,
          .sram = 0,
          .dram = b.dram_elem(X.phys, MemId::Inp),
          .y_size = 2,
          .x_size = 1,
          .y_pad_0 = 1});
  b.load({.memory = MemId::Wgt, .sram = 0, .dram = b.dram_elem(W.phys, MemId::Wgt), .x_size = 1});
  b.dep_push(Queue::Load, Queue::Compute);
  b.dep_pop(Queue::Load, Queue::Compute);
  b.load(
      {.memory = MemId::Acc8, .sram = 0, .dram = b.dram_elem(Bi.phys, MemId::Acc8), .x_size = 3});
  vta::UopKernel k;
  k.loop_begin(3, 1, 1, 0);
  k.push(0, 0, 0);
  k.loop_end();
  b.gemm(k);
  b.dep_push(Queue::Compute, Queue::Store);
  b.dep_pop(Queue::Compute, Queue::Store);
  b.store({.sram = 0, .dram = b.dram_elem(Y.phys, MemId::Out), .x_size = 3});
  b.finish();
  const auto r = dev.run(b.take());
  std::vector<std::int8_t> y(3 * 16);
  dev.copy_out(Y, std::span<std::int8_t>(y));
  for (int row = 0; row < 3; ++row) {
    for (int o = 0; o < 16; ++o) {
      std::int32_t acc = bias[static_cast<std::size_t>(row * 16 + o)];
      for (int k2 = 0; k2 < 16; ++k2) {
        const std::int32_t xv = row == 0 ? 0 : x[static_cast<std::size_t>((row - 1) * 16 + k2)];
        acc += xv * w[static_cast<std::size_t>(o * 16 + k2)];
      }
      CHECK(y[static_cast<std::size_t>(row * 16 + o)] == static_cast<std::int8_t>(acc & 0xFF));
    }
  }
  CHECK(sim.acc_sram()[0] == bias[0]);  // padding row: only the sign-extended bias
  CHECK(r.counters.inp_load_bytes == 32);
  CHECK(r.counters.wgt_load_bytes == 256);
  CHECK(r.counters.acc_load_bytes == 48);
  CHECK(r.counters.out_store_bytes == 48);
  CHECK(r.counters.gemm_uops == 3);
  CHECK(r.counters == r.timing.counters);  // the cycle model derives the same counters
  CHECK(sim.counters() == r.counters);
}

TEST_CASE("vta simulator: errors name the instruction") {
  vta::SimDevice dev;
  const auto buf = dev.alloc(64);
  SUBCASE("deadlock") {
    vta::Builder b{dev.config()};
    b.dep_pop(Queue::Load, Queue::Compute);  // nobody pushes
    vta::UopKernel k;
    k.push(0, 0);
    b.gemm(k);
    const auto msg = what_of([&] { dev.run(b.stream()); });
    CHECK(msg ==
          "deadlock on dependency tokens: compute module stuck at LOAD #0 waiting for a "
          "token from load");
  }
  SUBCASE("SRAM out of range") {
    vta::Builder b{dev.config()};
    b.load({.memory = MemId::Inp,
            .sram = 2040,
            .dram = b.dram_elem(buf.phys, MemId::Inp),
            .x_size = 2,
            .x_pad_1 = 15});
    CHECK(what_of([&] { dev.run(b.stream()); }) ==
          "LOAD #0: input SRAM index range [2040, 2057) exceeds the buffer depth 2048");
  }
  SUBCASE("DRAM outside any allocation") {
    vta::Builder b{dev.config()};
    b.load({.memory = MemId::Inp, .dram = b.dram_elem(buf.phys, MemId::Inp), .x_size = 5});
    const auto msg = what_of([&] { dev.run(b.stream()); });
    CHECK(msg.find("LOAD #0 (INP): DRAM bytes [0x") == 0);
    CHECK(msg.find("outside any allocation") != std::string::npos);
  }
  SUBCASE("GEMM index out of range") {
    vta::Builder b{dev.config()};
    vta::UopKernel k;
    k.loop_begin(2, 0, 0, 1000);
    k.push(0, 0, 100);
    k.loop_end();
    b.gemm(k);
    CHECK(what_of([&] { dev.run(b.stream()); }) ==
          "GEMM #1: weight SRAM index range [0, 1101) exceeds the buffer depth 1024");
  }
  SUBCASE("unknown opcode and impossible flags") {
    auto& sim = dev.simulator();
    vta::InsnFields bad;
    bad.opcode = static_cast<vta::Opcode>(6);
    CHECK(what_of([&] {
            sim.run(std::span<const vta::InsnFields>(&bad, 1));
          }).find("instruction #0: unknown opcode 6") == 0);
    vta::InsnFields ld;
    ld.opcode = vta::Opcode::Load;
    ld.memory_type = MemId::Inp;
    ld.pop_prev_dep = true;
    CHECK(what_of([&] {
            sim.run(std::span<const vta::InsnFields>(&ld, 1));
          }).find("LOAD #0 runs on the load module, which has no previous module") == 0);
    vta::InsnFields st;
    st.opcode = vta::Opcode::Store;
    st.memory_type = MemId::Inp;
    st.x_size = 1;
    st.y_size = 1;
    CHECK(what_of([&] { sim.run(std::span<const vta::InsnFields>(&st, 1)); }) ==
          "STORE #0: memory type INP cannot be stored; only OUT");
    // A stream read from DRAM with a corrupted word.
    const auto words = dev.alloc(32);
    std::vector<std::uint8_t> raw(32, 0);
    raw[16] = 5;  // second instruction: opcode 5
    dev.copy_in(words, std::span<const std::uint8_t>(raw));
    CHECK(what_of([&] { sim.run(words.phys, 2); }).find("instruction #1: unknown opcode 5") == 0);
    CHECK(what_of([&] { sim.run(words.phys, 3); }).find("outside any DRAM allocation") !=
          std::string::npos);
  }
}

TEST_CASE("vta simulator: random words either run or raise a dlavm::Error") {
  vta::SimDevice dev;
  auto& sim = dev.simulator();
  const auto layout = sim.layout();
  const auto buf = dev.alloc(4096);
  std::mt19937_64 rng(11);
  int ran = 0, rejected = 0;
  for (int n = 0; n < 3000; ++n) {
    vta::InsnWord w;
    w.word[0] = rng();
    w.word[1] = rng();
    try {
      auto f = vta::decode(layout, w, 0);
      // Keep loop nests small so that accepted instructions stay quick.
      f.iter_out %= 5;
      f.iter_in %= 5;
      f.uop_end = f.uop_bgn + (f.uop_end % 8);
      if (n % 3 == 0) f.dram_base = static_cast<std::uint32_t>(buf.phys / 16 + rng() % 300);
      if (n % 2 == 0) f.y_size %= 4;
      sim.run(std::span<const vta::InsnFields>(&f, 1));
      ++ran;
    } catch (const dlavm::Error&) {
      ++rejected;
    }
  }
  CHECK(ran > 0);
  CHECK(rejected > 0);
}
