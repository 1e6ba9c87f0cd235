// The race check of a stream like one proven before (check_hazards_like), against the whole
// check: random race-free programs (their tokens from the DepTracker), then copies with a few
// fields moved (the SRAM entries an instruction touches, its micro-ops, now and then a token),
// each checked both ways: the same result, the same message. And SimDevice, which checks a
// stream like one it proved at the entries it adds.
#include <dlavm/vta.hpp>

#include <doctest/doctest.h>

#include "what_of.hpp"
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace vta = dlavm::vta;
using vta::MemId;
using vta::Queue;

namespace hazards_like_test {

using dlavm_test::what_of;

// A random program over overlapping regions, its tokens from the tracker: loads of input and
// weights, GEMMs and ALU passes over accumulator rows with two loop levels, stores.
vta::Stream random_program(const vta::Config& config, std::mt19937_64& rng) {
  // (the last regions at the memories' ends, where a grown access passes them)
  const auto inp_end = static_cast<std::int64_t>(config.inp_depth()),
             acc_end = static_cast<std::int64_t>(config.acc_depth());
  const std::vector<vta::SramRegion> regions{
      {MemId::Inp, 0, 8},  {MemId::Inp, 4, 12},  {MemId::Inp, inp_end - 8, inp_end},
      {MemId::Wgt, 0, 2},  {MemId::Wgt, 2, 4},   {MemId::Acc, 0, 8},
      {MemId::Acc, 4, 12}, {MemId::Acc, 12, 20}, {MemId::Acc, acc_end - 8, acc_end},
  };
  const std::vector<std::uint32_t> inp{0, 1, 2}, wgt{3, 4}, acc{5, 6, 7, 8};
  auto pick = [&](const std::vector<std::uint32_t>& v) { return v[rng() % v.size()]; };
  vta::DepTracker deps(regions);
  vta::Builder b{config};
  auto emit = [&](auto&& write, Queue q, std::vector<vta::RegionAccess> list) {
    deps.before(b, q, list);
    write();
    deps.after(q, static_cast<std::int64_t>(b.size()) - 1, list);
  };
  // a kernel of 2 x 4 micro-op iterations over 8 rows from `dst` (and `src`)
  auto kernel = [](std::int64_t dst, std::int64_t src, std::int64_t wgt) {
    vta::UopKernel k;
    k.loop_begin(2, 4, 4, 0);
    k.loop_begin(4, 1, 1, 0);
    k.push(dst, src, wgt);
    k.loop_end();
    k.loop_end();
    return k;
  };
  const int ops = 10 + static_cast<int>(rng() % 20);
  for (int k = 0; k < ops; ++k) {
    switch (rng() % 5) {
      case 0: {
        const auto r = pick(inp);
        emit([&] { b.load({.memory = MemId::Inp, .sram = regions[r].begin, .x_size = 8}); },
             Queue::Load, {{r, true}});
        break;
      }
      case 1: {
        const auto r = pick(wgt);
        emit([&] { b.load({.memory = MemId::Wgt, .sram = regions[r].begin, .x_size = 2}); },
             Queue::Load, {{r, true}});
        break;
      }
      case 2: {
        const auto ri = pick(inp), rw = pick(wgt), ra = pick(acc);
        const bool reset = rng() % 3 == 0;
        std::vector<vta::RegionAccess> list{{ra, true}};
        if (!reset) list.insert(list.end(), {{ri, false}, {rw, false}});
        emit(
            [&] {
              b.gemm(kernel(regions[ra].begin, reset ? 0 : regions[ri].begin,
                            reset ? 0 : regions[rw].begin),
                     reset);
            },
            Queue::Compute, list);
        break;
      }
      case 3: {
        const auto ra = pick(acc), rs = pick(acc);
        if (rng() % 2 == 0) {
          emit(
              [&] {
                b.alu_imm(kernel(regions[ra].begin, regions[ra].begin, 0), vta::AluOp::Add, 3);
              },
              Queue::Compute, {{ra, true}});
        } else {
          emit([&] { b.alu(kernel(regions[ra].begin, regions[rs].begin, 0), vta::AluOp::Max); },
               Queue::Compute, {{ra, true}, {rs, false}});
        }
        break;
      }
      default: {
        const auto ra = pick(acc);
        emit([&] { b.store({.sram = regions[ra].begin, .x_size = 8}); }, Queue::Store,
             {{ra, false}});
      }
    }
  }
  b.finish();
  return b.take();
}

// `prog` with a few fields moved by a little: an instruction's entries (base, sizes, pads,
// loop counts and factors, micro-op range, the micro-ops a LOAD UOP loads), whether a GEMM
// resets or an ALU takes an immediate (fewer accesses), the memory of an input or weight load
// (the same module), a micro-op, now and then a dependency flag.
void mutate(std::vector<vta::InsnFields>& prog, std::vector<std::uint32_t>& uops,
            std::mt19937_64& rng) {
  using F = vta::InsnFields;
  constexpr std::int64_t kAny = std::numeric_limits<std::int64_t>::max();
  // each field with the most it may become
  const std::pair<std::uint32_t F::*, std::int64_t> fields[] = {
      {&F::sram_base, kAny},   {&F::x_size, 12},        {&F::y_size, 3},
      {&F::iter_out, 4},       {&F::iter_in, 6},        {&F::dst_factor_out, 8},
      {&F::dst_factor_in, 3},  {&F::src_factor_out, 8}, {&F::src_factor_in, 3},
      {&F::wgt_factor_out, 2}, {&F::wgt_factor_in, 2},  {&F::uop_bgn, kAny},
      {&F::uop_end, kAny},     {&F::x_pad_0, 2},        {&F::x_pad_1, 2},
      {&F::y_pad_0, 2},        {&F::dram_base, kAny},
  };
  constexpr std::size_t kFields = std::size(fields);
  const int changes = 1 + static_cast<int>(rng() % 3);
  for (int c = 0; c < changes; ++c) {
    auto& f = prog[rng() % prog.size()];
    const auto pick = rng() % (kFields + 4);
    if (pick < kFields) {
      auto& v = f.*fields[pick].first;
      const auto delta = static_cast<std::int64_t>(rng() % 13) - 4;
      v = static_cast<std::uint32_t>(
          std::clamp<std::int64_t>(std::int64_t{v} + delta, 0, fields[pick].second));
    } else if (pick == kFields) {
      if (f.opcode == vta::Opcode::Gemm) f.reset_reg = !f.reset_reg;
      if (f.opcode == vta::Opcode::Alu) f.use_imm = !f.use_imm;
    } else if (pick == kFields + 1) {
      if (f.opcode == vta::Opcode::Load && f.memory_type == MemId::Inp)
        f.memory_type = MemId::Wgt;
      else if (f.opcode == vta::Opcode::Load && f.memory_type == MemId::Wgt)
        f.memory_type = MemId::Inp;
    } else if (pick == kFields + 2) {
      if (!uops.empty()) uops[rng() % uops.size()] ^= 1U << (rng() % 12);
    } else if (rng() % 4 == 0) {
      f.push_next_dep = !f.push_next_dep;
    }
  }
}

// A GEMM reading input entries 0 to 3 after their load (a token between), and a second input
// load after it, with no token, of four entries from `at`; the loads read DRAM from `phys` on.
vta::Stream gemm_then_input_load(const vta::Config& config, std::int64_t at,
                                 std::uint64_t phys = 0) {
  vta::Builder b{config};
  const auto inp = b.dram_elem(phys, MemId::Inp, 0);
  b.load({.memory = MemId::Inp, .dram = inp, .x_size = 4});
  b.load({.memory = MemId::Wgt, .dram = b.dram_elem(phys, MemId::Wgt, 0), .x_size = 1});
  b.dep_push(Queue::Load, Queue::Compute);
  b.dep_pop(Queue::Load, Queue::Compute);
  vta::UopKernel k;
  k.loop_begin(4, 1, 1, 0);
  k.push(0, 0, 0);
  k.loop_end();
  b.gemm(k);
  b.load({.memory = MemId::Inp, .sram = at, .dram = inp, .x_size = 4});
  b.finish();
  return b.take();
}

bool loads_uops(const vta::InsnFields& f) {
  return f.opcode == vta::Opcode::Load && f.memory_type == MemId::Uop;
}

// What two checks kept of a stream (HazardProof): the same clocks and accesses.
bool same_proof(const vta::detail::HazardProof& a, const vta::detail::HazardProof& b) {
  if (a.first != b.first || a.accesses.size() != b.accesses.size() || !a.clocks || !b.clocks)
    return false;
  for (std::size_t k = 0; k < a.accesses.size(); ++k) {
    const auto &x = a.accesses[k], &y = b.accesses[k];
    if (x.memory != y.memory || x.begin != y.begin || x.end != y.end || x.write != y.write)
      return false;
  }
  return a.clocks->done == b.clocks->done && a.clocks->seq == b.clocks->seq &&
         a.clocks->module == b.clocks->module;
}

}  // namespace hazards_like_test

