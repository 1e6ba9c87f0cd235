// Dependency tokens (DepTracker) and the race detector (check_hazards): hand-built streams
// with and without the tokens their hazards need, and random programs whose tokens come from
// the tracker, run on the simulator and compared with a sequential evaluation of the same
// program.
#include <dlavm/vta.hpp>

#include <doctest/doctest.h>

#include "what_of.hpp"
#include <array>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace vta = dlavm::vta;
using vta::MemId;
using vta::Queue;

namespace {

using dlavm_test::what_of;

vta::UopKernel gemm_kernel(std::int64_t n, std::int64_t dst, std::int64_t src, std::int64_t wgt) {
  vta::UopKernel k;
  k.loop_begin(n, 1, 1, 0);
  k.push(dst, src, wgt);
  k.loop_end();
  return k;
}

// LOAD WGT (from weight element `wgt_dram`), a token toward compute, LOAD INP of 4 elements
// into entries 4..7 (from input element `inp_dram`), the pop, then a GEMM adding inp[src..src+3]
// x wgt[0]: the token orders the weight load before the GEMM, not the input load.
vta::Stream weight_token_input_gemm(const vta::Config& config, std::int64_t wgt_dram,
                                    std::int64_t inp_dram, std::int64_t src) {
  vta::Builder b{config};
  b.load({.memory = MemId::Wgt, .dram = wgt_dram, .x_size = 1});
  b.dep_push(Queue::Load, Queue::Compute);
  b.load({.memory = MemId::Inp, .sram = 4, .dram = inp_dram, .x_size = 4});
  b.dep_pop(Queue::Load, Queue::Compute);
  b.gemm(gemm_kernel(4, 0, src, 0));
  b.finish();
  return b.take();
}

}  // namespace

TEST_CASE("hazards: a GEMM reading a load's entries needs a token") {
  const vta::Config config;
  auto stream_with = [&](bool token) {
    vta::Builder b{config};
    b.load({.memory = MemId::Inp, .sram = 4, .x_size = 4});
    b.load({.memory = MemId::Wgt, .x_size = 1});
    if (token) {
      b.dep_push(Queue::Load, Queue::Compute);
      b.dep_pop(Queue::Load, Queue::Compute);
    }
    b.gemm(gemm_kernel(4, 0, 4, 0));
    b.finish();
    return b.take();
  };
  CHECK_NOTHROW(vta::check_hazards(config, stream_with(true)));
  const auto msg = what_of([&] { vta::check_hazards(config, stream_with(false)); });
  // The GEMM (after its micro-op load, #2) reads input entry 4, which LOAD #0 wrote.
  CHECK(msg.find("#3 (compute module) reads input entry 4 after") != std::string::npos);
  CHECK(msg.find("#0 (load module) wrote it") != std::string::npos);
  CHECK(msg.find("RAW race") != std::string::npos);
  // The simulator refuses the racy stream before running it.
  vta::SimDevice dev(config);
  CHECK_THROWS_AS(dev.run(stream_with(false)), dlavm::DeviceError);
}

TEST_CASE("hazards: a load over entries a GEMM still reads (WAR) and disjoint entries") {
  const vta::Config config;
  auto stream_with = [&](std::int64_t second_load_at, bool token) {
    vta::Builder b{config};
    b.load({.memory = MemId::Inp, .x_size = 4});
    b.load({.memory = MemId::Wgt, .x_size = 1});
    b.dep_push(Queue::Load, Queue::Compute);
    b.dep_pop(Queue::Load, Queue::Compute);
    b.gemm(gemm_kernel(4, 0, 0, 0));
    if (token) {
      b.dep_push(Queue::Compute, Queue::Load);
      b.dep_pop(Queue::Compute, Queue::Load);
    }
    b.load({.memory = MemId::Inp, .sram = second_load_at, .x_size = 4});
    b.finish();
    return b.take();
  };
  const auto msg = what_of([&] { vta::check_hazards(config, stream_with(2, false)); });
  CHECK(msg.find("writes input entry 2") != std::string::npos);
  CHECK(msg.find("WAR race") != std::string::npos);
  CHECK_NOTHROW(vta::check_hazards(config, stream_with(2, true)));
  // Entries 4..7 were never read: the second load may overlap the GEMM.
  CHECK_NOTHROW(vta::check_hazards(config, stream_with(4, false)));
}

