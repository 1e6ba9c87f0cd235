// The simulator's SIMD kernels (vta/hw/sim_kernels.hpp) against its scalar loops: seeded random
// streams of loads (with padding), GEMMs (resets included), ALU operations and stores, run one
// instruction at a time on two simulators, for every batch and block shape the simulator
// accepts and every SIMD instruction set this CPU runs; the accumulators and the stored bytes
// must match after every instruction. The streams drive int32 accumulators past their limits
// and cover every ALU operation with tensor and immediate operands, shifts of 32 or more
// both ways included.
#include <dlavm/vta.hpp>

#include <doctest/doctest.h>

#include "what_of.hpp"
#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace vta = dlavm::vta;
using vta::MemId;
using vta::Opcode;

namespace {
using dlavm_test::what_of;

// log2 of the SRAM depths the random configurations get.
constexpr int kLogInpDepth = 4, kLogWgtDepth = 3, kLogAccDepth = 4, kLogUopDepth = 5;

vta::Config shape_config(int log_batch, int log_block_in, int log_block_out, int log_out_width) {
  vta::Config c;
  c.log_batch = log_batch;
  c.log_block_in = log_block_in;
  c.log_block_out = log_block_out;
  c.log_out_width = log_out_width;
  c.log_inp_buff_size = log_batch + log_block_in + kLogInpDepth;
  c.log_wgt_buff_size = log_block_out + log_block_in + kLogWgtDepth;
  c.log_acc_buff_size = log_batch + log_block_out + 2 + kLogAccDepth;
  c.log_uop_buff_size = 2 + kLogUopDepth;
  return c;
}

// A DRAM region of whole elements, in both simulators at the same address.
struct Region {
  std::uint64_t first = 0;  // in elements
  std::uint64_t elems = 0;
};

Region make_region(std::array<vta::Simulator*, 2> sims, std::size_t elem_bytes, std::uint64_t elems,
                   const std::vector<std::byte>& fill) {
  std::uint64_t phys = 0;
  for (auto* s : sims) phys = s->dram().alloc((elems + 1) * elem_bytes);
  const std::uint64_t first = (phys + elem_bytes - 1) / elem_bytes;
  for (auto* s : sims) {
    auto a = s->dram().allocation(phys);
    std::copy(fill.begin(), fill.begin() + static_cast<std::ptrdiff_t>(elems * elem_bytes),
              a.begin() + static_cast<std::ptrdiff_t>(first * elem_bytes - phys));
  }
  return {first, elems};
}

// Random streams for one configuration; every instruction is valid for it.
class StreamMaker {
 public:
  StreamMaker(const vta::Config& c, std::uint64_t seed) : c_(c), rng_(seed) {}

  // Loads, GEMMs, ALU operations and stores; `gemm_uops` bounds the micro-ops per GEMM.
  vta::InsnFields next(const std::array<Region, 5>& regions, int gemm_uops) {
    switch (pick(0, 9)) {
      case 0:
      case 1:
        return load(MemId::Inp, regions[0], c_.inp_depth(), true);
      case 2:
        return load(MemId::Wgt, regions[1], c_.wgt_depth(), true);
      case 3: {
        const bool acc32 = pick(0, 1) == 1;
        return load(acc32 ? MemId::Acc : MemId::Acc8, regions[acc32 ? 2 : 3], c_.acc_depth(),
                    false);
      }
      case 4:
      case 5:
      case 6:
        return gemm(gemm_uops);
      case 7:
      case 8:
        return alu();
      default:
        return store(regions[4]);
    }
  }