// Every stream like a proven one: check_hazards_like's result and message are the whole
// check's, whether it checked the entries its accesses add alone or, where the tokens differ,
// the whole stream; and so are they given what the proven stream's check kept
// (check_hazards_proving, as SimDevice checks them), where what such a check keeps of a clean
// stream is what its whole check keeps, so that a chain of streams, each checked like the one
// before given that one's proof, checks each as the whole check does.
TEST_CASE("hazards: a stream like a proven one, checked at the entries it adds") {
  using namespace hazards_like_test;
  using vta::detail::check_hazards_proving;
  using vta::detail::HazardProof;
  const vta::Config config;
  int races_found = 0, clean = 0, read_proof = 0, chained = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed), chain_rng(seed + 1000);
    const auto stream = random_program(config, rng);
    const auto proven = vta::decode_all(config.layout(), stream.insns);
    const vta::DecodedStream was{proven, stream.uops, 0};
    HazardProof proven_proof;
    REQUIRE_FALSE(check_hazards_proving(config, was, nullptr, nullptr, &proven_proof).added_alone);
    for (int m = 0; m < 8; ++m) {
      CAPTURE(m);
      auto prog = proven;
      auto uops = stream.uops;
      mutate(prog, uops, rng);
      // now and then placed a micro-op further (its micro-op loads reach one less)
      const std::uint64_t base = rng() % 4 == 0 ? 1 : 0;
      const vta::DecodedStream now{prog, uops, base};
      const auto whole = what_of([&] { vta::check_hazards(config, prog, uops, base); });
      bool added_alone = false;
      const auto like = what_of([&] { added_alone = vta::check_hazards_like(config, now, was); });
      CHECK(like == whole);
      HazardProof proof;
      vta::detail::ProvingCheck given{};
      CHECK(what_of([&] {
              given = check_hazards_proving(config, now, &was, &proven_proof, &proof);
            }) == whole);
      // the entries added alone where the tokens are the proven stream's (a race ends the
      // check before it returns which)
      bool same_tokens = true;
      for (std::size_t i = 0; i < prog.size(); ++i)
        same_tokens = same_tokens && vta::detail::same_tokens(prog[i], proven[i]);
      if (like == "no error") CHECK(added_alone == same_tokens);
      if (same_tokens) (whole == "no error" ? clean : races_found) += 1;
      if (whole != "no error") continue;
      // the proof read where the micro-ops, their base and every LOAD UOP are the same
      bool loads_same = uops == stream.uops && base == 0;
      for (std::size_t i = 0; i < prog.size(); ++i)
        if (prog[i] != proven[i] && (loads_uops(prog[i]) || loads_uops(proven[i])))
          loads_same = false;
      if (given.added_alone) CHECK(given.read_proof == loads_same);
      read_proof += given.read_proof ? 1 : 0;
      HazardProof whole_proof;
      check_hazards_proving(config, now, nullptr, nullptr, &whole_proof);
      CHECK(same_proof(proof, whole_proof));
      // a stream like this one, given its proof
      auto next = prog;
      auto next_uops = uops;
      mutate(next, next_uops, chain_rng);
      const vta::DecodedStream after{next, next_uops, base};
      const auto next_whole = what_of([&] { vta::check_hazards(config, next, next_uops, base); });
      HazardProof next_proof;
      CHECK(what_of([&] { check_hazards_proving(config, after, &now, &proof, &next_proof); }) ==
            next_whole);
      if (next_whole == "no error") {
        HazardProof next_whole_proof;
        check_hazards_proving(config, after, nullptr, nullptr, &next_whole_proof);
        CHECK(same_proof(next_proof, next_whole_proof));
      }
      ++chained;
    }
  }
  // Both outcomes come up through the entries added alone (1,756 and 585 of these seeds'
  // 2,400); 1,395 clean copies were checked reading the proof, and 1,772 chained.
  CHECK(clean > 1500);
  CHECK(races_found > 400);
  CHECK(read_proof > 1200);
  CHECK(chained > 1500);
}

