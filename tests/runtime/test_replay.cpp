// runtime/replay.hpp where tests/deploy/test_replay_codegen.cpp (generated replays against
// Program::instantiate) does not reach:
//   - random replays (loads with padding and offsets, GEMMs, resets, ALUs, stores, kernels
//     written again, or by their images) over overlapping regions: vta::check_hazards, an
//     independent race and deadlock detector (vector clocks over the token queues), proves every
//     stream orders its conflicting accesses; the same replay with over 64 regions (the tracker's
//     other path) writes the same words;
//   - hand-derived token flags: regions that do not overlap, the two arms of one condition
//     (which share SRAM without meeting), ACC_8BIT in the accumulator's bank, a hazard covered
//     by an earlier push, `again` with its accesses, a kernel's micro-ops reloaded;
//   - every error: EmptyTransfer, Misaligned (power-of-two and other element sizes),
//     LoopShape, UopsFull / KernelTooLarge from the op buffer (and a kernel's image from the
//     storage and the SRAM), a load-store hazard
//     (NotNeighbours, unordered()); kernels with no iteration or no micro-op write nothing;
//   - loop memos: random loops whose iterations are copied write the words of the same calls
//     made one by one (and order their hazards); an iteration that makes other calls than
//     the recorded one is LoopDiverged; so do random tiled loops whose tiles are copied whole
//     (TileMemo);
//   - floor_div / floor_mod / min / max against their definitions.
#include <dlavm/runtime/replay.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/hazards.hpp>
#include <dlavm/vta/hw/isa.hpp>
#include <dlavm/vta/hw/stream.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace runtime_replay_test {

namespace rt = dlavm::runtime;
namespace vta = dlavm::vta;
using i64 = std::int64_t;
using rt::Field;
using rt::MemId;
using rt::Opcode;
using rt::Queue;
using rt::Status;

using Storage = rt::FixedStorage<2048, 4096, 64>;
using Writer = rt::StreamWriter<Storage>;
using Replay = rt::Replay<Storage>;

// VTA_ISA.md's default element bytes: uop 4, wgt 256, inp 16, acc 64, out 16, acc8 16
constexpr rt::ElemBytes kElem = {{4, 256, 16, 64, 16, 16}};
constexpr std::uint64_t kParams[] = {0x10000, 0x20000, 0x40000, 0x80000};

// A writer, its storage and a replay over `regions`.
struct Rig {
  explicit Rig(std::vector<rt::SramRegion> r, std::size_t op_capacity = 64,
               std::uint32_t uop_depth = 8192, rt::ElemBytes elem = kElem,
               std::vector<std::uint64_t> params = {kParams, kParams + 4})
      : regions(std::move(r)),
        states(regions.size()),
        ops(op_capacity),
        phys(std::move(params)),
        st(std::make_unique<Storage>()),
        w(rt::IsaLayout::default_layout(), uop_depth, *st),
        replay(w, uop_depth, elem, regions.data(), states.data(), regions.size(), phys.data(),
               {ops.data(), ops.size()}) {}
  std::vector<rt::SramRegion> regions;
  std::vector<rt::RegionState> states;
  std::vector<rt::UopOp> ops;
  std::vector<std::uint64_t> phys;
  std::unique_ptr<Storage> st;
  Writer w;
  Replay replay;

  vta::Stream stream() const {
    vta::Stream s;
    s.insns.assign(st->insns(), st->insns() + st->insn_count());
    s.uops.assign(st->uops(), st->uops() + st->uop_count());
    s.uop_relocs.assign(st->relocs(), st->relocs() + st->reloc_count());
    return s;
  }
  rt::InsnFields at(std::size_t i) const {
    return vta::decode(rt::IsaLayout::default_layout(), st->insns()[i], i);
  }
  std::size_t size() const { return st->insn_count(); }
};

// ---- random replays against the race detector ------------------------------------------

const std::vector<rt::SramRegion> kRegions = {
    {MemId::Inp, 0, 64},   {MemId::Inp, 64, 128}, {MemId::Inp, 0, 128},  // 0-2
    {MemId::Wgt, 0, 32},   {MemId::Wgt, 32, 64},                         // 3-4
    {MemId::Acc, 0, 64},   {MemId::Acc, 64, 128}, {MemId::Acc, 32, 96},  // 5-7
    {MemId::Acc8, 96, 160}};                                             // 8: the acc bank
const std::uint32_t kInp[] = {0, 1, 2}, kWgt[] = {3, 4}, kAcc[] = {5, 6, 7, 8};

struct Saved {
  rt::WrittenKernel kernel;
  std::vector<rt::RegionAccess> accesses;
};

class RandomReplay {
 public:
  // `images`: each kernel written by its image (KernelImage, encoded by a writer of its own,
  // as vta::replay_source encodes a kernel of constants) instead of by its calls
  explicit RandomReplay(std::uint64_t seed, bool images = false) : rng_(seed), images_(images) {}

  // Writes `n` random steps into `r` (the same steps for the same seed).
  void run(Rig& rig, int n) {
    Replay& r = rig.replay;
    std::vector<Saved> saved;
    for (int k = 0; k < n; ++k) {
      const auto kind = rng_() % 9;
      if (kind <= 2) {
        REQUIRE(load(r, kind == 0 ? MemId::Inp : kind == 1 ? MemId::Wgt : MemId::Acc));
      } else if (kind == 3) {
        REQUIRE(store(r));
      } else if (kind <= 6) {
        REQUIRE(kernel(r, rig.w, kind - 4, saved));
      } else if (!saved.empty()) {
        const Saved& s = saved[rng_() % saved.size()];
        REQUIRE(r.again(s.kernel, s.accesses.data(), s.accesses.size()));
      }
    }
    REQUIRE(rig.w.finish());
  }