  // The micro-op table: GEMM micro-ops at [0, 8), ALU ones at [8, 16), fields below half the
  // depth they index so that loops with factors up to depth / 8 stay inside. With `strips`,
  // the GEMM micro-ops are shaped as a convolution's: taps of one weight each over a row of
  // consecutive accumulator elements, from inputs a fixed step apart (0, 1, 2 or -1), which
  // the kernels gather into weight-stationary tiles.
  std::vector<std::uint32_t> uop_words(bool strips = false) {
    const auto layout = c_.layout();
    std::vector<vta::Uop> ops;
    if (strips) {
      const auto cols = static_cast<std::uint32_t>(pick(1, 8));
      const std::uint32_t top = c_.acc_depth() / 2, in_top = c_.inp_depth() / 2;
      const std::uint32_t dst = static_cast<std::uint32_t>(pick(0, static_cast<int>(top - cols)));
      while (ops.size() + cols <= 8) {
        const int step = std::array{0, 1, 2, -1}[static_cast<std::size_t>(pick(0, 3))];
        const std::int64_t span = std::int64_t{step} * (cols - 1);
        if (span >= in_top || -span >= in_top) continue;
        const auto lo = static_cast<int>(span < 0 ? -span : 0);
        const auto hi = static_cast<int>(in_top - 1 - (span > 0 ? span : 0));
        const std::int64_t src = pick(lo, hi);
        const std::uint32_t wgt = half(c_.wgt_depth());
        for (std::uint32_t k = 0; k < cols; ++k)
          ops.push_back({dst + k, static_cast<std::uint32_t>(src + step * std::int64_t{k}), wgt});
      }
    }
    for (int u = static_cast<int>(ops.size()); u < 16; ++u) {
      const bool g = u < 8;
      ops.push_back({half(c_.acc_depth()), half(g ? c_.inp_depth() : c_.acc_depth()),
                     g ? half(c_.wgt_depth()) : 0});
    }
    std::vector<std::uint32_t> words;
    for (const auto& op : ops) words.push_back(vta::encode_uop(layout, op));
    return words;
  }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::uint32_t half(std::uint32_t depth) {
    return static_cast<std::uint32_t>(pick(0, static_cast<int>(depth / 2 - 1)));
  }
  std::uint32_t factor(std::uint32_t depth) {
    return static_cast<std::uint32_t>(pick(0, static_cast<int>(depth / 8)));
  }

  vta::InsnFields load(MemId m, const Region& r, std::uint32_t depth, bool pad) {
    vta::InsnFields f;
    f.opcode = Opcode::Load;
    f.memory_type = m;
    f.y_size = static_cast<std::uint32_t>(pick(0, 2));
    f.x_size = static_cast<std::uint32_t>(pick(1, 3));
    f.x_stride = f.x_size + static_cast<std::uint32_t>(pick(0, 2));
    if (pad) {
      f.y_pad_0 = static_cast<std::uint32_t>(pick(0, 1));
      f.y_pad_1 = static_cast<std::uint32_t>(pick(0, 1));
      f.x_pad_0 = static_cast<std::uint32_t>(pick(0, 1));
      f.x_pad_1 = static_cast<std::uint32_t>(pick(0, 1));
    }
    if ((f.y_pad_0 + f.y_size + f.y_pad_1) * (f.x_pad_0 + f.x_size + f.x_pad_1) > depth) {
      f.y_pad_0 = f.y_pad_1 = f.x_pad_0 = f.x_pad_1 = 0;  // the box must fit the SRAM
      f.y_size = std::min<std::uint32_t>(f.y_size, 1);
    }
    const std::uint32_t box =
        (f.y_pad_0 + f.y_size + f.y_pad_1) * (f.x_pad_0 + f.x_size + f.x_pad_1);
    f.sram_base = static_cast<std::uint32_t>(pick(0, static_cast<int>(depth - box)));
    const std::uint64_t span = f.y_size ? (f.y_size - 1) * f.x_stride + f.x_size : 0;
    f.dram_base = static_cast<std::uint32_t>(
        r.first + static_cast<std::uint64_t>(pick(0, static_cast<int>(r.elems - span))));
    return f;
  }