// SimDevice proves a stream once and remembers it by content: a stream that differs from a
// proven one only in its micro-ops is checked again.
TEST_CASE("hazards: a device remembers the streams it proved, by content") {
  const vta::Config config;
  vta::SimDevice dev(config);
  const auto data = dev.alloc(1 << 16);
  auto stream_reading = [&](std::int64_t src) {
    return weight_token_input_gemm(config, static_cast<std::int64_t>(data.phys / 256),
                                   static_cast<std::int64_t>(data.phys / 16), src);
  };
  const auto clean = stream_reading(8), racy = stream_reading(4);  // 8..11: never loaded
  REQUIRE(clean.insns == racy.insns);
  REQUIRE(clean.uops != racy.uops);
  CHECK_NOTHROW(dev.run(clean));
  CHECK(dev.proven_streams() == 1);
  CHECK_NOTHROW(dev.run(clean));
  CHECK(dev.proven_streams() == 1);  // found, not proven again
  CHECK(dev.hazard_checks() == 1);
  for (int i = 0; i < 2; ++i) {  // a refused stream is not remembered
    const auto msg = what_of([&] { dev.run(racy); });
    CHECK(msg.find("reads input entry 4") != std::string::npos);
  }
  CHECK(dev.proven_streams() == 1);
  CHECK(dev.hazard_checks() == 3);
  dev.set_check_hazards(false);
  CHECK_NOTHROW(dev.run(racy));
}

// A placed stream's micro-op load that starts a word before the stream's micro-ops: the words
// from the first micro-op on are known (the GEMM reads input entry 4 through them), the one
// before is not.
TEST_CASE("hazards: a micro-op load from below the stream's micro-ops reads those it reaches") {
  const vta::Config config;
  const auto s = weight_token_input_gemm(config, 0, 0, 4);
  auto prog = vta::decode_all(config.layout(), s.insns);
  constexpr std::uint64_t kBase = 1000;  // the micro-ops' first DRAM word, as placed
  int loads = 0;
  for (auto& f : prog) {
    if (f.opcode == vta::Opcode::Load && f.memory_type == MemId::Uop && f.x_size > 0) {
      f.dram_base += kBase - 1;  // one word early, one more word
      ++f.x_size;
      ++loads;
    } else if (f.opcode == vta::Opcode::Gemm) {
      ++f.uop_bgn;
      ++f.uop_end;
    }
  }
  REQUIRE(loads == 1);
  const auto msg = what_of([&] { vta::check_hazards(config, prog, s.uops, kBase); });
  CHECK(msg.find("reads input entry 4") != std::string::npos);
}

// A kernel whose micro-op range passes the entries any LOAD UOP reached reads zeros there (what
// the SRAM holds at reset): its range then starts at entry 0. The GEMM below reads input
// entries 8..11 through its loaded micro-op; one more micro-op, never loaded, adds 0..3 and the
// entries between, which the input load (4..7, no token) writes.
TEST_CASE("hazards: micro-ops no load reached are zeros") {
  const vta::Config config;
  const auto s = weight_token_input_gemm(config, 0, 0, 8);
  auto prog = vta::decode_all(config.layout(), s.insns);
  CHECK_NOTHROW(vta::check_hazards(config, prog, s.uops, 0));
  int gemms = 0;
  for (auto& f : prog)
    if (f.opcode == vta::Opcode::Gemm) {
      ++f.uop_end;
      ++gemms;
    }
  REQUIRE(gemms == 1);
  const auto msg = what_of([&] { vta::check_hazards(config, prog, s.uops, 0); });
  CHECK(msg.find("reads input entry 4 after LOAD #") != std::string::npos);
  CHECK(msg.find("RAW race") != std::string::npos);
}