 private:
  i64 pick(i64 lo, i64 hi) {
    return lo + static_cast<i64>(rng_() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  template <std::size_t N>
  std::uint32_t one_of(const std::uint32_t (&v)[N]) {
    return v[rng_() % N];
  }
  bool load(Replay& r, MemId mem) {
    const std::uint32_t region = mem == MemId::Inp   ? one_of(kInp)
                                 : mem == MemId::Wgt ? one_of(kWgt)
                                                     : one_of(kAcc);
    const auto& g = kRegions[region];
    if (g.memory == MemId::Acc8) mem = MemId::Acc8;
    const i64 pad = mem == MemId::Inp ? 1 : 0;  // only INP loads pad
    const i64 y = pick(mem == MemId::Inp ? 0 : 1, 3), x = pick(1, 6);
    const i64 p[4] = {pick(0, pad), pick(0, pad), pick(0, pad), pick(0, pad)};
    const i64 box = (p[0] + y + p[1]) * (p[2] + x + p[3]);
    const i64 sram = g.begin + pick(0, g.end - g.begin - box);
    const std::size_t param = rng_() % 4;
    const i64 offset = pick(0, 100);
    const i64 stride = rng_() % 2 ? rt::kDenseStride : x + pick(0, 3);
    return r.load(mem, region, sram, param, offset, y, x, stride, p[0], p[1], p[2], p[3]);
  }
  bool store(Replay& r) {
    const std::uint32_t region = one_of(kAcc);
    const auto& g = kRegions[region];
    const i64 y = pick(1, 3), x = pick(1, 6);
    const i64 sram = g.begin + pick(0, g.end - g.begin - y * x);
    const std::size_t param = rng_() % 4;
    const i64 offset = pick(0, 100);
    return r.store(region, sram, param, offset, y, x, rt::kDenseStride);
  }
  // kind 0: GEMM, 1: GEMM reset, 2: ALU
  bool kernel(Replay& r, Writer& w, std::uint64_t kind, std::vector<Saved>& saved) {
    const std::uint32_t acc = one_of(kAcc), inp = one_of(kInp), wgt = one_of(kWgt),
                        src = one_of(kAcc);
    const i64 extent = pick(1, 3), fd = pick(0, 2), fs = pick(0, 2), fw = pick(0, 1);
    const auto in = [&](std::uint32_t region, i64 factor) {
      const auto& g = kRegions[region];
      return g.begin + pick(0, g.end - g.begin - 1 - (extent - 1) * factor);
    };
    r.kernel_begin();
    const bool loop = rng_() % 2 == 0;
    if (loop) r.loop_begin(extent, fd, fs, fw);
    const int nops = static_cast<int>(pick(1, 4));
    std::vector<rt::UopOp> ops;
    for (int i = 0; i < nops; ++i) {
      const i64 d = in(acc, loop ? fd : 0);
      const i64 s = kind == 2 ? in(src, loop ? fs : 0) : in(inp, loop ? fs : 0);
      ops.push_back({d, s, kind == 2 ? 0 : in(wgt, loop ? fw : 0)});
      r.push(ops.back().dst, ops.back().src, ops.back().wgt);
    }
    // the kernel's image: encoded by a writer of its own
    const rt::KernelLoop loops[] = {{extent, fd, fs, fw}};
    auto st = std::make_unique<Storage>();
    Writer encoder(rt::IsaLayout::default_layout(), 8192, *st);
    rt::KernelImage image;
    const auto encoded = [&](bool written) {
      REQUIRE(written);
      image = {encoder.last_kernel().word, encoder.last_kernel().opcode, encoder.last_kernel().size,
               st->uops() + encoder.last_kernel().dram};
      return true;
    };
    Saved s;
    bool ok = false;
    if (kind == 2) {
      const bool imm = rng_() % 2 == 0;
      const auto op = static_cast<rt::AluOp>(rng_() % 5);
      const i64 value = imm ? pick(-5, 5) : 0;
      ok = images_ &&
                   encoded(encoder.alu(loops, loop ? 1 : 0, ops.data(), ops.size(), op, imm, value))
               ? r.alu_image(image, acc, src)
               : r.alu(op, imm, value, acc, src);
      s.accesses = {{acc, true}, {src, false}};
    } else {
      ok = images_ && encoded(encoder.gemm(loops, loop ? 1 : 0, ops.data(), ops.size(), kind == 1))
               ? r.gemm_image(image, kind == 1, acc, inp, wgt)
               : r.gemm(kind == 1, acc, inp, wgt);
      s.accesses = {{acc, true}};
      if (kind == 0) s.accesses.insert(s.accesses.end(), {{inp, false}, {wgt, false}});
    }
    s.kernel = w.last_kernel();
    saved.push_back(s);
    return ok;
  }

  std::mt19937_64 rng_;
  bool images_ = false;
};

TEST_CASE("runtime replay: random replays order every hazard (check_hazards), any region count") {
  const vta::Config config;
  const int seeds = DLAVM_TEST_SANITIZED ? 15 : 60;
  std::size_t insns = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    CAPTURE(seed);
    Rig rig(kRegions);
    RandomReplay(static_cast<std::uint64_t>(seed)).run(rig, 60);
    const auto s = rig.stream();
    CHECK_NOTHROW(vta::check_hazards(config, s));
    insns += s.insns.size();
    // more than 64 regions: the tracker scans the table instead of its bit sets; regions
    // that are never accessed change nothing
    auto many = kRegions;
    for (int k = 0; k < 70; ++k) many.push_back({k % 2 ? MemId::Inp : MemId::Acc, k, k + 40});
    Rig big(many);
    RandomReplay(static_cast<std::uint64_t>(seed)).run(big, 60);
    CHECK(big.stream().insns == s.insns);
    CHECK(big.stream().uops == s.uops);
    // the table given its overlap masks (as Program and the generated headers give it): the
    // tracker reads them instead of comparing the pairs, and writes the same words
    auto masked = kRegions;
    rt::with_overlap_masks(masked.data(), masked.size());
    Rig given(masked);
    RandomReplay(static_cast<std::uint64_t>(seed)).run(given, 60);
    CHECK(given.stream().insns == s.insns);
    // each kernel by its image: the same words and micro-ops
    Rig imaged(kRegions);
    RandomReplay(static_cast<std::uint64_t>(seed), true).run(imaged, 60);
    CHECK(imaged.stream().insns == s.insns);
    CHECK(imaged.stream().uops == s.uops);
  }
  MESSAGE(insns, " instructions of random replays free of races");
  // the detector does fail: the last random stream without its tokens races or deadlocks
  Rig rig(kRegions);
  RandomReplay(1).run(rig, 60);
  auto s = rig.stream();
  for (auto& w : s.insns) {
    auto f = vta::decode(rt::IsaLayout::default_layout(), w);
    f.pop_prev_dep = f.pop_next_dep = f.push_prev_dep = f.push_next_dep = false;
    w = rt::pack(rt::IsaLayout::default_layout(), f);
  }
  CHECK_THROWS(vta::check_hazards(config, s));
}

// ---- loop memos: iterations copied against the same calls made one by one ---------------

// One iteration of a random loop body: the same calls every iteration (from `seed`), but for
// DRAM offsets, which move with `i` (by a step, or some as i * i when `squares`), and
// kernels through memos as the generated replays make them (KernelMemo: encoded once, then
// written again). A kernel site may be entered up to three times an iteration, as by a loop
// inside the body, keyed on that loop's value (its kernel's extent): a memo of fewer entries
// than the values replaces some every iteration, and no iteration after that is copied.
// `listed`: no call is made; the DRAM step of each transfer the body would write, times `by`,
// is appended (what a generated replay lists for a tile it records: TileTape::step).
template <class Memo>
bool loop_body(Rig& rig, std::uint64_t seed, i64 i, std::vector<Memo>& memos, bool squares,
               std::vector<i64>* listed = nullptr, i64 by = 1) {
  std::mt19937_64 rng(seed);
  const auto pick = [&](i64 lo, i64 hi) {
    return lo + static_cast<i64>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  const auto region = [&](const auto& among) { return among[rng() % std::size(among)]; };
  Replay& r = rig.replay;
  const int steps = static_cast<int>(pick(1, 8));
  std::size_t site = 0;
  for (int k = 0; k < steps; ++k) {
    const auto kind = rng() % 5;
    const i64 step = pick(0, 40);
    const i64 offset = pick(0, 50) + (squares && rng() % 4 == 0 ? i * i : i * step);
    const std::size_t param = rng() % 4;
    bool ok = true;
    if (kind <= 1) {
      const MemId mem = kind == 0 ? (rng() % 2 ? MemId::Inp : MemId::Wgt) : MemId::Acc;
      const std::uint32_t at = mem == MemId::Inp   ? region(kInp)
                               : mem == MemId::Wgt ? region(kWgt)
                                                   : region(kAcc);
      const MemId as = kRegions[at].memory == MemId::Acc8 ? MemId::Acc8 : mem;
      const i64 x = pick(1, 4);
      if (listed != nullptr)
        listed->push_back(step * by);
      else
        ok = r.load(as, at, kRegions[at].begin, param, offset, 1, x, rt::kDenseStride, 0, 0, 0, 0);
    } else if (kind == 2) {
      const std::uint32_t at = region(kAcc);
      const i64 x = pick(1, 4);
      if (listed != nullptr)
        listed->push_back(step * by);
      else
        ok = r.store(at, kRegions[at].begin, param, offset, 1, x, rt::kDenseStride);
    } else {
      const bool alu = kind == 4, reset = !alu && rng() % 2 == 0;
      const std::uint32_t acc = region(kAcc), inp = region(kInp), wgt = region(kWgt),
                          src = region(kAcc);
      const i64 first = pick(1, 3), d = pick(0, 3), s = pick(0, 3);
      const i64 entered = rng() % 3 == 0 ? pick(2, 3) : 1;
      if (listed != nullptr) continue;  // (a kernel moves no data)
      if (memos.size() <= site) memos.resize(site + 1);
      Memo& m = memos[site++];
      for (i64 j = 0; j < entered && ok; ++j) {
        const i64 extent = 1 + ((first + j) % 3);
        if (m.hit(extent)) {
          ok = alu ? r.alu_again(m, acc, src) : r.gemm_again(m, reset, acc, inp, wgt);
        } else {
          m.enter(r, extent);
          r.kernel_begin();
          r.loop_begin(extent, 1, 1, 0);
          r.push(kRegions[acc].begin + d, (alu ? kRegions[src].begin : kRegions[inp].begin) + s,
                 alu ? 0 : kRegions[wgt].begin);
          ok = alu ? r.alu(rt::AluOp::Add, false, 0, acc, src) : r.gemm(reset, acc, inp, wgt);
          m.leave(rig.w);
        }
      }
    }
    if (!ok) return false;
  }
  return true;
}

// A replay with copies against the same calls without: the same words, and race-free.
void check_same_words(const Rig& memo, const Rig& calls) {
  REQUIRE(memo.size() == calls.size());
  CHECK(memo.stream().insns == calls.stream().insns);
  CHECK(memo.stream().uops == calls.stream().uops);
  CHECK_NOTHROW(vta::check_hazards(vta::Config{}, memo.stream()));
}

// A random prologue, a loop of `n` iterations of a random body, and a random epilogue, the
// loop memoized or not; with affine offsets (even seeds), iterations are copied whole, and
// for half the seeds those after a whole copy with its keys at once, as the generated replays
// copy them (Replay::iterations_again; the keys change halfway for every third seed). `Memo`:
// the kernel sites' memos.
template <class Memo = rt::KernelMemo<1, rt::kKernelMemoEntries>>
bool memoized_loop(Rig& rig, std::uint64_t seed, i64 n, bool memo) {
  rig.replay.copy_loops(memo);
  const bool affine = seed % 2 == 0, again = (seed / 2) % 2 == 0, keyed = seed % 3 == 0;
  std::vector<Memo> before, body, after;
  if (!loop_body(rig, seed * 3, 0, before, false)) return false;
  rt::LoopMemo<1, 8, 9> lm{};
  lm.reset();
  const auto key = [&](i64 i) -> i64 { return keyed && 2 * i >= n ? 8 : 7; };
  const auto same_at = [&](i64 i) { return lm.equal(key(i)); };
  for (i64 i = 0; i < n; ++i) {
    if (rig.replay.iteration_begin(lm, lm.same(key(i)), i + 1 < n, affine) &&
        !loop_body(rig, (seed * 3) + 1, i, body, !affine))
      return false;
    if (!rig.replay.iteration_end(lm)) return false;
    if (again && !rig.replay.iterations_again(lm, i, n, same_at)) return false;
  }
  return loop_body(rig, (seed * 3) + 2, n, after, false) && rig.w.finish();
}

TEST_CASE("runtime replay: loop iterations copied write the words their calls write") {
  const int seeds = DLAVM_TEST_SANITIZED ? 300 : 2000;
  std::size_t copied = 0, whole = 0, insns = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    CAPTURE(seed);
    const i64 n = 3 + (seed % 10);
    Rig memo(kRegions), calls(kRegions);
    REQUIRE(memoized_loop(memo, static_cast<std::uint64_t>(seed), n, true));
    REQUIRE(memoized_loop(calls, static_cast<std::uint64_t>(seed), n, false));
    CHECK(calls.replay.copied() == 0);
    check_same_words(memo, calls);
    copied += memo.replay.copied();
    whole += memo.replay.copied_whole();
    insns += memo.size();
  }
  MESSAGE(copied, " iterations copied (", whole, " whole) in ", insns,
          " instructions of random loops");
  CHECK(copied > static_cast<std::size_t>(seeds));  // most loops copy some iterations
  CHECK(whole > static_cast<std::size_t>(seeds) / 4);
}

// A loop inside another, entered `m` times, each entry after calls of its own (the same in
// every entry, or different in every second one; its calls the same in every entry, or other
// calls with other keys in every second one), its memo declared outside both as the
// generated replays declare it (LoopTape::enter; `fresh`: a memo of its own each entry, as
// before they did). An entry's iterations like the one the tape recorded in an entry before
// copy it (from its words as that one ended), where they start as it did; the DRAM steps an
// entry measured are kept where they are the same in every entry (`steps`), else measured
// again. (Each of these, planted, fails it: the steps kept where they differ, the keys not
// compared with the recorded one's, the stream's words copied in place of the kept ones, the
// dependency state not matched.)
bool loop_entered_again(Rig& rig, std::uint64_t seed, i64 n, i64 m, bool memo, bool fresh) {
  using Memo = rt::KernelMemo<1, rt::kKernelMemoEntries>;
  rig.replay.copy_loops(memo);
  const bool affine = seed % 2 == 0, steps = seed % 3 != 0, keyed = seed % 5 == 0;
  std::vector<Memo> bodies[2], after;  // the kernel sites of each key's calls
  rt::LoopMemo<1, 8, 9, 8> kept{};
  for (i64 e = 0; e < m; ++e) {
    std::vector<Memo> own;  // the calls before each entry: the same, or every second other
    if (!loop_body(rig, (seed * 7) + ((seed % 4 == 1 ? e % 2 : 0) << 32), e, own, false))
      return false;
    rt::LoopMemo<1, 8, 9, 8> one{};
    rt::LoopTape& lm = fresh ? static_cast<rt::LoopTape&>(one) : kept;
    lm.enter(steps, e + 1 < m);
    for (i64 i = 0; i < n; ++i) {
      // the DRAM offsets move with i by the same step in every entry, or by one of its own
      const i64 at = steps ? i + (37 * e) : i * (1 + e);
      // (other keys, other calls)
      const i64 key = keyed ? e % 2 : 7;
      if (rig.replay.iteration_begin(lm, lm.same(key), i + 1 < n, affine) &&
          !loop_body(rig, (seed * 7) + 1 + (static_cast<std::uint64_t>(key) << 32), at,
                     bodies[key == 0 ? 0 : 1], !affine))
        return false;
      if (!rig.replay.iteration_end(lm)) return false;
      // (where the steps are kept, the iterations after a whole copy at once)
      if (steps && !rig.replay.iterations_again(lm, i, n, [&](i64) { return lm.equal(key); }))
        return false;
    }
  }
  return loop_body(rig, (seed * 7) + 2, m, after, false) && rig.w.finish();
}

TEST_CASE("runtime replay: a loop entered again copies an iteration an entry before recorded") {
  const int seeds = DLAVM_TEST_SANITIZED ? 300 : 1500;
  std::size_t copied = 0, copied_fresh = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    CAPTURE(seed);
    const i64 n = 3 + (seed % 5), m = 2 + (seed % 3);
    const auto s = static_cast<std::uint64_t>(seed);
    Rig memo(kRegions), fresh(kRegions), calls(kRegions);
    REQUIRE(loop_entered_again(memo, s, n, m, true, false));
    REQUIRE(loop_entered_again(fresh, s, n, m, true, true));
    REQUIRE(loop_entered_again(calls, s, n, m, false, false));
    check_same_words(memo, calls);
    CHECK(fresh.stream().insns == calls.stream().insns);
    copied += memo.replay.copied();
    copied_fresh += fresh.replay.copied();
  }
  MESSAGE(copied, " iterations copied in loops entered again, ", copied_fresh,
          " with a memo of their own each entry");
  // (an entry's second iteration copies the one recorded before rather than being recorded;
  // at -Os, with no time shortcuts, the two count the same)
  if constexpr (rt::kTimeShortcuts) CHECK(copied > copied_fresh + static_cast<std::size_t>(seeds));
}