  vta::InsnFields store(const Region& r) {
    vta::InsnFields f;
    f.opcode = Opcode::Store;
    f.memory_type = MemId::Out;
    f.y_size = static_cast<std::uint32_t>(pick(1, 2));
    f.x_size = static_cast<std::uint32_t>(pick(1, 3));
    f.x_stride = f.x_size + static_cast<std::uint32_t>(pick(0, 1));
    f.sram_base =
        static_cast<std::uint32_t>(pick(0, static_cast<int>(c_.acc_depth() - f.y_size * f.x_size)));
    const std::uint64_t span = (f.y_size - 1) * f.x_stride + f.x_size;
    f.dram_base = static_cast<std::uint32_t>(
        r.first + static_cast<std::uint64_t>(pick(0, static_cast<int>(r.elems - span))));
    return f;
  }

  void loops(vta::InsnFields& f, std::uint32_t first_uop, int max_uops) {
    const auto n = static_cast<std::uint32_t>(pick(1, std::min(8, max_uops)));
    f.uop_bgn = first_uop + static_cast<std::uint32_t>(pick(0, static_cast<int>(8 - n)));
    f.uop_end = f.uop_bgn + n;
    const int iters = std::max(1, max_uops / static_cast<int>(n));
    f.iter_out = static_cast<std::uint32_t>(pick(1, std::min(3, iters)));
    f.iter_in = static_cast<std::uint32_t>(
        pick(1, std::min(3, std::max(1, iters / static_cast<int>(f.iter_out)))));
    f.dst_factor_out = factor(c_.acc_depth());
    f.dst_factor_in = factor(c_.acc_depth());
  }

  vta::InsnFields gemm(int max_uops) {
    vta::InsnFields f;
    f.opcode = Opcode::Gemm;
    f.reset_reg = pick(0, 4) == 0;
    loops(f, 0, max_uops);
    f.src_factor_out = factor(c_.inp_depth());
    f.src_factor_in = factor(c_.inp_depth());
    f.wgt_factor_out = factor(c_.wgt_depth());
    f.wgt_factor_in = factor(c_.wgt_depth());
    return f;
  }

  vta::InsnFields alu() {
    static constexpr std::array<std::int32_t, 16> kImm{0,  1,   5,   31,  32,   33,    100,    -1,
                                                       -5, -31, -32, -33, -100, 32767, -32768, 7};
    vta::InsnFields f;
    f.opcode = Opcode::Alu;
    loops(f, 8, 64);
    f.src_factor_out = factor(c_.acc_depth());
    f.src_factor_in = factor(c_.acc_depth());
    f.alu_opcode = static_cast<vta::AluOp>(pick(0, 4));
    f.use_imm = pick(0, 1) == 1;
    f.imm = pick(0, 1) ? kImm[static_cast<std::size_t>(pick(0, 15))] : pick(-32768, 32767);
    return f;
  }

  vta::Config c_;
  std::mt19937_64 rng_;
};

// Random bytes, with int8 extremes and int32 words near the limits mixed in.
std::vector<std::byte> random_bytes(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::byte> b(n);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t r = rng();
    for (std::size_t k = 0; k < 8 && i + k < n; ++k)
      b[i + k] = static_cast<std::byte>(r >> (8 * k));
  }
  for (std::size_t i = 0; i + 4 <= n; i += 4) {
    const auto r = rng() % 8;
    const std::uint32_t w = r == 0   ? 0x7FFFFFF0u + static_cast<std::uint32_t>(rng() % 16)
                            : r == 1 ? 0x80000000u + static_cast<std::uint32_t>(rng() % 16)
                            : r == 2 ? 0x80808080u
                                     : 0;
    if (w)
      for (int k = 0; k < 4; ++k)
        b[i + static_cast<std::size_t>(k)] = static_cast<std::byte>(w >> (8 * k));
  }
  return b;
}