// A proven stream keeps its decode for the micro-op base it was placed at: placed at another
// base, it is decoded for that one (its micro-op loads read the new buffer). The first buffer
// is zeroed before the second run, so a decode kept by content alone would read zeros.
TEST_CASE("hazards: a proven stream placed elsewhere is decoded for its new place") {
  const vta::Config config;
  vta::SimDevice dev(config);
  const auto data = dev.alloc(1 << 16);
  std::vector<std::uint8_t> bytes(1 << 16);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 37 + 11);
  dev.copy_in(data, std::span<const std::uint8_t>(bytes));
  vta::Builder b{config};
  b.load({.memory = MemId::Wgt, .dram = static_cast<std::int64_t>(data.phys / 256), .x_size = 1});
  b.load({.memory = MemId::Inp, .dram = static_cast<std::int64_t>(data.phys / 16), .x_size = 12});
  b.dep_push(Queue::Load, Queue::Compute);
  b.dep_pop(Queue::Load, Queue::Compute);
  b.gemm(gemm_kernel(4, 0, 8, 0));  // acc[0..3] += inp[8..11] x wgt[0]
  b.finish();
  const auto stream = b.take();
  const auto insns = dev.alloc(stream.insn_bytes());
  const vta::Buffer uops[] = {dev.alloc(stream.uop_bytes()), dev.alloc(stream.uop_bytes())};
  const auto acc_after = [&](const vta::Buffer& at) {
    auto acc = dev.simulator().acc_sram();
    std::fill(acc.begin(), acc.end(), 0);
    dev.run_at(stream, {insns, 0, at, 0});
    return std::vector<std::int32_t>(acc.begin(), acc.begin() + 4 * config.block_out());
  };
  const auto first = acc_after(uops[0]);
  REQUIRE(std::any_of(first.begin(), first.end(), [](std::int32_t v) { return v != 0; }));
  const std::vector<std::uint8_t> zeros(stream.uop_bytes());
  dev.copy_in(uops[0], std::span<const std::uint8_t>(zeros));
  CHECK(acc_after(uops[1]) == first);
  CHECK(dev.proven_streams() == 2);
}

TEST_CASE("hazards: the proven streams' set keeps its byte budget, oldest out first") {
  const vta::Config config;
  auto stream_of = [&](std::int64_t n) {  // n + 1 instructions, no micro-ops
    vta::Builder b{config};
    for (std::int64_t i = 0; i < n; ++i) b.load({.memory = MemId::Inp, .sram = i, .x_size = 1});
    b.finish();
    return b.take();
  };
  using vta::detail::DecodedStreams;
  const auto a = stream_of(1), b = stream_of(2), c = stream_of(3), big = stream_of(20);
  const DecodedStreams sizes;  // (each of these streams keeps its decode)
  const auto bytes = [&](const vta::Stream& s) { return sizes.entry_bytes(s); };
  REQUIRE(bytes(a) < bytes(b));
  REQUIRE(bytes(b) < bytes(c));
  REQUIRE(bytes(big) > bytes(b) + bytes(c));
  // a and b fit, and b and c, not all three
  DecodedStreams set(bytes(b) + bytes(c));
  set.insert(a, 0, {});
  set.insert(b, 0, {});
  CHECK(set.find(a, 0).proven);
  CHECK(set.find(b, 0).proven);
  CHECK_FALSE(set.find(b, 1).proven);  // another micro-op base
  set.insert(c, 0, {});                // the oldest, a, leaves
  CHECK_FALSE(set.find(a, 0).proven);
  CHECK(set.find(b, 0).proven);
  CHECK(set.find(c, 0).proven);
  CHECK(set.size() == 2);
  set.insert(big, 0, {});  // over the budget: not kept; b and c stay
  CHECK(set.find(b, 0).proven);
  CHECK(set.size() == 2);
  set.insert(a, 1, vta::decode_all(config.layout(), a.insns));  // b leaves
  REQUIRE(set.find(a, 1).decoded != nullptr);
  CHECK(set.find(a, 1).decoded->size() == a.insns.size());
}