// A loop of `n` tiles (TileMemo) as the generated replays write one: each tile random calls,
// a loop of `inner` iterations memoized inside it (its memo kept across the tiles), and random
// calls after it, every DRAM offset affine in the tile with a step free of the inner loop (the
// codegen's rule), every kernel through a memo of `Memo`'s entries (of one, sites entered two
// or three times an iteration replace their entries in every tile), the memos sized for
// `Regions` regions. The third tile on copies the one before it whole where it starts as the
// second did.
// `steps`: the code gives each transfer's step for a tile recorded (the first one on), as
// vta::replay_source's does; then, for odd seeds, the tile's calls are made once before the
// loop, so that the first tile starts as the second does and loads no micro-ops (its copy).
template <class Memo, std::size_t Regions = 9>
bool tiled_loop(Rig& rig, std::uint64_t seed, i64 n, i64 inner, bool memo, bool steps = false,
                bool gaps = false) {
  rig.replay.copy_loops(memo);
  std::vector<Memo> before, head, body, tail, after, gap;
  if (!loop_body(rig, seed * 5, 0, before, false)) return false;
  if (steps && seed % 2 == 1) {
    if (!loop_body(rig, (seed * 5) + 1, 0, head, false)) return false;
    for (i64 i = 0; i < inner; ++i)
      if (!loop_body(rig, (seed * 5) + 2, i, body, false)) return false;
    if (!loop_body(rig, (seed * 5) + 3, 0, tail, false)) return false;
  }
  rt::TileMemo<1, 64, Regions> tm{};
  rt::LoopMemo<1, 8, Regions, 8> lm{};
  for (i64 t = 0; t < n; ++t) {
    if (rig.replay.tile_begin(tm, tm.same(3), t + 1 < n, steps)) {
      if (!loop_body(rig, (seed * 5) + 1, t, head, false)) return false;
      lm.enter(true, t + 1 < n);
      for (i64 i = 0; i < inner; ++i) {
        if (rig.replay.iteration_begin(lm, lm.same(7), i + 1 < inner, true) &&
            !loop_body(rig, (seed * 5) + 2, i + (100 * t), body, false))
          return false;
        if (!rig.replay.iteration_end(lm)) return false;
        // (for odd tiles, the iterations after a whole copy at once: Replay::iterations_again)
        if (t % 2 == 1 &&
            !rig.replay.iterations_again(lm, i, inner, [&](i64) { return lm.equal(7); }))
          return false;
      }
      if (!loop_body(rig, (seed * 5) + 3, t, tail, false)) return false;
    }
    if (steps &&
        tm.recording) {  // (the offsets move by step x t, the inner loop's by step x 100 t)
      std::vector<i64> listed;
      loop_body(rig, (seed * 5) + 1, t, head, false, &listed);
      for (i64 i = 0; i < inner; ++i) loop_body(rig, (seed * 5) + 2, 0, body, false, &listed, 100);
      loop_body(rig, (seed * 5) + 3, t, tail, false, &listed);
      for (const i64 by : listed) tm.step(by);
    }
    if (!rig.replay.tile_end(tm)) return false;
    // (`gaps`: calls between some tiles, after which a tile starts otherwise than the copy
    // before it did, one tile on)
    if (gaps && t % 3 == 0 && !loop_body(rig, (seed * 5) + 6, t, gap, false)) return false;
  }
  return loop_body(rig, (seed * 5) + 4, n, after, false) && rig.w.finish();
}