// Runs one random stream of `insns` instructions on the kernels `target` and on the scalar
// loops; returns the first difference ("" when none).
std::string compare_stream(const vta::Config& c, const std::string& target, std::uint64_t seed,
                           int insns, int gemm_uops, bool strips = false) {
  vta::Simulator simd(c), scalar(c);
  simd.set_simd_target(target);
  scalar.set_kernels(vta::SimKernels::Scalar);
  std::array<vta::Simulator*, 2> sims{&simd, &scalar};
  StreamMaker maker(c, seed);
  auto& rng = maker.rng();
  // Initial SRAM contents through the spans (the kernels' shadows are rebuilt from them).
  const auto inp0 = random_bytes(simd.inp_sram().size(), rng);
  const auto wgt0 = random_bytes(simd.wgt_sram().size(), rng);
  for (auto* s : sims) {
    std::transform(inp0.begin(), inp0.end(), s->inp_sram().begin(),
                   [](std::byte v) { return static_cast<std::int8_t>(v); });
    std::transform(wgt0.begin(), wgt0.end(), s->wgt_sram().begin(),
                   [](std::byte v) { return static_cast<std::int8_t>(v); });
  }
  const std::uint64_t elems = 8;  // the longest 2D access spans (2 - 1) * 5 + 3 elements
  std::array<Region, 5> regions;
  const MemId kinds[] = {MemId::Inp, MemId::Wgt, MemId::Acc, MemId::Acc8, MemId::Out};
  for (std::size_t k = 0; k < 5; ++k) {
    const std::size_t eb = c.elem_bytes(kinds[k]);
    regions[k] = make_region(sims, eb, elems, random_bytes((elems + 1) * eb, rng));
  }
  // The micro-ops, loaded once.
  const auto words = maker.uop_words(strips);
  std::vector<std::byte> uop_bytes;
  for (auto w : words)
    for (int k = 0; k < 4; ++k) uop_bytes.push_back(static_cast<std::byte>(w >> (8 * k)));
  const Region uops = make_region(sims, 4, words.size(), uop_bytes);
  vta::InsnFields load_uops;
  load_uops.opcode = Opcode::Load;
  load_uops.memory_type = MemId::Uop;
  load_uops.dram_base = static_cast<std::uint32_t>(uops.first);
  load_uops.y_size = 1;
  load_uops.x_size = static_cast<std::uint32_t>(words.size());
  load_uops.x_stride = load_uops.x_size;
  const std::uint64_t out_phys = regions[4].first * c.out_elem_bytes();
  const std::size_t out_bytes = elems * c.out_elem_bytes();
  // The weight SRAMs read back halfway and at the end: the SIMD kernels' LOADs pack DRAM into
  // the shadow alone, and the span is unpacked from it.
  const auto same_weights = [&](int i) {
    const auto a = simd.wgt_sram(), b = scalar.wgt_sram();
    return std::equal(a.begin(), a.end(), b.begin())
               ? std::string()
               : fmt::format("weight SRAMs differ after #{}", i);
  };
  for (int i = -1; i < insns; ++i) {
    const auto f = i < 0 ? load_uops : maker.next(regions, gemm_uops);
    for (auto* s : sims) s->run(std::span<const vta::InsnFields>(&f, 1));
    if (i == insns / 2)
      if (auto diff = same_weights(i); !diff.empty()) return diff;
    const auto a = simd.acc_sram(), b = scalar.acc_sram();
    if (!std::equal(a.begin(), a.end(), b.begin()))
      return fmt::format("accumulators differ after #{}: {}", i, vta::disassemble(f));
    const auto* da = simd.dram().find(out_phys, out_bytes);
    const auto* db = scalar.dram().find(out_phys, out_bytes);
    if (!std::equal(da, da + out_bytes, db))
      return fmt::format("stored bytes differ after #{}: {}", i, vta::disassemble(f));
  }
  return same_weights(insns);
}

}  // namespace

