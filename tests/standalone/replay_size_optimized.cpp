// Compiled with -Os, as firmware for a small core is: the runtime's time shortcuts are off
// (runtime::kTimeShortcuts), so a tiled loop's TileMemo is a TiledLoopMemo where a loop memo
// holds an iteration's calls, and its tiles are memoized as iterations. The generated replays
// of tests/deploy/cases.hpp (gen/gen_replays.cpp) write here, at every dim value the deploy
// test replays, the same words with their loops copied as without (which tests/deploy compares
// with the host), and the tiled loops that are memoized as loops are copied.
#include <dlavm/runtime/replay.hpp>

#include "replays.hpp"
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

#ifndef __OPTIMIZE_SIZE__
#error "compile at -Os: this test is of the replay without the time shortcuts"
#endif

namespace rt = dlavm::runtime;

namespace {

using Storage = rt::SpanStorage;
using Replay = rt::Replay<Storage, replays::WriterLayout>;

struct Written {
  std::vector<rt::InsnWord> insns;
  std::vector<std::uint32_t> uops, relocs;
  rt::WriterError error{};
  std::size_t copied = 0;
};

// (tests/deploy/cases.hpp's, whose host headers this unit does not compile)
constexpr std::uint64_t param_phys(std::size_t k) { return 0x100000 * (k + 1); }

template <class Case>
Written write(const std::int64_t* dims, bool copies) {
  constexpr std::size_t kCapacity = 1 << 16;
  std::vector<rt::InsnWord> insns(kCapacity + 1);
  std::vector<std::uint32_t> uops(1 << 14), relocs(kCapacity + 1);
  constexpr std::size_t kKernels = 4096;  // distinct kernels (the integer softmax's: hundreds)
  std::vector<rt::KernelSlot> stored(kKernels),
      resident(rt::KernelTables::resident_capacity_for(kKernels, replays::kUopDepth));
  std::vector<std::uint32_t> index(rt::KernelTables::index_size(stored.size(), resident.size()));
  Storage st(insns.data(), kCapacity, uops.data(), uops.size(), relocs.data(),
             {stored.data(), resident.data(), index.data(), stored.size(), resident.size()});
  rt::StreamWriter<Storage, replays::WriterLayout> w({}, replays::kUopDepth, st);
  std::vector<rt::RegionState> states(std::size(Case::regions));
  std::vector<rt::UopOp> ops(Case::max_ops);
  std::vector<std::uint64_t> phys;
  for (std::size_t k = 0; k < Case::params; ++k) phys.push_back(param_phys(k));
  Replay r(w, replays::kUopDepth, replays::kElemBytes, Case::regions, states.data(), states.size(),
           phys.data(), {ops.data(), ops.size()});
  r.copy_loops(copies);
  if (Case::replay(r, dims)) w.finish();
  insns.resize(st.insn_count());
  uops.resize(st.uop_count());
  relocs.resize(st.reloc_count());
  return {insns, uops, relocs, w.error(), r.copied()};
}

bool same(const Written& a, const Written& b) {
  const auto& x = a.error;
  const auto& y = b.error;
  return x.status == y.status && x.index == y.index && x.opcode == y.opcode && x.field == y.field &&
         x.value == y.value && x.uop == y.uop && a.insns.size() == b.insns.size() &&
         std::memcmp(a.insns.data(), b.insns.data(), a.insns.size() * sizeof(rt::InsnWord)) == 0 &&
         a.uops == b.uops && a.relocs == b.relocs;
}

int failures = 0;
std::size_t tiled_cases = 0;

// Every dim value of the case: written whole, the same words with and without copies; at the
// largest dims, iterations copied where it has a tiled loop memoized as a loop.
template <class Case>
void check(const char* name) {
  constexpr std::size_t dims = Case::dims;
  constexpr std::size_t points = dims == 0 ? 1 : std::size(Case::values) / dims;
  std::size_t copied = 0;
  for (std::size_t p = 0; p < points; ++p) {
    const std::int64_t* at = Case::values + p * dims;
    const Written with = write<Case>(at, true), without = write<Case>(at, false);
    if (!same(with, without)) {
      std::printf("FAIL %s: point %zu: the words with loop copies differ from those without\n",
                  name, p);
      ++failures;
    }
    if (with.error.status != rt::Status::Ok || with.insns.empty()) {
      std::printf("FAIL %s: point %zu: status %d, %zu instructions\n", name, p,
                  static_cast<int>(with.error.status), with.insns.size());
      ++failures;
    }
    copied += with.copied;
    // (the last point: each dim at its largest value, where the tiles are most)
    if (p + 1 == points && Case::tiled_as_loops && with.copied == 0) {
      std::printf(
          "FAIL %s: at its largest dims, its tiled loops, memoized as loops at -Os, "
          "copied nothing\n",
          name);
      ++failures;
    }
  }
  std::printf("%s: %zu points, %zu iterations copied\n", name, points, copied);
  tiled_cases += Case::tiled_as_loops;
}

}  // namespace

// What check() reads of a generated case: its tables, its dim values, its replay.
#define CASE(n)                                                        \
  struct n##_case {                                                    \
    static constexpr const auto& regions = replays::n::kRegions;       \
    static constexpr std::size_t max_ops = replays::n::kMaxOps;        \
    static constexpr std::size_t params = replays::n::kParams;         \
    static constexpr std::size_t dims = replays::n::kDims;             \
    static constexpr const auto& values = replays::n::kValues;         \
    static constexpr bool tiled_as_loops = replays::n::kTiledAsLoops;  \
    static bool replay(Replay& r, const std::int64_t* d) {             \
      return replays::n::replay<Storage, replays::WriterLayout>(r, d); \
    }                                                                  \
  };
REPLAYS_FOR_EACH(CASE)
#undef CASE

int main() {
#define RUN(n) check<n##_case>(#n);
  REPLAYS_FOR_EACH(RUN)
#undef RUN
  // (gen_replays reads kTiledAsLoops from the source: if the code generator stopped giving
  // the calls, no case would have one)
  if (tiled_cases == 0) {
    std::printf("FAIL: no case has a tiled loop memoized as a loop at -Os\n");
    ++failures;
  }
  if (failures != 0) return 1;
  std::printf("PASS\n");
  return 0;
}