TEST_CASE("runtime replay: tiles copied whole write the words their calls write") {
  const int seeds = DLAVM_TEST_SANITIZED ? 300 : 2000;
  std::size_t tiles = 0, insns = 0, big_tiles = 0, given_tiles = 0, second_tiles = 0,
              gapped_tiles = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    CAPTURE(seed);
    const i64 n = 1 + (seed % 7), inner = seed % 9;
    const auto s = static_cast<std::uint64_t>(seed);
    Rig memo(kRegions), calls(kRegions), one(kRegions), one_calls(kRegions);
    using Many = rt::KernelMemo<1, rt::kKernelMemoEntries>;
    using One = rt::KernelMemo<1, 1>;
    REQUIRE(tiled_loop<Many>(memo, s, n, inner, true));
    REQUIRE(tiled_loop<Many>(calls, s, n, inner, false));
    REQUIRE(tiled_loop<One>(one, s, n, inner, true));
    REQUIRE(tiled_loop<One>(one_calls, s, n, inner, false));
    CHECK(calls.replay.copied_tiles() == 0);
    check_same_words(memo, calls);
    check_same_words(one, one_calls);
    tiles += memo.replay.copied_tiles() + one.replay.copied_tiles();
    insns += memo.size() + one.size();
    // at most every tile from the third on; with the steps given, from the second
    CHECK(memo.replay.copied_tiles() <= static_cast<std::size_t>(std::max<i64>(n - 2, 0)));
    Rig given(kRegions), given_calls(kRegions), one_given(kRegions), one_given_calls(kRegions);
    REQUIRE(tiled_loop<Many>(given, s, n, inner, true, true));
    REQUIRE(tiled_loop<Many>(given_calls, s, n, inner, false, true));
    REQUIRE(tiled_loop<One>(one_given, s, n, inner, true, true));
    REQUIRE(tiled_loop<One>(one_given_calls, s, n, inner, false, true));
    check_same_words(given, given_calls);
    check_same_words(one_given, one_given_calls);
    // calls between some tiles: the copies after them start anew (no steady copy)
    Rig gapped(kRegions), gapped_calls(kRegions);
    REQUIRE(tiled_loop<Many>(gapped, s, n, inner, true, true, true));
    REQUIRE(tiled_loop<Many>(gapped_calls, s, n, inner, false, true, true));
    check_same_words(gapped, gapped_calls);
    gapped_tiles += gapped.replay.copied_tiles();
    CHECK(given.replay.copied_tiles() <= static_cast<std::size_t>(std::max<i64>(n - 1, 0)));
    given_tiles += given.replay.copied_tiles() + one_given.replay.copied_tiles();
    second_tiles += given.replay.copied_tiles() == static_cast<std::size_t>(n - 1) && n > 1;
    // more than 64 regions, never accessed (the tracker scans the table, a tile's match every
    // region): the same words
    if (seed % 4 == 0) {
      auto many = kRegions;
      for (int k = 0; k < 70; ++k) many.push_back({k % 2 ? MemId::Inp : MemId::Acc, k, k + 40});
      Rig big(many);
      REQUIRE(tiled_loop<Many, 79>(big, s, n, inner, true));
      CHECK(big.stream().insns == calls.stream().insns);
      big_tiles += big.replay.copied_tiles();
    }
  }
  MESSAGE(tiles, " tiles copied whole in ", insns, " instructions of random tiled loops; ",
          big_tiles, " with more than 64 regions; ", given_tiles, " with the steps given, the ",
          "second tile on in ", second_tiles, " loops; ", gapped_tiles,
          " with calls between tiles");
  // (without the time shortcuts, at -Os, every tile runs its calls)
  if constexpr (rt::kTimeShortcuts) {
    CHECK(tiles > static_cast<std::size_t>(seeds));
    CHECK(big_tiles > static_cast<std::size_t>(seeds) / 8);
    CHECK(given_tiles > tiles);
    CHECK(second_tiles > static_cast<std::size_t>(seeds) / 20);
    CHECK(gapped_tiles > static_cast<std::size_t>(seeds) / 2);
  }
}

// A loop of `n` tiles whose every tile ends by storing an accumulator region a kernel of the
// tile writes: random calls, that kernel, random calls, the store, each DRAM offset affine in
// the tile, the steps given (as vta::replay_source's tiled loops: the integer softmax's tiles
// store their probabilities). The first tile waits for no store; from the second on, the
// tile's first write of that memory waits for the store before it (a pop the recorded first
// tile did not take), which a copy of the first tile takes (Replay::starts_alike, take_waits).
// The tile's first kernels load micro-ops, which its copies pass over. For odd seeds the tile
// also starts by loading an input region that a GEMM reads at its end, so that from the
// second tile on that load (of the load module) waits for the GEMM before it.
bool storing_tiles(Rig& rig, std::uint64_t seed, i64 n, bool memo) {
  using Memo = rt::KernelMemo<1, rt::kKernelMemoEntries>;
  rig.replay.copy_loops(memo);
  std::vector<Memo> head, tail;
  Memo reset, product;
  const std::uint32_t out = kAcc[seed % std::size(kAcc)];
  const i64 out_step = 1 + static_cast<i64>(seed % 37), in_step = 1 + static_cast<i64>(seed % 11);
  const bool inputs = seed % 2 == 1;
  rt::TileMemo<1, 64, 9> tm{};
  for (i64 t = 0; t < n; ++t) {
    if (rig.replay.tile_begin(tm, tm.same(3), t + 1 < n, true)) {
      if (inputs && !rig.replay.load(MemId::Inp, 0, kRegions[0].begin, 0, 4 + (t * in_step), 1, 2,
                                     rt::kDenseStride, 0, 0, 0, 0))
        return false;
      if (!loop_body(rig, (seed * 3) + 1, t, head, false)) return false;
      if (reset.hit(1)) {
        if (!rig.replay.gemm_again(reset, true, out, 0, 0)) return false;
      } else {
        reset.enter(rig.replay, 1);
        rig.replay.kernel_begin();
        rig.replay.loop_begin(4, 1, 0, 0);
        rig.replay.push(kRegions[out].begin, 0, 0);
        if (!rig.replay.gemm(true, out, 0, 0)) return false;
        reset.leave(rig.w);
      }
      if (!loop_body(rig, (seed * 3) + 2, t, tail, false)) return false;
      if (inputs && product.hit(1)) {
        if (!rig.replay.gemm_again(product, false, out, 0, 3)) return false;
      } else if (inputs) {
        product.enter(rig.replay, 1);
        rig.replay.kernel_begin();
        rig.replay.loop_begin(2, 1, 1, 0);
        rig.replay.push(kRegions[out].begin, kRegions[0].begin, kRegions[3].begin);
        if (!rig.replay.gemm(false, out, 0, 3)) return false;
        product.leave(rig.w);
      }
      if (!rig.replay.store(out, kRegions[out].begin, 1, 8 + (t * out_step), 1, 4,
                            rt::kDenseStride))
        return false;
    }
    if (tm.recording) {
      std::vector<i64> listed;
      if (inputs) listed.push_back(in_step);
      loop_body(rig, (seed * 3) + 1, t, head, false, &listed);
      loop_body(rig, (seed * 3) + 2, t, tail, false, &listed);
      listed.push_back(out_step);
      for (const i64 by : listed) tm.step(by);
    }
    if (!rig.replay.tile_end(tm)) return false;
  }
  return rig.w.finish();
}

TEST_CASE("runtime replay: a tile copied from the first takes the waits for the stores before it") {
  const int seeds = DLAVM_TEST_SANITIZED ? 200 : 1000;
  std::size_t tiles = 0, second = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    CAPTURE(seed);
    const i64 n = 2 + (seed % 5);
    const auto s = static_cast<std::uint64_t>(seed);
    Rig memo(kRegions), calls(kRegions);
    REQUIRE(storing_tiles(memo, s, n, true));
    REQUIRE(storing_tiles(calls, s, n, false));
    check_same_words(memo, calls);
    tiles += memo.replay.copied_tiles();
    second += memo.replay.copied_tiles() == static_cast<std::size_t>(n - 1);
  }
  MESSAGE(tiles, " tiles copied; every tile but the first in ", second, " loops");
  // (the others: random calls whose states differ otherwise from the first tile to the second)
  if constexpr (rt::kTimeShortcuts) CHECK(second > static_cast<std::size_t>(seeds) / 10);
}