namespace {

// Every shape of 729 configurations (batch, block in, block out from 1 to 256) runs a random
// stream on SIMD kernels and on the scalar loops. `all_targets`: on every SIMD target of this
// CPU; otherwise on one per shape, in turn, so that each target still meets a quarter of the
// shapes or more (the long suite runs them all).
void simd_targets_match_scalar(bool all_targets) {
  const auto targets = vta::Simulator::simd_targets();
  std::string names;
  for (const auto& t : targets) names += " " + t;
  const std::string msg = "SIMD targets on this CPU:" + (names.empty() ? " none" : names);
  MESSAGE(msg);
  if (targets.empty()) return;
  std::uint64_t seed = 1;
  int shapes = 0;
  std::size_t runs = 0;
  for (int lb = 0; lb <= 8; ++lb)
    for (int lbi = 0; lbi <= 8; ++lbi)
      for (int lbo = 0; lbo <= 8; ++lbo) {
        // MACs per GEMM micro-op: the streams of the largest shapes run fewer micro-ops.
        const int log_macs = lb + lbi + lbo;
        const int gemm_uops = log_macs <= 12 ? 64 : log_macs <= 16 ? 8 : 1;
        const int insns = log_macs <= 16 ? 40 : 12;
        const vta::Config c = shape_config(lb, lbi, lbo, 3 + (lb + lbi + lbo) % 3);
        for (std::size_t k = 0; k < targets.size(); ++k) {
          if (!all_targets && k != static_cast<std::size_t>(shapes) % targets.size()) continue;
          const auto& t = targets[k];
          CAPTURE(lb);
          CAPTURE(lbi);
          CAPTURE(lbo);
          CAPTURE(t);
          CHECK(compare_stream(c, t, seed++, insns, gemm_uops) == "");
          ++runs;
        }
        ++shapes;
      }
  CHECK(shapes == 729);
  CHECK(runs == (all_targets ? 729 * targets.size() : 729));
}

}  // namespace

TEST_CASE("vta simulator kernels: SIMD kernels match the scalar loops on random streams") {
  simd_targets_match_scalar(false);
}

TEST_SUITE("long") {
  TEST_CASE("vta simulator kernels (long): every SIMD target matches the scalar loops") {
    simd_targets_match_scalar(true);
  }
}

TEST_CASE("vta simulator kernels: long random streams on the default configuration") {
  for (const auto& t : vta::Simulator::simd_targets()) {
    CAPTURE(t);
    for (std::uint64_t seed = 100; seed < 110; ++seed)
      CHECK(compare_stream(vta::Config{}, t, seed, 300, 256) == "");
  }
}

// Convolution-shaped micro-op tables (StreamMaker::uop_words with strips) on the shapes whose
// kernels gather them into tiles (1x16x16, 1x32x32; 1x8x8 with pairs on AVX-512) and on one
// whose kernels do not.
TEST_CASE("vta simulator kernels: convolution-shaped micro-ops match the scalar loops") {
  const vta::Config shapes[] = {vta::Config{}, shape_config(0, 5, 5, 3), shape_config(0, 3, 3, 3),
                                shape_config(1, 4, 4, 3)};
  for (const auto& t : vta::Simulator::simd_targets()) {
    CAPTURE(t);
    for (const auto& c : shapes) {
      CAPTURE(c.log_block_in);
      CAPTURE(c.log_batch);
      for (std::uint64_t seed = 200; seed < 240; ++seed)
        CHECK(compare_stream(c, t, seed, 60, 64, true) == "");
    }
  }
}

TEST_CASE("vta simulator kernels: a weight LOAD read back through the span on every target") {
  // The SIMD kernels pack a weight LOAD from DRAM into their shadow, and the span unpacks it.
  // (The box ends where its allocation ends: the packing's gathers may read past it, into the
  // allocation's Dram::kHostSlack, which no sanitizer sees, as gathers are not instrumented.)
  auto targets = vta::Simulator::simd_targets();
  targets.push_back("scalar");
  std::mt19937_64 rng(7);
  for (const auto& c : {vta::Config{}, shape_config(0, 1, 1, 3), shape_config(1, 3, 2, 3)}) {
    const std::size_t eb = c.elem_bytes(MemId::Wgt);
    for (const auto& t : targets) {
      CAPTURE(t);
      CAPTURE(c.log_block_in);
      vta::Simulator sim(c);
      if (t == "scalar") {
        sim.set_kernels(vta::SimKernels::Scalar);
      } else {
        sim.set_simd_target(t);
      }
      const std::uint64_t elems = 3, phys = sim.dram().alloc(elems * eb);
      const auto bytes = random_bytes(elems * eb, rng);
      std::copy(bytes.begin(), bytes.end(), sim.dram().allocation(phys).begin());
      vta::InsnFields f;
      f.opcode = Opcode::Load;
      f.memory_type = MemId::Wgt;
      f.dram_base = static_cast<std::uint32_t>(phys / eb);
      f.sram_base = 5;
      f.y_size = 1;
      f.x_size = static_cast<std::uint32_t>(elems);
      f.x_stride = f.x_size;
      sim.run(std::span<const vta::InsnFields>(&f, 1));
      const auto wgt = sim.wgt_sram();
      CHECK(std::equal(bytes.begin(), bytes.end(), wgt.begin() + 5 * eb,
                       [](std::byte b, auto w) { return static_cast<std::int8_t>(b) == w; }));
    }
  }
}