// What a stream's race check kept (detail::HazardProof) counts against the budget beside its
// decode, and find_like gives it with the stream.
TEST_CASE("hazards: the proven streams' set counts the proofs it keeps") {
  const vta::Config config;
  vta::Builder b{config};
  for (std::int64_t i = 0; i < 3; ++i) b.load({.memory = MemId::Inp, .sram = i, .x_size = 1});
  b.finish();
  const auto s = b.take();
  const auto prog = vta::decode_all(config.layout(), s.insns);
  vta::detail::HazardProof proof;
  vta::detail::check_hazards_proving(config, {prog, s.uops, 0}, nullptr, nullptr, &proof);
  REQUIRE(proof.first.size() == prog.size() + 1);
  using vta::detail::DecodedStreams;
  const auto bytes = DecodedStreams{}.entry_bytes(s) + proof.bytes();
  DecodedStreams tight(bytes - 1);
  tight.insert(s, 0, prog, proof);  // over the budget with its proof: not kept
  CHECK_FALSE(tight.find(s, 0).proven);
  DecodedStreams set(bytes);
  set.insert(s, 0, prog, proof);
  CHECK(set.find(s, 0).proven);
  const auto like = set.find_like(prog);
  REQUIRE(like.has_value());
  REQUIRE(like->proof != nullptr);
  CHECK(like->proof->first == proof.first);
  CHECK(like->proof->clocks == proof.clocks);
}

// A stream whose decode takes more than the per-stream limit is kept as proven, by its words
// alone (counted without the decode): found again, it is decoded but not checked.
TEST_CASE("hazards: a stream too large to keep decoded is kept proven, and not checked again") {
  const vta::Config config;
  vta::SimDevice dev(config);
  const auto data = dev.alloc(1 << 10);
  auto stream_of = [&](std::int64_t n) {  // n + 1 instructions, no micro-ops
    vta::Builder b{config};
    for (std::int64_t i = 0; i < n; ++i)
      b.load({.memory = MemId::Inp,
              .sram = i % 64,
              .dram = static_cast<std::int64_t>(data.phys / 16) + i % 64,
              .x_size = 1});
    b.finish();
    return b.take();
  };
  using vta::detail::DecodedStreams;
  const auto small = stream_of(3), large = stream_of(40);
  DecodedStreams set(1 << 20, DecodedStreams::decoded_bytes(small));
  CHECK(set.entry_bytes(large) + DecodedStreams::decoded_bytes(large) ==
        DecodedStreams{}.entry_bytes(large));  // counted without its decode
  set.insert(small, 0, vta::decode_all(config.layout(), small.insns));
  set.insert(large, 0, vta::decode_all(config.layout(), large.insns));
  REQUIRE(set.find(small, 0).decoded != nullptr);
  CHECK(set.find(small, 0).decoded->size() == small.insns.size());
  CHECK(set.find(large, 0).proven);
  CHECK(set.find(large, 0).decoded == nullptr);

  // a device's default limit, 8 MiB of decoded instructions: a stream of 100,000 runs twice,
  // checked once, and gives the same results
  const auto huge = stream_of(100000);
  REQUIRE(DecodedStreams::decoded_bytes(huge) > DecodedStreams::kDefaultDecodedBytes);
  const auto first = dev.run(huge);
  const auto second = dev.run(huge);
  CHECK(dev.hazard_checks() == 1);
  CHECK(dev.proven_streams() == 1);
  CHECK(first.counters.inp_load_bytes > 0);
  CHECK(second.counters == first.counters);
  CHECK(second.timing.total_cycles == first.timing.total_cycles);
}