// Tiled loops of 4 tiles inside the iterations of a memoized loop of `m` (vta::replay_source
// prints none: a loop memo's recorded or copied iteration must see every call, so the tiles
// there run their calls, and the loop memo copies them; in an iteration it neither records nor
// copies, they are copied as anywhere).
bool tiles_in_loop(Rig& rig, std::uint64_t seed, i64 m, bool memo) {
  using Memo = rt::KernelMemo<1, rt::kKernelMemoEntries>;
  rig.replay.copy_loops(memo);
  std::vector<Memo> head, tail;
  rt::LoopMemo<1, 64, 9> outer{};
  for (i64 j = 0; j < m; ++j) {
    if (rig.replay.iteration_begin(outer, outer.same(1), j + 1 < m, true)) {
      rt::TileMemo<1, 64, 9> tm{};
      for (i64 t = 0; t < 4; ++t) {
        if (rig.replay.tile_begin(tm, tm.same(3), t + 1 < 4) &&
            (!loop_body(rig, seed * 3, t + (10 * j), head, false) ||
             !loop_body(rig, (seed * 3) + 1, t + (10 * j), tail, false)))
          return false;
        if (!rig.replay.tile_end(tm)) return false;
      }
    }
    if (!rig.replay.iteration_end(outer)) return false;
  }
  return rig.w.finish();
}

TEST_CASE("runtime replay: tiles inside a memoized loop's iteration run their calls") {
  const int seeds = DLAVM_TEST_SANITIZED ? 100 : 500;
  std::size_t copied = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    CAPTURE(seed);
    const auto s = static_cast<std::uint64_t>(seed);
    Rig memo(kRegions), calls(kRegions);
    REQUIRE(tiles_in_loop(memo, s, 3 + (seed % 3), true));
    REQUIRE(tiles_in_loop(calls, s, 3 + (seed % 3), false));
    check_same_words(memo, calls);
    copied += memo.replay.copied();
  }
  MESSAGE(copied, " iterations of loops around tiled loops copied");
  CHECK(copied > static_cast<std::size_t>(seeds) / 2);
}

TEST_CASE("runtime replay: a kernel memo that replaces entries stops the loop's copies") {
  // a memo of one entry, whose sites entered two or three times an iteration replace it: the
  // loops that have such a site copy no iteration after it and write the calls' words (a copy
  // would find a kernel its recorded calls found missing, and fail: LoopDiverged)
  const int seeds = DLAVM_TEST_SANITIZED ? 200 : 1000;
  std::size_t copied_one = 0, copied_many = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    CAPTURE(seed);
    const i64 n = 3 + (seed % 6);
    const auto s = static_cast<std::uint64_t>(seed);
    Rig one(kRegions), many(kRegions), calls(kRegions);
    REQUIRE(memoized_loop<rt::KernelMemo<1, 1>>(one, s, n, true));
    REQUIRE(memoized_loop(many, s, n, true));
    REQUIRE(memoized_loop<rt::KernelMemo<1, 1>>(calls, s, n, false));
    REQUIRE(one.size() == calls.size());
    CHECK(one.stream().insns == calls.stream().insns);
    CHECK(many.stream().insns == calls.stream().insns);
    CHECK(one.stream().uops == calls.stream().uops);
    copied_one += one.replay.copied();
    copied_many += many.replay.copied();
  }
  MESSAGE(copied_one, " iterations copied with memos of one entry, ", copied_many, " with ",
          rt::kKernelMemoEntries);
  CHECK(copied_one > 0);  // the loops whose sites are entered once an iteration
  CHECK(copied_many > copied_one + static_cast<std::size_t>(seeds) / 4);
}

// A loop whose body is memoized in two parts (iteration_begin's `apart`, as the generated
// replay memoizes the statements around one marked vta.replay_apart), a statement written
// call by call between them whose calls repeat every `period` iterations (1: always the same;
// past n: never). A part is copied from the state its calls meet, steady only where the calls
// since its last start repeat those before, and not at all where a later call set a push on
// the words it would copy. (This test found a copy that carried such a push when another push
// toward the same module came after it, which a check of the last push alone missed; a part
// taken as steady whatever the calls between, planted, fails it too.)
bool loop_in_parts(Rig& rig, std::uint64_t seed, i64 n, i64 period, bool memo) {
  using Memo = rt::KernelMemo<1, rt::kKernelMemoEntries>;
  rig.replay.copy_loops(memo);
  const bool affine = seed % 2 == 0;
  std::vector<Memo> before, first, second, after;
  if (!loop_body(rig, seed * 5, 0, before, false)) return false;
  rt::LoopMemo<1, 8, 9> lm{}, lm_1{};
  lm.reset();
  lm_1.reset();
  for (i64 i = 0; i < n; ++i) {
    if (rig.replay.iteration_begin(lm, lm.same(7), i + 1 < n, affine, true) &&
        !loop_body(rig, (seed * 5) + 1, i, first, !affine))
      return false;
    if (!rig.replay.iteration_end(lm)) return false;
    std::vector<Memo> apart;  // written call by call, kernels encoded every time
    if (!loop_body(rig, (seed * 5) + 2 + (static_cast<std::uint64_t>(i % period) << 32), i, apart,
                   false))
      return false;
    if (rig.replay.iteration_begin(lm_1, lm_1.same(7), i + 1 < n, affine, true) &&
        !loop_body(rig, (seed * 5) + 3, i, second, !affine))
      return false;
    if (!rig.replay.iteration_end(lm_1)) return false;
  }
  return loop_body(rig, (seed * 5) + 4, n, after, false) && rig.w.finish();
}

TEST_CASE("runtime replay: a loop's body copied in parts around calls that change") {
  const int seeds = DLAVM_TEST_SANITIZED ? 300 : 1500;
  std::size_t copied = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    CAPTURE(seed);
    const i64 n = 3 + (seed % 7), period = seed % 3 == 0 ? 1 : seed % 3 == 1 ? 2 : n + 1;
    CAPTURE(period);
    const auto s = static_cast<std::uint64_t>(seed);
    Rig memo(kRegions), calls(kRegions);
    REQUIRE(loop_in_parts(memo, s, n, period, true));
    REQUIRE(loop_in_parts(calls, s, n, period, false));
    check_same_words(memo, calls);
    copied += memo.replay.copied();
  }
  MESSAGE(copied, " parts copied in ", seeds, " random loops");
  CHECK(copied > static_cast<std::size_t>(seeds));
}

// A loop in two parts around the same call each iteration: each part's first copy is matched
// to its recorded iteration, and the later ones are steady (the calls between their starts
// repeat). That needs the recorded iteration's calls noted as its copies note theirs, one word
// (Replay::note_recorded): noted call by call, the calls between the first two copies' starts
// would not repeat those between the recorded one's and the first's, and the second copy would
// be matched too (planted: 4 matches).
TEST_CASE("runtime replay: a part's copies are steady from its second") {
  const std::vector<rt::SramRegion> regions = {{MemId::Inp, 0, 64}, {MemId::Acc, 0, 64}};
  const auto run = [&](Rig& rig, bool copies) {
    Replay& r = rig.replay;
    r.copy_loops(copies);
    rt::KernelMemo<0> first{}, middle{}, second{};
    const auto add = [&](rt::KernelMemo<0>& m, i64 imm) {
      if (m.hit()) return r.alu_again(m, 1, 1);
      m.enter(r);
      r.kernel_begin();
      r.push(0, 0, 0);
      if (!r.alu(rt::AluOp::Add, true, imm, 1, 1)) return false;
      m.leave(rig.w);
      return true;
    };
    rt::LoopMemo<1, 4, 2> lm{}, lm_1{};
    lm.reset();
    lm_1.reset();
    const i64 n = 8;
    for (i64 i = 0; i < n; ++i) {
      if (r.iteration_begin(lm, lm.same(), i + 1 < n, true, true))
        REQUIRE((r.load(MemId::Inp, 0, 0, 0, i * 4, 1, 2, 2, 0, 0, 0, 0) && add(first, 1)));
      REQUIRE(r.iteration_end(lm));
      REQUIRE(add(middle, 2));
      if (r.iteration_begin(lm_1, lm_1.same(), i + 1 < n, true, true)) REQUIRE(add(second, 3));
      REQUIRE(r.iteration_end(lm_1));
    }
    REQUIRE(rig.w.finish());
  };
  Rig memo(regions), calls(regions);
  run(memo, true);
  run(calls, false);
  check_same_words(memo, calls);
  // (each part: iteration 0 written by its calls, 1 recorded, its steps measured, 2 to 7 whole)
  CHECK(memo.replay.copied_whole() == 12);
  CHECK(memo.replay.matched() == 2);
}