TEST_CASE("vta simulator kernels: choosing kernels") {
  vta::Simulator sim(vta::Config{});
  const auto targets = vta::Simulator::simd_targets();
  CHECK(sim.kernel_target() == (targets.empty() ? "scalar" : targets.front()));
  CHECK(sim.kernels() == (targets.empty() ? vta::SimKernels::Scalar : vta::SimKernels::Simd));
  sim.set_kernels(vta::SimKernels::Scalar);
  CHECK(sim.kernel_target() == "scalar");
  CHECK(sim.kernels() == vta::SimKernels::Scalar);
  std::string have;
  for (const auto& t : targets) have += (have.empty() ? "" : ", ") + t;
  CHECK(what_of([&] { sim.set_simd_target("NEON"); }) ==
        "simulator: no SIMD kernels for 'NEON' in this build on this CPU; available: " +
            (have.empty() ? std::string("none") : have));
}

TEST_CASE("vta simulator kernels: GEMM wraps int32 accumulators as VTA does") {
  // One micro-op, acc[0][o] += sum_k x[k] w[o][k] with x = 127, w[o] = 127 for even o and -128
  // for odd o, from accumulators at the int32 limits: 16 x 127 x 127 = 258064 past INT32_MAX,
  // -16 x 127 x 128 = -260096 past INT32_MIN.
  const vta::Config config;
  vta::Builder b(config);
  vta::UopKernel k;
  k.push(0, 0, 0);
  b.gemm(k);
  const auto& s = b.stream();
  auto targets = vta::Simulator::simd_targets();
  targets.push_back("scalar");
  for (const auto& t : targets) {
    CAPTURE(t);
    vta::Simulator sim(config);
    if (t == "scalar") {
      sim.set_kernels(vta::SimKernels::Scalar);
    } else {
      sim.set_simd_target(t);
    }
    const auto uop_phys = sim.dram().alloc(s.uop_bytes());
    std::vector<vta::InsnWord> words(s.insns.size());
    s.relocate(uop_phys / 4, words.data());
    auto uop_bytes = sim.dram().allocation(uop_phys);
    for (std::size_t i = 0; i < s.uops.size(); ++i)
      for (int j = 0; j < 4; ++j)
        uop_bytes[i * 4 + static_cast<std::size_t>(j)] =
            static_cast<std::byte>(s.uops[i] >> (8 * j));
    auto inp = sim.inp_sram();
    auto wgt = sim.wgt_sram();
    auto acc = sim.acc_sram();
    for (int i = 0; i < 16; ++i) inp[static_cast<std::size_t>(i)] = 127;
    for (int o = 0; o < 16; ++o) {
      for (int i = 0; i < 16; ++i)
        wgt[static_cast<std::size_t>(o * 16 + i)] =
            o % 2 == 0 ? std::int8_t{127} : std::int8_t{-128};
      acc[static_cast<std::size_t>(o)] = o % 2 == 0 ? INT32_MAX : INT32_MIN;
    }
    sim.run(vta::decode_all(sim.layout(), words));
    for (int o = 0; o < 16; ++o)
      CHECK(acc[static_cast<std::size_t>(o)] ==
            (o % 2 == 0 ? INT32_MIN + 258064 - 1 : INT32_MAX - 260096 + 1));
  }
}