// A LOAD UOP faced by a LOAD ACC of the same module and flags, either way round: the micro-ops
// the GEMM after it reads differ, so the proof is not read, and what the check keeps is the
// whole check's.
TEST_CASE("hazards: a stream like a proven one but for a LOAD UOP reads no proof") {
  using namespace hazards_like_test;
  using vta::detail::check_hazards_proving;
  using vta::detail::HazardProof;
  const vta::Config config;
  const auto stream = gemm_then_input_load(config, 4);
  const auto with_load = vta::decode_all(config.layout(), stream.insns);
  auto with_acc = with_load;
  const auto k = std::find_if(with_acc.begin(), with_acc.end(), loads_uops);
  REQUIRE(k != with_acc.end());
  k->memory_type = MemId::Acc;
  for (const auto& [proven, prog] :
       {std::pair{with_load, with_acc}, std::pair{with_acc, with_load}}) {
    const vta::DecodedStream was{proven, stream.uops, 0}, now{prog, stream.uops, 0};
    HazardProof proven_proof, proof, whole_proof;
    check_hazards_proving(config, was, nullptr, nullptr, &proven_proof);
    const auto whole =
        what_of([&] { check_hazards_proving(config, now, nullptr, nullptr, &whole_proof); });
    vta::detail::ProvingCheck given{};
    CHECK(what_of([&] {
            given = check_hazards_proving(config, now, &was, &proven_proof, &proof);
          }) == whole);
    CHECK_FALSE(given.read_proof);
    if (whole == "no error") CHECK(same_proof(proof, whole_proof));
  }
}