TEST_CASE("runtime replay: a copied iteration that makes other calls than the recorded one") {
  // the keys say the iterations are the same; the third one makes one call more
  Rig rig(kRegions);
  rt::LoopMemo<1, 8, 9> lm{};
  lm.reset();
  bool ok = true;
  for (i64 i = 0; i < 4 && ok; ++i) {
    rig.replay.iteration_begin(lm, lm.same(0), i + 1 < 4);
    ok = rig.replay.load(MemId::Inp, 0, 0, 0, i, 1, 1, 1, 0, 0, 0, 0) &&
         (i != 2 || rig.replay.load(MemId::Inp, 0, 0, 0, i, 1, 1, 1, 0, 0, 0, 0)) &&
         rig.replay.iteration_end(lm);
  }
  CHECK_FALSE(ok);
  CHECK(rig.w.error().status == Status::LoopDiverged);
  CHECK(rig.size() == 3);  // the two iterations written and the copy's first load
  // one call fewer: found at the end of the copy
  Rig fewer(kRegions);
  rt::LoopMemo<1, 8, 9> lm2{};
  lm2.reset();
  ok = true;
  for (i64 i = 0; i < 4 && ok; ++i) {
    fewer.replay.iteration_begin(lm2, lm2.same(0), i + 1 < 4);
    ok = fewer.replay.load(MemId::Inp, 0, 0, 0, i, 1, 1, 1, 0, 0, 0, 0) &&
         (i == 2 || fewer.replay.load(MemId::Wgt, 3, 0, 1, i, 1, 1, 1, 0, 0, 0, 0)) &&
         fewer.replay.iteration_end(lm2);
  }
  CHECK_FALSE(ok);
  CHECK(fewer.w.error().status == Status::LoopDiverged);
}

// ---- tokens by hand ---------------------------------------------------------------------

TEST_CASE("runtime replay: SramRegion::overlaps, by hand") {
  using R = rt::SramRegion;
  const R a{MemId::Inp, 0, 64, 0};
  CHECK(a.overlaps(R{MemId::Inp, 63, 70, 0}));
  CHECK_FALSE(a.overlaps(R{MemId::Inp, 64, 70, 0}));          // [0, 64) and [64, 70) touch only
  CHECK_FALSE(a.overlaps(R{MemId::Wgt, 0, 64, 0}));           // another memory
  CHECK(R{MemId::Acc, 0, 8}.overlaps(R{MemId::Acc8, 4, 5}));  // one bank
  CHECK_FALSE(R{MemId::Acc, 0, 8}.overlaps(R{MemId::Out, 4, 5}));
  // arms: 2k - 1 and 2k are the then and else arms of condition k
  const auto arm = [](std::uint32_t k) { return R{MemId::Inp, 0, 64, k}; };
  CHECK_FALSE(arm(1).overlaps(arm(2)));
  CHECK_FALSE(arm(4).overlaps(arm(3)));
  CHECK(arm(1).overlaps(arm(1)));
  CHECK(arm(2).overlaps(arm(3)));  // conditions 1 and 2: may both run
  CHECK(arm(1).overlaps(arm(3)));
  CHECK(arm(0).overlaps(arm(2)));  // outside any condition
  CHECK(arm(5).overlaps(arm(0)));
}

TEST_CASE("runtime replay: overlap masks are the pairs' overlaps, and the tracker reads them") {
  std::mt19937_64 rng(7);
  const MemId memories[] = {MemId::Inp, MemId::Wgt, MemId::Acc, MemId::Acc8};
  for (int table = 0; table < 50; ++table) {
    CAPTURE(table);
    std::vector<rt::SramRegion> regions(1 + (rng() % 64));
    for (auto& r : regions) {
      r.memory = memories[rng() % 4];
      r.begin = static_cast<i64>(rng() % 32);
      r.end = r.begin + static_cast<i64>(rng() % 8);  // some empty
      r.arm = static_cast<std::uint32_t>(rng() % 5);
    }
    rt::with_overlap_masks(regions.data(), regions.size());
    for (std::size_t a = 0; a < regions.size(); ++a)
      for (std::size_t b = 0; b < regions.size(); ++b)
        CHECK(((regions[a].overlap_mask >> b) & 1) == (regions[a].overlaps(regions[b]) ? 1u : 0u));
  }
  // more than 64 regions: no masks (the tracker compares the regions at each access)
  std::vector<rt::SramRegion> many(65, rt::SramRegion{MemId::Inp, 0, 4});
  rt::with_overlap_masks(many.data(), many.size());
  CHECK(many[0].overlap_mask == 0);
  // a given mask is what the tracker walks: one that leaves out a region that does overlap
  // loses the token (so the masks Program computes are what the hazards come from)
  const auto popped = [](std::uint64_t gemm_input_mask) {
    std::vector<rt::SramRegion> regions{
        {MemId::Inp, 0, 64}, {MemId::Inp, 32, 96}, {MemId::Acc, 0, 16}, {MemId::Wgt, 0, 4}};
    rt::with_overlap_masks(regions.data(), regions.size());
    regions[1].overlap_mask = gemm_input_mask;
    Rig rig(regions);
    REQUIRE(rig.replay.load(MemId::Inp, 0, 0, 0, 0, 1, 4, rt::kDenseStride, 0, 0, 0, 0));
    rig.replay.kernel_begin();
    rig.replay.push(0, 32, 0);
    REQUIRE(rig.replay.gemm(false, 2, 1, 3));
    return rig.at(1).pop_prev_dep;
  };
  CHECK(popped(0b11));
  CHECK_FALSE(popped(0b10));
}

TEST_CASE("runtime replay: a token where regions overlap, none where they cannot meet") {
  // a load of INP into region 0, then a GEMM reading region `other` (a reset-free GEMM with
  // its accumulator and weights in regions of their own): the GEMM pops a token from the
  // load module, and the load pushes it, exactly when the regions can meet
  const auto tokens = [](rt::SramRegion other) {
    Rig rig({{MemId::Inp, 0, 64, 1}, other, {MemId::Acc, 0, 16}, {MemId::Wgt, 0, 4}});
    Replay& r = rig.replay;
    REQUIRE(r.load(MemId::Inp, 0, 0, 0, 0, 1, 4, rt::kDenseStride, 0, 0, 0, 0));
    r.kernel_begin();
    r.push(0, other.begin, 0);
    REQUIRE(r.gemm(false, 2, 1, 3));
    REQUIRE(rig.size() == 3);  // LOAD INP, LOAD UOP, GEMM
    const bool pushed = rig.at(0).push_next_dep, popped = rig.at(1).pop_prev_dep;
    CHECK(rig.at(2).pop_prev_dep == false);  // the pop goes on compute's next: the LOAD UOP
    CHECK(pushed == popped);
    return pushed;
  };
  CHECK(tokens({MemId::Inp, 0, 64, 0}));
  CHECK(tokens({MemId::Inp, 32, 33, 3}));       // condition 2's arm: may run with arm 1
  CHECK_FALSE(tokens({MemId::Inp, 0, 64, 2}));  // the other arm of condition 1
  CHECK_FALSE(tokens({MemId::Inp, 64, 128, 0}));
}

TEST_CASE("runtime replay: a hazard on an instruction already covered by a push takes no token") {
  // load I0 (#0), load I1 (#1), GEMM reading I0: push on #0, pop; GEMM reading I1: push on
  // #1, pop; GEMM reading I0 again: #0 is before #1, whose push the compute module has
  // consumed already, so no token
  Rig rig({{MemId::Inp, 0, 16}, {MemId::Inp, 16, 32}, {MemId::Acc, 0, 16}, {MemId::Wgt, 0, 4}});
  Replay& r = rig.replay;
  REQUIRE(r.load(MemId::Inp, 0, 0, 0, 0, 1, 16, rt::kDenseStride, 0, 0, 0, 0));
  REQUIRE(r.load(MemId::Inp, 1, 16, 0, 16, 1, 16, rt::kDenseStride, 0, 0, 0, 0));
  const auto gemm = [&](std::uint32_t inp, i64 src) {
    r.kernel_begin();
    r.push(0, src, 0);
    return r.gemm(false, 2, inp, 3);
  };
  REQUIRE(gemm(0, 0));   // #2 LOAD UOP (pop), #3 GEMM
  REQUIRE(gemm(1, 16));  // its micro-op loaded by #2 too (the next in DRAM and SRAM), #4 GEMM (pop)
  REQUIRE(gemm(0, 0));   // resident: #5 GEMM, no pop
  REQUIRE(rig.size() == 6);
  CHECK(rig.at(0).push_next_dep);
  CHECK(rig.at(1).push_next_dep);
  CHECK(rig.at(2).pop_prev_dep);
  CHECK(rig.at(2).x_size == 2);
  CHECK(rig.at(4).pop_prev_dep);
  CHECK(rig.at(4).uop_bgn == 1);
  CHECK_FALSE(rig.at(5).pop_prev_dep);
  CHECK(rig.at(5).uop_bgn == rig.at(3).uop_bgn);
  CHECK_NOTHROW(vta::check_hazards(vta::Config{}, rig.stream()));
}