TEST_CASE("hazards: the proven streams' set keeps at most kMaxEntries") {
  using vta::detail::DecodedStreams;
  const vta::Config config;
  DecodedStreams set;
  std::vector<vta::Stream> streams;
  for (std::size_t i = 0; i <= DecodedStreams::kMaxEntries; ++i) {
    vta::Builder b{config};
    b.load({.memory = MemId::Inp, .sram = static_cast<std::int64_t>(i), .x_size = 1});
    b.finish();
    streams.push_back(b.take());
    set.insert(streams.back(), 0, {});
  }
  CHECK(set.size() == DecodedStreams::kMaxEntries);
  CHECK_FALSE(set.find(streams.front(), 0).proven);
  CHECK(set.find(streams[1], 0).proven);
  CHECK(set.find(streams.back(), 0).proven);
}

TEST_CASE("hazards: the tracker's tokens order only conflicting regions") {
  const vta::Config config;
  // Two input halves and one weight region: loads into half 1 need not wait for the GEMM
  // reading half 0 (double buffering), but a load into half 0 must.
  const std::vector<vta::SramRegion> regions{
      {MemId::Inp, 0, 4}, {MemId::Inp, 4, 8}, {MemId::Wgt, 0, 1}, {MemId::Acc, 0, 4}};
  vta::DepTracker deps(regions);
  vta::Builder b{config};
  auto load = [&](std::uint32_t r, MemId m, std::int64_t at, std::int64_t n) {
    const std::vector<vta::RegionAccess> a{{r, true}};
    deps.before(b, Queue::Load, a);
    b.load({.memory = m, .sram = at, .x_size = n});
    deps.after(Queue::Load, static_cast<std::int64_t>(b.size()) - 1, a);
  };
  auto gemm = [&](std::uint32_t inp, std::int64_t at) {
    const std::vector<vta::RegionAccess> a{{3, true}, {inp, false}, {2, false}};
    deps.before(b, Queue::Compute, a);
    b.gemm(gemm_kernel(4, 0, at, 0));
    deps.after(Queue::Compute, static_cast<std::int64_t>(b.size()) - 1, a);
  };
  load(2, MemId::Wgt, 0, 1);
  load(0, MemId::Inp, 0, 4);
  gemm(0, 0);
  const auto pops_before = b.stream().insns.size();
  load(1, MemId::Inp, 4, 4);  // no conflict with the GEMM: no token
  auto fields = vta::decode_all(b.layout(), b.stream().insns);
  CHECK(b.stream().insns.size() == pops_before + 1);
  CHECK_FALSE(fields.back().pop_next_dep);
  gemm(1, 4);
  load(0, MemId::Inp, 0, 4);  // overwrites what the first GEMM read: waits for it
  fields = vta::decode_all(b.layout(), b.stream().insns);
  CHECK(fields.back().opcode == vta::Opcode::Load);
  CHECK(fields.back().pop_next_dep);
  b.finish();
  CHECK_NOTHROW(vta::check_hazards(config, b.stream()));
}

TEST_CASE("hazards: a deadlocking stream is reported, not waited on") {
  const vta::Config config;
  vta::Builder b{config};
  b.dep_pop(Queue::Compute, Queue::Load);  // waits for a token nobody pushes
  b.load({.memory = MemId::Inp, .x_size = 1});
  b.finish();
  const auto stream = b.take();
  CHECK_THROWS_AS(vta::check_hazards(config, stream), dlavm::DeviceError);
  // named as the simulator names it: the stuck module, instruction and the token it waits for
  const auto msg = what_of([&] { vta::check_hazards(config, stream); });
  CHECK(msg.find("load module stuck at LOAD #0 waiting for a token from compute") !=
        std::string::npos);
  // a flag its module cannot have, before any token is counted
  vta::InsnFields load;
  load.opcode = vta::Opcode::Load;
  load.memory_type = MemId::Inp;
  load.x_size = 1;
  load.pop_prev_dep = true;
  CHECK(what_of([&] {
          vta::check_hazards(config, std::span<const vta::InsnFields>(&load, 1), {}, 0);
        }).find("LOAD #0 runs on the load module, which has no previous module") == 0);
}