// Entries past a memory's end are no entries (the whole check leaves them out):
// gemm_then_input_load's GEMM grown to read every input entry and past the end, its second
// load moved past the end.
TEST_CASE("hazards: a stream like a proven one, its accesses past a memory's end") {
  using namespace hazards_like_test;
  const vta::Config config;
  const auto stream = gemm_then_input_load(config, 4);
  const auto proven = vta::decode_all(config.layout(), stream.insns);
  REQUIRE_NOTHROW(vta::check_hazards(config, proven, stream.uops, 0));
  auto prog = proven;
  const auto depth = static_cast<std::uint32_t>(config.inp_depth());
  for (auto& f : prog) {
    if (f.opcode == vta::Opcode::Gemm) f.src_factor_out = depth;  // [0, 3 depth + 1)
    // the second input load
    if (f.opcode == vta::Opcode::Load && f.memory_type == MemId::Inp && f.sram_base == 4)
      f.sram_base = depth;
  }
  CHECK_NOTHROW(vta::check_hazards(config, prog, stream.uops, 0));
  CHECK(vta::check_hazards_like(config, {prog, stream.uops}, {proven, stream.uops}));
}

// Past kMaxAddedEntries added entries, the whole stream is checked: a stream of the compute
// module alone (no race, whatever its entries), one of its kernels reading more micro-ops.
TEST_CASE("hazards: a stream like a proven one adding many entries is checked whole") {
  const vta::Config config;
  vta::Builder b{config};
  for (std::int64_t k = 0; k < 4; ++k) {
    vta::UopKernel kn;
    kn.loop_begin(8, 1, 1);
    kn.push(8 * k, 8 * k);
    kn.loop_end();
    b.alu_imm(kn, vta::AluOp::Add, static_cast<std::int32_t>(k));
  }
  b.finish();
  const auto stream = b.take();
  const auto proven = vta::decode_all(config.layout(), stream.insns);
  auto prog = proven;
  auto& alu = *std::find_if(prog.begin(), prog.end(),
                            [](const vta::InsnFields& f) { return f.opcode == vta::Opcode::Alu; });
  const vta::DecodedStream before{proven, stream.uops};
  alu.uop_end += 100;  // 100 micro-op entries more: checked alone
  CHECK(vta::check_hazards_like(config, {prog, stream.uops}, before));
  alu.uop_end = static_cast<std::uint32_t>(alu.uop_bgn + 6000);  // more than 4,096: whole
  CHECK_FALSE(vta::check_hazards_like(config, {prog, stream.uops}, before));
}