TEST_CASE("runtime replay: a compute access checked once until a store or load, then again") {
  // ALUs on accumulator region 0 (rows 0-15) and a store from region 1 (rows 8-23, which
  // overlaps it): the tracker marks the ALU's region settled after its first check, and the
  // store must unsettle it, so that the ALU after the store waits for it (WAR) and the one
  // after that, with nothing tracked between, takes no token
  Rig rig({{MemId::Acc, 0, 16}, {MemId::Acc, 8, 24}});
  Replay& r = rig.replay;
  const auto add_one = [&]() {
    r.kernel_begin();
    r.loop_begin(16, 1, 1, 0);
    r.push(0, 0, 0);
    return r.alu(rt::AluOp::Add, true, 1, 0, 0);
  };
  REQUIRE(add_one());                                     // #0 LOAD UOP, #1 ALU
  REQUIRE(add_one());                                     // #2 ALU: settled, no token
  REQUIRE(r.store(1, 8, 0, 0, 1, 16, rt::kDenseStride));  // #3 STORE: waits for #2 (RAW)
  REQUIRE(add_one());                                     // #4 ALU: waits for #3 (WAR)
  REQUIRE(add_one());                                     // #5 ALU: no token
  REQUIRE(rig.size() == 6);
  CHECK(rig.at(2).push_next_dep);
  CHECK(rig.at(3).pop_prev_dep);
  CHECK(rig.at(3).push_prev_dep);
  CHECK(rig.at(4).pop_next_dep);
  CHECK_FALSE(rig.at(5).pop_next_dep);
  for (std::size_t i : {1, 2}) CHECK_FALSE((rig.at(i).pop_next_dep || rig.at(i).pop_prev_dep));
  CHECK_NOTHROW(vta::check_hazards(vta::Config{}, rig.stream()));
}

TEST_CASE("runtime replay: again writes a kernel with its accesses, reloading its micro-ops") {
  Rig rig({{MemId::Inp, 0, 16}, {MemId::Acc, 0, 16}, {MemId::Wgt, 0, 4}, {MemId::Acc, 16, 32}}, 64,
          16);  // a 16-entry micro-op SRAM
  Replay& r = rig.replay;
  REQUIRE(r.load(MemId::Inp, 0, 0, 0, 0, 1, 4, rt::kDenseStride, 0, 0, 0, 0));  // #0
  r.kernel_begin();
  r.loop_begin(4, 1, 1, 0);
  r.push(0, 0, 0);
  REQUIRE(r.gemm(false, 1, 0, 2));  // #1 LOAD UOP (pops the load's token), #2 GEMM
  const rt::WrittenKernel k = rig.w.last_kernel();
  const rt::RegionAccess accesses[] = {{1, true}, {0, false}, {2, false}};
  // WAR: a new load into the input region must wait for the GEMM, which pushes to it
  REQUIRE(r.load(MemId::Inp, 0, 0, 0, 4, 1, 4, rt::kDenseStride, 0, 0, 0, 0));  // #3
  CHECK(rig.at(2).push_prev_dep);
  CHECK(rig.at(3).pop_next_dep);
  // again: resident, so the GEMM alone, with the same fields, popping the new load's token
  REQUIRE(r.again(k, accesses, 3));
  REQUIRE(rig.size() == 5);
  CHECK(rig.at(4).pop_prev_dep);
  CHECK(rig.at(3).push_next_dep);
  CHECK(rig.at(4).uop_bgn == rig.at(2).uop_bgn);
  CHECK(rig.at(4).iter_out == 4);
  CHECK(rig.at(4).dst_factor_out == 1);
  // an ALU of 16 micro-ops fills the SRAM: the GEMM's micro-op is reloaded by the next again
  r.kernel_begin();
  for (int i = 0; i < 16; ++i) r.push(16 + i, i, 0);
  REQUIRE(r.alu(rt::AluOp::Add, true, 1, 3, 1));  // #5 LOAD UOP, #6 ALU
  REQUIRE(r.again(k, accesses, 3));               // #7 LOAD UOP, #8 GEMM
  REQUIRE(rig.size() == 9);
  CHECK(rig.at(7).opcode == Opcode::Load);
  CHECK(rig.at(7).memory_type == MemId::Uop);
  CHECK(rig.at(7).dram_base == k.dram);
  CHECK(rig.at(7).sram_base == 0);
  CHECK(rig.at(8).uop_bgn == 0);
  CHECK(rig.st->reloc_count() == 3);
  REQUIRE(rig.w.finish());
  CHECK_NOTHROW(vta::check_hazards(vta::Config{}, rig.stream()));
}

TEST_CASE("runtime replay: addresses from the parameters, offsets, padding-only loads") {
  Rig rig({{MemId::Inp, 0, 64}, {MemId::Acc, 0, 64}, {MemId::Wgt, 0, 8}});
  Replay& r = rig.replay;
  REQUIRE(r.load(MemId::Inp, 0, 3, 1, 5, 2, 4, 9, 1, 0, 1, 2));
  REQUIRE(r.load(MemId::Wgt, 2, 1, 2, 7, 1, 2, rt::kDenseStride, 0, 0, 0, 0));
  REQUIRE(r.load(MemId::Acc8, 1, 8, 3, 1, 1, 4, rt::kDenseStride, 0, 0, 0, 0));
  REQUIRE(r.load(MemId::Inp, 0, 40, 2, 50, 0, 4, rt::kDenseStride, 2, 0, 0, 0));  // padding
  REQUIRE(r.store(1, 8, 3, 11, 1, 4, 8));
  // byte address / element bytes + offset: 0x20000 / 16 + 5, 0x40000 / 256 + 7,
  // 0x80000 / 16 + 1; a padding-only load reads nothing: the tensor's start, no offset
  const auto f = [&](std::size_t i) { return rig.at(i); };
  CHECK(f(0).dram_base == 0x2000 + 5);
  CHECK(f(0).sram_base == 3);
  CHECK(f(0).y_size == 2);
  CHECK(f(0).x_stride == 9);
  CHECK(f(0).y_pad_0 == 1);
  CHECK(f(0).x_pad_0 == 1);
  CHECK(f(0).x_pad_1 == 2);
  CHECK(f(1).dram_base == 0x400 + 7);
  CHECK(f(1).x_stride == 2);
  CHECK(f(2).memory_type == MemId::Acc8);
  CHECK(f(2).dram_base == 0x8000 + 1);
  CHECK(f(3).dram_base == 0x40000 / 16);
  CHECK(f(3).y_size == 0);
  CHECK(f(3).y_pad_0 == 2);
  std::size_t store = 4;
  while (f(store).opcode != Opcode::Store) ++store;  // after the tokens it needs
  CHECK(f(store).memory_type == MemId::Out);
  CHECK(f(store).dram_base == 0x80000 / 16 + 11);
  CHECK(f(store).x_stride == 8);
}

// ---- errors -------------------------------------------------------------------------------

void check_error(const rt::WriterError& e, Status s, Opcode op, Field field, i64 value) {
  CHECK(e.status == s);
  CHECK(e.opcode == op);
  CHECK(e.field == field);
  CHECK(e.value == value);
}