// Random programs over overlapping regions: the tracker's tokens make the concurrent run equal
// to the program's sequential meaning; without tokens, the race detector objects.
TEST_CASE("dep tracker: random programs run as their sequential meaning") {
  const vta::Config config;
  constexpr int kBlock = 16;  // BLOCK_IN = BLOCK_OUT, BATCH = 1
  // Regions of 4 entries (input, accumulator) or 1 weight tile, overlapping their neighbours.
  const std::vector<vta::SramRegion> regions{
      {MemId::Inp, 0, 4}, {MemId::Inp, 2, 6}, {MemId::Inp, 6, 10}, {MemId::Wgt, 0, 1},
      {MemId::Wgt, 1, 2}, {MemId::Acc, 0, 4}, {MemId::Acc, 2, 6},  {MemId::Acc, 6, 10},
  };
  const std::vector<std::uint32_t> inp{0, 1, 2}, wgt{3, 4}, acc{5, 6, 7};
  constexpr std::int64_t kInpRows = 64, kWgtTiles = 8, kOutRows = 64;

  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](const std::vector<std::uint32_t>& v) { return v[rng() % v.size()]; };
    std::vector<std::int8_t> a(kInpRows * kBlock), w(kWgtTiles * kBlock * kBlock);
    for (auto& v : a) v = static_cast<std::int8_t>(rng());
    for (auto& v : w) v = static_cast<std::int8_t>(rng());

    vta::SimDevice dev(config);
    const auto A = dev.alloc_for(std::span<const std::int8_t>(a));
    const auto W = dev.alloc_for(std::span<const std::int8_t>(w));
    const auto C = dev.alloc(kOutRows * kBlock);
    std::vector<std::int8_t> zeros(kOutRows * kBlock, 0);
    dev.copy_in(C, std::span<const std::int8_t>(zeros));

    // Sequential meaning: SRAM contents and DRAM output, updated in program order.
    std::vector<std::array<std::int32_t, kBlock>> s_inp(16), s_acc(16);
    std::vector<std::array<std::int8_t, kBlock * kBlock>> s_wgt(4);
    std::vector<std::int8_t> expect = zeros;

    vta::DepTracker deps(regions);
    vta::Builder tracked{config}, untracked{config};
    auto both = [&](auto&& emit, Queue q, std::vector<vta::RegionAccess> acc_list) {
      deps.before(tracked, q, acc_list);
      emit(tracked);
      deps.after(q, static_cast<std::int64_t>(tracked.size()) - 1, acc_list);
      emit(untracked);
    };
    const int ops = 12 + static_cast<int>(rng() % 12);
    for (int k = 0; k < ops; ++k) {
      const auto kind = rng() % 6;
      if (kind == 0) {  // load 4 input rows
        const auto r = pick(inp);
        const auto row = static_cast<std::int64_t>(rng() % (kInpRows - 4));
        const auto at = regions[r].begin;
        both(
            [&](vta::Builder& b) {
              b.load({.memory = MemId::Inp,
                      .sram = at,
                      .dram = b.dram_elem(A.phys, MemId::Inp, row),
                      .x_size = 4});
            },
            Queue::Load, {{r, true}});
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < kBlock; ++j)
            s_inp[static_cast<std::size_t>(at + i)][static_cast<std::size_t>(j)] =
                a[static_cast<std::size_t>((row + i) * kBlock + j)];
      } else if (kind == 1) {  // load one weight tile
        const auto r = pick(wgt);
        const auto tile = static_cast<std::int64_t>(rng() % kWgtTiles);
        const auto at = regions[r].begin;
        both(
            [&](vta::Builder& b) {
              b.load({.memory = MemId::Wgt,
                      .sram = at,
                      .dram = b.dram_elem(W.phys, MemId::Wgt, tile),
                      .x_size = 1});
            },
            Queue::Load, {{r, true}});
        for (int j = 0; j < kBlock * kBlock; ++j)
          s_wgt[static_cast<std::size_t>(at)][static_cast<std::size_t>(j)] =
              w[static_cast<std::size_t>(tile * kBlock * kBlock + j)];
      } else if (kind == 2 || kind == 3) {  // GEMM (or reset) over 4 rows
        const bool reset = kind == 3;
        const auto ri = pick(inp), rw = pick(wgt), ra = pick(acc);
        const auto src = regions[ri].begin, wt = regions[rw].begin, dst = regions[ra].begin;
        std::vector<vta::RegionAccess> list{{ra, true}};
        if (!reset) list.insert(list.end(), {{ri, false}, {rw, false}});
        both([&](vta::Builder& b) { b.gemm(gemm_kernel(4, dst, reset ? 0 : src, wt), reset); },
             Queue::Compute, list);
        for (int i = 0; i < 4; ++i)
          for (int o = 0; o < kBlock; ++o) {
            auto& out = s_acc[static_cast<std::size_t>(dst + i)][static_cast<std::size_t>(o)];
            if (reset) {
              out = 0;
              continue;
            }
            std::int32_t sum = 0;
            for (int j = 0; j < kBlock; ++j)
              sum += s_inp[static_cast<std::size_t>(src + i)][static_cast<std::size_t>(j)] *
                     s_wgt[static_cast<std::size_t>(wt)][static_cast<std::size_t>(o * kBlock + j)];
            out += sum;
          }
      } else if (kind == 4) {  // ALU: add an immediate over 4 rows
        const auto ra = pick(acc);
        const auto dst = regions[ra].begin;
        const auto imm = static_cast<std::int64_t>(rng() % 200) - 100;
        both(
            [&](vta::Builder& b) {
              vta::UopKernel kn;
              kn.loop_begin(4, 1, 1);
              kn.push(dst, dst);
              kn.loop_end();
              b.alu_imm(kn, vta::AluOp::Add, imm);
            },
            Queue::Compute, {{ra, true}});
        for (int i = 0; i < 4; ++i)
          for (auto& v : s_acc[static_cast<std::size_t>(dst + i)])
            v += static_cast<std::int32_t>(imm);
      } else {  // store 4 accumulator rows (their low 8 bits)
        const auto ra = pick(acc);
        const auto from = regions[ra].begin;
        const auto row = static_cast<std::int64_t>(rng() % (kOutRows - 4));
        both(
            [&](vta::Builder& b) {
              b.store({.sram = from, .dram = b.dram_elem(C.phys, MemId::Out, row), .x_size = 4});
            },
            Queue::Store, {{ra, false}});
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < kBlock; ++j)
            expect[static_cast<std::size_t>((row + i) * kBlock + j)] = static_cast<std::int8_t>(
                s_acc[static_cast<std::size_t>(from + i)][static_cast<std::size_t>(j)]);
      }
    }
    // The tracker asked for a token exactly when two modules touched common entries.
    bool conflicts = false;
    for (const auto& f : vta::decode_all(tracked.layout(), tracked.stream().insns))
      conflicts = conflicts || f.pop_prev_dep || f.pop_next_dep;
    tracked.finish();
    untracked.finish();
    const auto run = dev.run(tracked.take());  // check_hazards runs first
    CHECK(run.finished);
    std::vector<std::int8_t> got(expect.size());
    dev.copy_out(C, std::span<std::int8_t>(got));
    CHECK(got == expect);
    // The same program without tokens races exactly when it has such conflicts.
    const auto msg = what_of([&] { vta::check_hazards(config, untracked.take()); });
    if (conflicts)
      CHECK(msg.find("race") != std::string::npos);
    else
      CHECK(msg == "no error");
    for (auto buf : {A, W, C}) dev.free(buf);
  }
}