// A device checks a stream with the tokens of one it proved at the entries the stream adds
// (gemm_then_input_load: the second load from entry 4 or 6 is clean, from 2 it writes entries
// the GEMM reads).
TEST_CASE("hazards: a device checks a stream like one it proved at the entries it adds") {
  using namespace hazards_like_test;
  const vta::Config config;
  vta::SimDevice dev(config);
  const auto data = dev.alloc(1 << 16);
  auto stream_with = [&](std::int64_t at) { return gemm_then_input_load(config, at, data.phys); };
  CHECK_NOTHROW(dev.run(stream_with(4)));
  CHECK(dev.incremental_checks() == 0);  // nothing like it proven yet
  CHECK_NOTHROW(dev.run(stream_with(6)));
  CHECK(dev.incremental_checks() == 1);
  // entries 2 and 3, which the GEMM reads: the message of the whole check
  const auto whole = what_of([&] { vta::check_hazards(config, stream_with(2)); });
  CHECK(whole.find("writes input entry 2") != std::string::npos);
  CHECK(whole.find("WAR race") != std::string::npos);
  CHECK(what_of([&] { dev.run(stream_with(2)); }) == whole);
  CHECK(dev.hazard_checks() == 3);
  CHECK(dev.proven_streams() == 2);
}

// A device decodes a stream from the latest it kept decoded with as many instructions, placed
// at the same base and relocating the same words: where a word is that one's, its decode;
// elsewhere the word's own. Either way decode_all's.
TEST_CASE("decoded streams: a stream decoded from a kept one where their words agree") {
  using namespace hazards_like_test;
  const vta::Config config;
  const auto layout = config.layout();
  constexpr std::uint64_t kBase = 0x1234;  // where the micro-ops are placed, in micro-ops
  const auto placed = [&](const vta::Stream& s) {
    std::vector<vta::InsnWord> words(s.insns.size());
    REQUIRE(s.relocate(kBase, words.data()));
    return words;
  };
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const auto kept = random_program(config, rng);
    vta::detail::DecodedStreams proven;
    proven.insert(kept, kBase, vta::decode_all(layout, placed(kept)));
    // a few words another word of the stream (each decodes)
    auto s = kept;
    for (int c = 0; c < 3; ++c) s.insns[rng() % s.insns.size()] = s.insns[rng() % s.insns.size()];
    const auto words = placed(s);
    CHECK(proven.decode(layout, words, s, kBase) == vta::decode_all(layout, words));
    // the same words, none relocated: the micro-op loads keep their addresses
    REQUIRE(!s.uop_relocs.empty());
    s.uop_relocs.clear();
    const auto absolute = placed(s);
    REQUIRE(absolute != words);
    CHECK(proven.decode(layout, absolute, s, kBase) == vta::decode_all(layout, absolute));
    // placed elsewhere: the relocated words differ from the kept decode's
    s.uop_relocs = kept.uop_relocs;
    std::vector<vta::InsnWord> elsewhere(s.insns.size());
    REQUIRE(s.relocate(kBase + 64, elsewhere.data()));
    CHECK(proven.decode(layout, elsewhere, s, kBase + 64) == vta::decode_all(layout, elsewhere));
  }
}