TEST_CASE("runtime replay: each error is the writer's, and nothing more is written") {
  const std::vector<rt::SramRegion> regions = {
      {MemId::Inp, 0, 64}, {MemId::Acc, 0, 64}, {MemId::Wgt, 0, 8}};
  SUBCASE("empty transfers") {
    Rig rig(regions);
    CHECK_FALSE(rig.replay.load(MemId::Inp, 0, 0, 0, 0, -1, 4, 4, 0, 0, 0, 0));
    check_error(rig.w.error(), Status::EmptyTransfer, Opcode::Load, Field::y_size, -1);
    rig.w.clear_error();
    CHECK_FALSE(rig.replay.load(MemId::Wgt, 2, 0, 0, 0, 1, 0, 4, 0, 0, 0, 0));
    check_error(rig.w.error(), Status::EmptyTransfer, Opcode::Load, Field::x_size, 0);
    rig.w.clear_error();
    CHECK_FALSE(rig.replay.store(1, 0, 0, 0, 1, 0, 4));
    check_error(rig.w.error(), Status::EmptyTransfer, Opcode::Store, Field::x_size, 0);
    CHECK(rig.size() == 0);
  }
  SUBCASE("misaligned parameters") {
    Rig rig(regions, 64, 8192, kElem, {0x10008, 0x10100, 0x10040, 0x10010});
    CHECK_FALSE(rig.replay.load(MemId::Inp, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0));  // 0x10008 % 16
    check_error(rig.w.error(), Status::Misaligned, Opcode::Load, Field::dram_base, 0x10008);
    rig.w.clear_error();
    CHECK_FALSE(rig.replay.load(MemId::Wgt, 2, 0, 2, 0, 1, 1, 1, 0, 0, 0, 0));  // % 256
    check_error(rig.w.error(), Status::Misaligned, Opcode::Load, Field::dram_base, 0x10040);
    rig.w.clear_error();
    CHECK_FALSE(rig.replay.load(MemId::Acc, 1, 0, 3, 0, 1, 1, 1, 0, 0, 0, 0));  // % 64
    check_error(rig.w.error(), Status::Misaligned, Opcode::Load, Field::dram_base, 0x10010);
    rig.w.clear_error();
    CHECK(rig.replay.store(1, 0, 3, 0, 1, 1, 1));  // OUT elements are 16 bytes
    CHECK(rig.replay.load(MemId::Acc, 1, 0, 2, 0, 1, 1, 1, 0, 0, 0, 0));
    CHECK(rig.size() >= 2);
  }
  SUBCASE("an element size that is not a power of two") {
    rt::ElemBytes elem = kElem;
    elem.of[static_cast<int>(MemId::Inp)] = 48;
    Rig rig(regions, 64, 8192, elem, {96, 100, 0, 0});
    REQUIRE(rig.replay.load(MemId::Inp, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0));
    CHECK(rig.at(0).dram_base == 3);  // 96 / 48 + 1
    CHECK_FALSE(rig.replay.load(MemId::Inp, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0));
    check_error(rig.w.error(), Status::Misaligned, Opcode::Load, Field::dram_base, 100);
  }
  SUBCASE("kernels: three loops, too many micro-ops, none, no iteration") {
    Rig rig(regions, 2, 3);  // room for 2 micro-ops, a 3-entry micro-op SRAM
    Replay& r = rig.replay;
    r.kernel_begin();  // no micro-op: nothing written
    CHECK(r.gemm(false, 1, 0, 2));
    r.kernel_begin();  // a loop of no iteration: nothing written, whatever it holds
    r.loop_begin(0, 1, 1, 1);
    r.loop_begin(5, 1, 1, 1);
    r.loop_begin(5, 1, 1, 1);
    for (int i = 0; i < 9; ++i) r.push(i, i, 0);
    CHECK(r.alu(rt::AluOp::Max, false, 0, 1, 1));
    CHECK(rig.size() == 0);
    CHECK(r.ok());
    r.kernel_begin();
    r.push(0, 0, 0);
    r.push(1, 1, 0);
    r.push(2, 2, 0);  // past the op buffer, within the SRAM
    CHECK_FALSE(r.gemm(false, 1, 0, 2));
    check_error(rig.w.error(), Status::UopsFull, Opcode::Gemm, Field::count, 3);
    rig.w.clear_error();
    r.push(3, 3, 0);  // 4 > the SRAM's 3
    CHECK_FALSE(r.alu(rt::AluOp::Add, false, 0, 1, 1));
    check_error(rig.w.error(), Status::KernelTooLarge, Opcode::Alu, Field::count, 4);
    rig.w.clear_error();
    // a kernel's image: past the SRAM, the same error; past the op buffer, none (an image
    // collects no micro-op); past the storage's micro-ops, UopsFull
    const std::vector<std::uint32_t> words(5000, 0);
    CHECK_FALSE(r.alu_image(rt::KernelImage{{}, Opcode::Alu, 4, words.data()}, 1, 1));
    check_error(rig.w.error(), Status::KernelTooLarge, Opcode::Alu, Field::count, 4);
    rig.w.clear_error();
    CHECK(r.gemm_image(rt::KernelImage{{}, Opcode::Gemm, 3, words.data()}, false, 1, 0, 2));
    CHECK(rig.size() == 2);  // a LOAD UOP and the GEMM
    Rig roomy(regions, 2, 8192);
    CHECK_FALSE(roomy.replay.gemm_image(rt::KernelImage{{}, Opcode::Gemm, 5000, words.data()}, true,
                                        1, 0, 0));
    check_error(roomy.w.error(), Status::UopsFull, Opcode::Gemm, Field::count, 0);
    CHECK(roomy.size() == 0);
    r.kernel_begin();
    r.loop_begin(2, 1, 1, 0);
    r.loop_begin(2, 1, 1, 0);
    r.loop_begin(2, 1, 1, 0);
    CHECK_FALSE(r.ok());
    check_error(rig.w.error(), Status::LoopShape, Opcode::Finish, Field::count, 3);
    r.push(0, 0, 0);
    CHECK_FALSE(r.gemm(false, 1, 0, 2));  // the writer has failed: nothing more
    CHECK_FALSE(r.alu_image(rt::KernelImage{{}, Opcode::Alu, 1, words.data()}, 1, 1));
    CHECK(rig.size() == 2);
  }
  SUBCASE("a hazard between load and store, which share no token queue") {
    Rig rig(regions);
    REQUIRE(rig.replay.load(MemId::Inp, 0, 0, 0, 0, 1, 2, 2, 0, 0, 0, 0));  // #0
    // a store declared as reading the input region: a hazard no token can order
    CHECK_FALSE(rig.replay.store(0, 0, 3, 0, 1, 2, 2));
    CHECK(rig.w.error().status == Status::NotNeighbours);
    CHECK(rig.w.error().from == Queue::Load);
    CHECK(rig.w.error().to == Queue::Store);
    CHECK(rig.replay.deps().unordered() == 0);
    CHECK(rig.size() == 1);
  }
}

// A loop copied whole whose DRAM address moves past its field (32 bits of elements) in a
// later iteration: a copy once the passing accesses are marked checks only the transfers listed
// (LoopTape::transfers); it must fail where the calls fail, with their error and words.
TEST_CASE(
    "runtime replay: a whole copy whose DRAM address moves past its field fails as its calls") {
  const std::vector<rt::SramRegion> regions = {{MemId::Inp, 0, 64}, {MemId::Acc, 0, 64}};
  const auto run = [&](Rig& rig, bool copies, i64& failed) {
    rig.replay.copy_loops(copies);
    rt::KernelMemo<0> add{};  // (a loop's kernels are memoized, as the generated replays')
    const auto add_one = [&](Replay& r) {
      if (add.hit()) return r.alu_again(add, 1, 1);
      add.enter(r);
      r.kernel_begin();
      r.push(0, 0, 0);
      if (!r.alu(rt::AluOp::Add, true, 1, 1, 1)) return false;
      add.leave(rig.w);
      return true;
    };
    rt::LoopMemo<1, 4, 2> lm{};
    lm.reset();
    const i64 n = 12;
    for (i64 i = 0; i < n; ++i) {
      // (the input's element address: 0x10000 / 16 + i * 2^29, past 2^32 - 1 at i = 8)
      if (rig.replay.iteration_begin(lm, lm.same(), i + 1 < n, true) &&
          !(rig.replay.load(MemId::Inp, 0, 0, 0, i << 29, 1, 2, 2, 0, 0, 0, 0) &&
            add_one(rig.replay))) {
        failed = i;
        return;
      }
      if (!rig.replay.iteration_end(lm)) {
        failed = i;
        return;
      }
    }
  };
  Rig memo(regions), calls(regions);
  i64 failed_memo = -1, failed_calls = -1;
  run(memo, true, failed_memo);
  run(calls, false, failed_calls);
  CHECK(failed_calls == 8);
  CHECK(failed_memo == failed_calls);
  // (iteration 1 recorded, its steps measured against iteration 0's words, its micro-op load
  // passed over: Replay::steps_from_earlier; 2 to 7 whole, the calls listed from 2 on, where
  // another iteration follows, and 8 refused whole, its calls failing)
  CHECK(memo.replay.copied_whole() == 6);
  check_error(memo.w.error(), Status::FieldRange, Opcode::Load, Field::dram_base,
              (0x10000 / 16) + (i64{8} << 29));
  check_error(calls.w.error(), Status::FieldRange, Opcode::Load, Field::dram_base,
              (0x10000 / 16) + (i64{8} << 29));
  REQUIRE(memo.size() == calls.size());
  CHECK(memo.stream().insns == calls.stream().insns);
}

TEST_CASE("runtime replay: floor_div, floor_mod, min, max") {
  for (i64 a = -20; a <= 20; ++a)
    for (i64 b : {-7, -3, -1, 1, 2, 5}) {
      CAPTURE(a);
      CAPTURE(b);
      const i64 q = static_cast<i64>(std::floor(static_cast<double>(a) / static_cast<double>(b)));
      CHECK(rt::floor_div(a, b) == q);
      CHECK(rt::floor_mod(a, b) == a - q * b);
    }
  CHECK(rt::floor_div(-7, 2) == -4);
  CHECK(rt::floor_mod(-7, 2) == 1);
  CHECK(rt::floor_mod(7, -2) == -1);
  CHECK(rt::min(-3, 2) == -3);
  CHECK(rt::max(-3, 2) == 2);
  static_assert(rt::floor_div(-1, 3) == -1 && rt::floor_mod(-1, 3) == 2);
}

}  // namespace runtime_replay_test
