// The replays vta::replay_source generates (compiled here from gen/gen_replays.cpp's output)
// write the same words as vta::Program::instantiate, and both those of Program::write without
// loop copies, for every dim value of each case, and fail where it fails; a static program's
// replay runs in a constant expression.
#include <dlavm/vta/loop_memo_scan.hpp>
#include <dlavm/vta/repeated_runs.hpp>

#include <doctest/doctest.h>

#include "cases.hpp"
#include "replays.hpp"
#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace replay_codegen {

using namespace dlavm;
using Storage = vta::HostStreamStorage;
// the generated code's writer: the layout a constant (the host's Program::instantiate, which
// these replays are compared with, reads it at run time)
using Layout = replays::WriterLayout;
template <class S>
using Replay = runtime::Replay<S, Layout>;
template <class S>
using StreamWriter = runtime::StreamWriter<S, Layout>;

struct Entry {
  const char* name;
  bool (*replay)(Replay<Storage>&, const std::int64_t*);
  bool (*firmware)(Replay<runtime::SpanStorage>&, const std::int64_t*);  // as firmware stores
  const runtime::SramRegion* regions;
  std::size_t region_count, max_ops, params;
};

#define REPLAY_ENTRY(n)                                    \
  Entry{#n,                                                \
        &replays::n::replay<Storage, Layout>,              \
        &replays::n::replay<runtime::SpanStorage, Layout>, \
        replays::n::kRegions,                              \
        std::size(replays::n::kRegions),                   \
        replays::n::kMaxOps,                               \
        replays::n::kParams},
const Entry entries[] = {REPLAYS_FOR_EACH(REPLAY_ENTRY)};
#undef REPLAY_ENTRY

// The compiled replay's stream, or nothing where it fails; `copied`: its loop iterations
// written by copying (runtime::LoopMemo), `whole`: of them, without the body's calls.
std::optional<vta::Stream> compiled(const Entry& e, const std::vector<std::int64_t>& dims,
                                    std::size_t& copied, std::size_t& whole,
                                    std::uint64_t* replaced = nullptr,
                                    std::size_t* tiles = nullptr) {
  Storage st;
  StreamWriter<Storage> w({}, replays::kUopDepth, st);
  std::vector<runtime::RegionState> states(e.region_count);
  std::vector<runtime::UopOp> ops(e.max_ops);
  std::vector<std::uint64_t> phys;
  for (std::size_t k = 0; k < e.params; ++k) phys.push_back(deploy_cases::param_phys(k));
  Replay<Storage> r(w, replays::kUopDepth, replays::kElemBytes, e.regions, states.data(),
                    e.region_count, phys.data(), {ops.data(), ops.size()});
  const bool ok = e.replay(r, dims.data());
  copied = r.copied();
  whole = r.copied_whole();
  if (replaced != nullptr) *replaced = r.replaced();
  if (tiles != nullptr) *tiles = r.copied_tiles();
  if (!ok || !w.finish()) return std::nullopt;
  return st.stream;
}

// What a replay into storage of `capacity` instructions writes, with or without copying
// loop iterations: its words and its error. The firmware's kernel tables are the caller's:
// reused, they hold what the runs before left in them, as a firmware's Workspace does.
struct Written {
  std::vector<runtime::InsnWord> insns;
  std::vector<std::uint32_t> uops, relocs;
  runtime::WriterError error;
  std::size_t copied = 0, whole = 0, tiles = 0;
};
struct KernelTables {
  std::vector<runtime::KernelSlot> stored, resident;
  std::vector<std::uint32_t> index;
  // resident ones as deploy::emit sizes them: no more than the micro-op SRAM's entries
  explicit KernelTables(std::size_t capacity)
      : stored(capacity),
        resident(runtime::KernelTables::resident_capacity_for(capacity, replays::kUopDepth)),
        index(runtime::KernelTables::index_size(stored.size(), resident.size())) {}
  runtime::KernelTables span() {
    return {stored.data(), resident.data(), index.data(), stored.size(), resident.size()};
  }
};
// A firmware's Replay of entry e into storage of `capacity` instructions (pinned: the writer
// and the Replay point into it).
struct FirmwareRig {
  FirmwareRig(const Entry& e, std::size_t capacity, const std::vector<std::uint64_t>& phys,
              KernelTables& kernels, std::size_t uop_capacity = 4096)
      : insns(capacity + 1),
        uops(uop_capacity),
        relocs(capacity + 1),
        st(insns.data(), capacity, uops.data(), uops.size(), relocs.data(), kernels.span()),
        w({}, replays::kUopDepth, st),
        states(e.region_count),
        ops(e.max_ops),
        r(w, replays::kUopDepth, replays::kElemBytes, e.regions, states.data(), e.region_count,
          phys.data(), {ops.data(), ops.size()}) {}
  FirmwareRig(const FirmwareRig&) = delete;
  FirmwareRig& operator=(const FirmwareRig&) = delete;
  std::vector<runtime::InsnWord> insns;
  std::vector<std::uint32_t> uops, relocs;
  runtime::SpanStorage st;
  StreamWriter<runtime::SpanStorage> w;
  std::vector<runtime::RegionState> states;
  std::vector<runtime::UopOp> ops;
  Replay<runtime::SpanStorage> r;
};
Written firmware(const Entry& e, const std::vector<std::int64_t>& dims, std::size_t capacity,
                 const std::vector<std::uint64_t>& phys, bool copies, KernelTables& kernels,
                 std::size_t uop_capacity = 4096) {
  FirmwareRig rig(e, capacity, phys, kernels, uop_capacity);
  rig.r.copy_loops(copies);
  if (e.firmware(rig.r, dims.data())) rig.w.finish();
  rig.insns.resize(rig.st.insn_count());
  rig.uops.resize(rig.st.uop_count());
  rig.relocs.resize(rig.st.reloc_count());
  return {rig.insns,           rig.uops,       rig.relocs,
          rig.w.error(),       rig.r.copied(), rig.r.copied_whole(),
          rig.r.copied_tiles()};
}
Written firmware(const Entry& e, const std::vector<std::int64_t>& dims, std::size_t capacity,
                 const std::vector<std::uint64_t>& phys, bool copies) {
  KernelTables kernels(64);
  return firmware(e, dims, capacity, phys, copies, kernels);
}

std::size_t check_case(const deploy_cases::Case& c, const Entry& e) {
  REQUIRE(c.name == e.name);
  const auto& p = *c.program;
  REQUIRE(e.regions != nullptr);
  CHECK(e.region_count == p.regions().size());
  // the generated table is the program's, each region with the mask of those it overlaps
  for (std::size_t k = 0; k < e.region_count && k < p.regions().size(); ++k) {
    CAPTURE(k);
    const auto& r = p.regions()[k];
    CHECK(e.regions[k].memory == r.memory);
    CHECK(e.regions[k].begin == r.begin);
    CHECK(e.regions[k].end == r.end);
    CHECK(e.regions[k].arm == r.arm);
    CHECK(e.regions[k].overlap_mask == r.overlap_mask);
    CHECK(r.overlap_mask == runtime::overlap_mask(p.regions().data(), p.regions().size(), k));
  }
  std::vector<std::uint64_t> phys;
  for (std::size_t k = 0; k < p.func().params.size(); ++k)
    phys.push_back(deploy_cases::param_phys(k));
  int compared = 0, refused = 0;
  std::size_t copies = 0, wholes = 0;
  // the firmware's storage, sized as deploy::emit sizes a Workspace
  const auto bound = p.stream_bound();
  KernelTables kernels(runtime::KernelTables::capacity_for(static_cast<std::uint64_t>(bound.insns),
                                                           static_cast<std::uint64_t>(bound.uops)));
  for (const auto& values : c.values) {
    std::vector<ne::Binding> bindings;
    for (std::size_t k = 0; k < c.dims.size(); ++k) bindings.push_back({c.dims[k], values[k]});
    std::optional<vta::Stream> host, every_call;
    try {
      host = p.instantiate(bindings, phys);
    } catch (const dlavm::Error&) {
    }
    try {  // the host's replay without its loop copies: the reference both are held to
      vta::Builder b(p.env().config);
      p.write(b, bindings, phys, /*copy_loops=*/false);
      b.finish();
      every_call = b.take();
    } catch (const dlavm::Error&) {
    }
    std::size_t copied = 0, whole = 0;
    const auto mine = compiled(e, values, copied, whole);
    copies += copied;
    wholes += whole;
    INFO(c.name, " at ", fmt::format("{}", fmt::join(values, ", ")));
    REQUIRE(host.has_value() == mine.has_value());
    REQUIRE(host.has_value() == every_call.has_value());
    if (!host) {
      ++refused;
      continue;
    }
    // the bound a firmware's stream buffers are sized by holds
    CHECK(static_cast<std::int64_t>(host->insns.size()) <= p.stream_bound().insns);
    CHECK(static_cast<std::int64_t>(host->uops.size()) <= p.stream_bound().uops);
    REQUIRE(host->insns.size() == mine->insns.size());
    CHECK(host->insns == mine->insns);
    CHECK(host->uops == mine->uops);
    CHECK(host->uop_relocs == mine->uop_relocs);
    CHECK(host->insns == every_call->insns);
    CHECK(host->uops == every_call->uops);
    CHECK(host->uop_relocs == every_call->uop_relocs);
    const auto stored = firmware(e, values, static_cast<std::size_t>(bound.insns), phys, true,
                                 kernels, static_cast<std::size_t>(bound.uops));
    CHECK(stored.error.status == runtime::Status::Ok);
    CHECK(host->insns == stored.insns);
    CHECK(host->uops == stored.uops);
    CHECK(host->uop_relocs == stored.relocs);
    ++compared;
  }
  MESSAGE(c.name, ": ", compared, " dim values equal word for word, ", refused,
          " refused by both; ", copies, " loop iterations copied, ", wholes, " of them whole");
  CHECK(compared > 0);
  return copies;
}

TEST_CASE("generated replays write Program::instantiate's words for every dim value") {
  const auto cases = deploy_cases::cases();
  const auto statics = deploy_cases::static_cases();
  REQUIRE(cases.size() + statics.size() == std::size(entries));
  std::size_t k = 0;
  for (const auto& c : cases) check_case(c, entries[k++]);
  for (const auto& c : statics) check_case(c, entries[k++]);
}

// A case's replay at (token, last) equals Program::instantiate's words, copies at least
// `copies` loop iterations, `tiles` of them tiles (runtime::TileMemo), and replaces at most
// `replaced` kernel memo entries (each a kernel encoded again).
struct CopyRun {
  const char* name;
  std::int64_t token, last;
  std::size_t copies;                          // at least
  std::uint64_t replaced = ~std::uint64_t{0};  // at most
  std::size_t tiles = 0;                       // at least
};
void check_copies(const std::vector<deploy_cases::Case>& cases, const CopyRun& run) {
  CAPTURE(run.name);
  CAPTURE(run.token);
  CAPTURE(run.last);
  std::size_t k = 0;
  while (k < cases.size() && cases[k].name != run.name) ++k;
  REQUIRE(k < cases.size());
  std::size_t copied = 0, whole = 0, tiles = 0;
  std::uint64_t replaced = 0;
  const auto mine = compiled(entries[k], {run.token, run.last}, copied, whole, &replaced, &tiles);
  REQUIRE(mine.has_value());
  std::vector<std::uint64_t> phys;
  for (std::size_t p = 0; p < cases[k].program->func().params.size(); ++p)
    phys.push_back(deploy_cases::param_phys(p));
  std::vector<ne::Binding> bindings;
  bindings.push_back({cases[k].dims[0], run.token});
  bindings.push_back({cases[k].dims[1], run.last});
  CHECK(cases[k].program->instantiate(bindings, phys).insns == mine->insns);
  MESSAGE(std::string(run.name), " at (", run.token, ", ", run.last, "): ", copied,
          " iterations copied (", tiles, " tiles), ", replaced, " memo entries replaced");
  CHECK(copied >= run.copies);
  CHECK(replaced <= run.replaced);
  // (without the time shortcuts every tile runs its calls)
  if constexpr (runtime::kTimeShortcuts) CHECK(tiles >= run.tiles);
}

TEST_CASE("attention's replays copy the iterations of their head loops") {
  // The loops over the heads are memoized (their memos sized for the calls of an iteration at
  // the largest dims: 330 for Q.K^T's pairs of heads at 16 tokens), their bodies entering the
  // matmuls' kernels with the values of a loop over the keys inside them, which differ in the
  // last chunk of keys. The kernels' memos hold several entries, so that every head after the
  // first two is copied: probabilities.V's 8 heads, Q.K^T's 4 pairs of heads.
  const auto cases = deploy_cases::cases();
  for (const auto& run : {CopyRun{"attention0", 1, 0, 2}, CopyRun{"attention0", 1, 1500, 2},
                          CopyRun{"attention0", 1, 2047, 2}, CopyRun{"attention0", 16, 2032, 2},
                          CopyRun{"attention1", 1, 0, 6}, CopyRun{"attention1", 1, 2047, 6},
                          CopyRun{"attention1", 16, 700, 6}, CopyRun{"attention1", 16, 2032, 6}})
    check_copies(cases, run);
}

TEST_CASE("the integer softmax's replays copy the iterations of its chunk loops") {
  // The loops over a tile's chunks are memoized. At a decode step after 2,047 positions (one
  // tile of queries, 32 chunks, the first 26 kept) they copy 100 iterations and replace 25
  // kernel memo entries; after 1,151 positions (18 chunks, all kept), 55 and 17. The sum's copy
  // of each kept chunk's exponentials, to rows that move with the chunk, is marked
  // vta.replay_apart: the statements before and after it are memoized apart and copied in the
  // kept chunks too. The normalization's kernels, keyed on the block of 320 rows its loop
  // stores (6 at most), keep an entry per block. At 16 tokens the 8 tiles of queries are
  // uniform (IntegerSoftmaxKernel's uniform tiles: each over all the keys, the causal masks from
  // a table at an address affine in the tile), and the loop over them is tiled
  // (runtime::TileMemo): the first tile is written by its calls and recorded (its transfers'
  // steps given by the code), the other seven copied whole, the second too, though it waits
  // for the first tile's stores where the first waited for none: 105 iterations copied in all
  // (the first tile's) and 25 entries replaced (before the steps, the second tile was recorded
  // by its calls too and the other six copied: 191 and 49; before uniform tiles, the tile
  // loop's values read the tile, and each tile after the first copied the chunk loops'
  // iterations the first recorded: 749 copies, 416 entries replaced).
  const auto cases = deploy_cases::cases();
  for (const auto& run :
       {CopyRun{"isoftmax0", 1, 2047, 100, 25}, CopyRun{"isoftmax0", 16, 2032, 105, 25, 7},
        CopyRun{"isoftmax0", 1, 1151, 55, 17}})
    check_copies(cases, run);
}

// A case's generated replay (deploy_cases::cases, by name), the integer softmax's, and how often
// a text occurs in one.
std::string replay_of(std::string_view name) {
  const auto cases = deploy_cases::cases();
  const auto it = std::ranges::find_if(cases, [&](const auto& c) { return c.name == name; });
  REQUIRE(it != cases.end());
  return vta::replay_source(*it->program, "replay", it->dims);
}
std::string isoftmax_replay() { return replay_of("isoftmax0"); }
std::size_t occurrences(const std::string& source, std::string_view what) {
  std::size_t n = 0;
  for (auto at = source.find(what); at != std::string::npos; at = source.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("memos of loops inside the tile loop outlive each tile") {
  // The integer softmax's chunk loops, inside the loop over its tiles of queries, read no value
  // of that loop with a loop of their own: their memos are declared with the kernels' (outside
  // every loop, lmN) and entered by each tile, which may copy what the tile before recorded,
  // keeping it where another tile follows; their DRAM steps read no tile, so each tile keeps
  // the steps the first measured. (The words: above, at every dim value.)
  // (Without the time shortcuts, at -Os, each entry has a memo of its own, in the stack of
  // the loop's block, as before: runtime::OwnLoopMemo.)
  const std::string source = isoftmax_replay();
  const std::size_t entered = occurrences(source, ".enter(true, i0 + 1 < i0_end);");
  CHECK(entered >= 4);
  CHECK(occurrences(source, "dlavm::runtime::KeptLoopMemo<") == entered);
  CHECK(occurrences(source, "dlavm::runtime::OwnLoopMemo<") == entered);
  CHECK(occurrences(source, "= dlavm::runtime::loop_memo(own") == entered);
}

TEST_CASE("a loop whose iterations no loop memo holds is tiled, its later tiles copied whole") {
  // softmax_blocks' loop over its 4 blocks, each of up to 12 chunks of keys in three passes:
  // more calls an iteration than a LoopMemo holds (LoopMemoScan::kMaxCalls), its values but
  // DRAM offsets the same in every block. It is tiled (runtime::TileMemo), its chunk loops
  // memoized inside it: the first block is written by its calls and recorded, with each
  // transfer's step from a block to the next listed after the body (`tm.step`, in the order
  // the body writes them), the other three copied whole. (The words: above, at every key
  // count.)
  const std::string source = replay_of("softmax_blocks");
  CHECK(occurrences(source, "dlavm::runtime::TileMemo<0, ") == 1);
  CHECK(occurrences(source, "if (r.tile_begin(tm, tm.same(), i0 + 1 < i0_end, true)) {") == 1);
  CHECK(occurrences(source, "if (tm.recording) {") == 1);
  CHECK(occurrences(source, "if (!r.tile_end(tm)) return false;") == 1);
  // a step for each transfer of the body (the same count of loads and stores), none of them a
  // call
  const auto steps = source.substr(source.find("if (tm.recording) {"));
  const auto listed = steps.substr(0, steps.find("r.tile_end"));
  const auto body = source.substr(source.find("r.tile_begin"));
  const auto calls = body.substr(0, body.find("if (tm.recording)"));
  CHECK(occurrences(listed, "tm.step(") ==
        occurrences(calls, "r.load(") + occurrences(calls, "r.store("));
  CHECK(occurrences(listed, "r.") == 0);
  const auto inside = source.substr(source.find("r.tile_begin"));
  CHECK(occurrences(inside.substr(0, inside.find("r.tile_end")), "r.iteration_begin(") >= 3);
  const auto cases = deploy_cases::cases();
  std::size_t k = 0;
  while (k < cases.size() && cases[k].name != "softmax_blocks") ++k;
  REQUIRE(k < cases.size());
  std::vector<std::uint64_t> phys;
  for (std::size_t p = 0; p < cases[k].program->func().params.size(); ++p)
    phys.push_back(deploy_cases::param_phys(p));
  for (const std::int64_t keys : {1, 16, 17, 100, 191, 192}) {
    CAPTURE(keys);
    std::size_t copied = 0, whole = 0, tiles = 0;
    const auto mine = compiled(entries[k], {keys}, copied, whole, nullptr, &tiles);
    REQUIRE(mine.has_value());
    const std::vector<ne::Binding> bindings = {{cases[k].dims[0], keys}};
    CHECK(cases[k].program->instantiate(bindings, phys).insns == mine->insns);
    MESSAGE("softmax_blocks at ", keys, " keys: ", tiles, " tiles copied, ", copied,
            " iterations copied in all");
    // (without the time shortcuts every tile runs its calls)
    if constexpr (runtime::kTimeShortcuts) CHECK(tiles == 3);
  }
}

TEST_CASE("a loop of more than 32 calls an iteration that a loop memo holds is tiled too") {
  // The MLP's loop over blocks of 64 rows (80 calls a block at the largest batch) and
  // attention1's outer loop (126 calls an iteration) are tiled (LoopMemoScan::kMinTileCalls): the
  // first tile recorded with the steps the code gives, so the second is a copy. Their inner loops
  // stay plain, as inside a memoized loop, and the TileMemo is declared with an iteration's calls:
  // at -Os it is a loop memo (runtime::TiledLoopMemo, standalone/replay_size_optimized.cpp).
  // attention1's loop of 12 calls an iteration stays a loop memo.
  for (const auto& tiled :
       {std::pair{"mlp0", "dlavm::runtime::TileMemo<2, 44, 15, 80> tm{};"},
        std::pair{"attention1", "dlavm::runtime::TileMemo<0, 110, 9, 126> tm{};"}}) {
    const std::string_view name = tiled.first, decl = tiled.second;
    CAPTURE(name);
    const std::string source = replay_of(name);
    REQUIRE(occurrences(source, decl) == 1);
    const auto inside = source.substr(source.find("r.tile_begin"));
    CHECK(occurrences(inside.substr(0, inside.find("r.tile_end")), "r.iteration_begin(") == 0);
  }
  CHECK(occurrences(replay_of("attention1"), "dlavm::runtime::LoopMemo<0, 12, 9> ") == 1);
  // at the largest batch, four blocks: three copied
  std::size_t copied = 0, whole = 0, tiles = 0;
  REQUIRE(compiled(entries[0], {256}, copied, whole, nullptr, &tiles).has_value());
  if constexpr (runtime::kTimeShortcuts) CHECK(tiles == 3);
}

TEST_CASE("a memoized loop inside another keys the values of the loops around it") {
  // The rule behind the memos above (vta::detail::LoopMemoScan, with `outer` the loops around):
  // a value of the loops around alone is a key, so that an entry copies an iteration of an
  // entry before only with the same values; one that reads a loop around with a loop inside
  // the body can be no key, and the loop's memo is then not kept across entries; a DRAM step
  // that reads a loop around is measured again in each entry. (Without the first, planted, the
  // programs above still pass: none of theirs reads its tile alone inside its chunk loops.)
  const auto tile = ne::var("tile", 0, 7), chunk = ne::var("chunk", 0, 31),
             row = ne::var("row", 0, 3);
  using vta::detail::LoopMemoScan;
  LoopMemoScan scan(chunk, 8);
  scan.outer = {tile};
  CHECK(scan.read(ne::Expr(tile) + 1, false));
  CHECK(scan.read((ne::Expr(chunk) * 64) + ne::Expr(tile), false));
  CHECK_FALSE(scan.read(ne::Expr(3), false));
  CHECK(scan.entry);
  scan.dram(te::index_value((ne::Expr(chunk) * 64) + (ne::Expr(tile) * 2048)));
  CHECK(scan.affine);
  CHECK(scan.entry_steps);  // the step, 64, reads no tile
  scan.dram(te::index_value(ne::Expr(chunk) * ne::Expr(tile)));
  CHECK_FALSE(scan.entry_steps);  // its step is the tile
  scan.open(row, ne::Expr(4), false);
  CHECK_FALSE(scan.read(ne::Expr(tile) + ne::Expr(row), false));
  CHECK_FALSE(scan.entry);
  CHECK(scan.ok);  // still memoized, with a memo of each entry's own
  // without loops around (the host's replay plan, a loop outside all others): as before
  LoopMemoScan alone(chunk, 8);
  CHECK_FALSE(alone.read(ne::Expr(tile) + 1, false));
}

TEST_CASE("kernel sites that print the same kernel from the same keys share one memo") {
  // Sites with keys share where they print the same kernel from the same keys in other
  // loops: the probabilities' pass computes each chunk's exponential as the sum's pass did,
  // and enters the sum's memos with its own keys (`kA.hit(kB_0)`, the keys of site B). Not
  // two sites in the same loop: its other branch keeps memos of its own.
  const std::string source = isoftmax_replay();
  const auto count = [&](std::string_view what) { return occurrences(source, what); };
  const std::size_t memos = count("dlavm::runtime::KernelMemo<"), sites = count(".hit(");
  CAPTURE(memos);
  CAPTURE(sites);
  std::size_t keyed = 0;
  const std::regex hit(R"(k(\d+)\.hit\(k(\d+)_)");
  for (std::sregex_iterator m(source.begin(), source.end(), hit), end; m != end; ++m)
    if ((*m)[1] != (*m)[2]) ++keyed;
  MESSAGE(keyed, " sites with keys share another site's memo");
  CHECK(keyed >= 18);
  // And sites without keys: the reciprocal computes each quotient bit after the first two in
  // the rows of the bit before, twelve kernels the same in each, ten bits of them printed
  // once as a loop (below) whose body starts at the fifth kernel of the bit before it; that
  // body's twelfth kernel is the first bit's second, and the last bit's five the body's:
  // at least 6 sites with no memo of their own but the keyed ones. (Each is still checked
  // word for word above, with the loops copied and without.)
  CHECK(sites >= memos + keyed + 6);
}

TEST_CASE("a run of statements that prints the same code is printed once, as a loop") {
  // vta::detail::repeated_runs over statements' code ("" a statement no run holds): runs of
  // 3 or more, leftmost first, each the one covering the most statements where it starts, of
  // those the one of the shortest block, blocks of at most kLongestRun statements.
  using vta::detail::Run;
  const auto runs = [](std::vector<std::string> code) { return vta::detail::repeated_runs(code); };
  CHECK(runs({"a", "b", "a", "b", "a", "b", "c"}) == std::vector<Run>{{0, 2, 3}});
  CHECK(runs({"a", "a", "b", "a", "a", "a"}) == std::vector<Run>{{3, 1, 3}});
  CHECK(runs({"a", "a", "a", "a", "b", "c", "b", "c", "b", "c"}) ==
        std::vector<Run>{{0, 1, 4}, {4, 2, 3}});
  CHECK(runs({"a", "a", "a", "a", "a", "a"}) == std::vector<Run>{{0, 1, 6}});  // (not 2 x 3)
  CHECK(runs({"x", "", "x", "", "x", ""}).empty());                            // (no run holds "")
  CHECK(runs({"a", "a"}).empty());  // (two: hardly longer than a loop)
  // blocks of kLongestRun statements and no longer
  const auto blocks = [](std::size_t length) {
    std::vector<std::string> code;
    for (int k = 0; k < 3; ++k)
      for (std::size_t j = 0; j < length; ++j) code.push_back(std::to_string(j));
    return code;
  };
  const std::size_t longest = vta::detail::kLongestRun;
  CHECK(runs(blocks(longest)) == std::vector<Run>{{0, longest, 3}});
  CHECK(runs(blocks(longest + 1)).empty());
  // Random sequences over three codes and "": the runs do not overlap, each repeats its block
  // of codes, none empty, at least three times, and no block from its start covers more
  // statements, nor as many with a shorter block; and no run of three starts at a statement
  // between them.
  std::mt19937 rng(44);
  std::size_t found = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<std::string> code(std::uniform_int_distribution<std::size_t>(0, 40)(rng));
    for (auto& c : code) c = std::string(std::uniform_int_distribution<int>(0, 3)(rng), 'a');
    const auto covered = [&](std::size_t first, std::size_t length) {
      std::size_t count = 1;
      while (first + ((count + 1) * length) <= code.size()) {
        bool same = true;
        for (std::size_t j = 0; j < length; ++j)
          same = same && !code[first + j].empty() &&
                 code[first + j] == code[first + (count * length) + j];
        if (!same) break;
        ++count;
      }
      return count >= 3 ? count * length : 0;
    };
    const auto most = [&](std::size_t first) {
      std::size_t best = 0;
      for (std::size_t length = 1; length <= vta::detail::kLongestRun; ++length)
        best = std::max(best, covered(first, length));
      return best;
    };
    std::size_t next = 0;
    for (const Run& run : runs(code)) {
      REQUIRE(run.first >= next);
      for (; next < run.first; ++next) CHECK(most(next) == 0);
      REQUIRE(run.count >= 3);
      const auto statements = run.length * run.count;
      CHECK(covered(run.first, run.length) >= statements);
      CHECK(most(run.first) == statements);
      for (std::size_t shorter = 1; shorter < run.length; ++shorter)
        CHECK(covered(run.first, shorter) < statements);
      next = run.first + statements;
      ++found;
    }
    for (; next < code.size(); ++next) CHECK(most(next) == 0);
  }
  CHECK(found > 500);
  // The integer softmax's replay: the ten quotient bits alike in a loop of ten, memoized as any
  // loop (its iterations after the first two copied at once, Replay::iterations_again), whose
  // words are checked above at every dim value.
  const std::string source = isoftmax_replay();
  const std::regex ten(R"(for \(std::int64_t (i\d+) = 0, \1_end = \1 \+ 10; )");
  std::smatch loop;
  REQUIRE(std::regex_search(source, loop, ten));
  const std::string rest = loop.suffix();
  CHECK_FALSE(std::regex_search(rest, ten));
  // (to the line that closes it, indented as its own)
  const std::size_t line = source.rfind('\n', static_cast<std::size_t>(loop.position(0))) + 1;
  const std::string indent = source.substr(line, source.find('f', line) - line);
  const std::string body = rest.substr(0, rest.find("\n" + indent + "}\n"));
  CHECK(occurrences(body, ".hit()") == 12);
  CHECK(occurrences(body, "iteration_begin(lm, lm.same()") == 1);
  CHECK(occurrences(body, "iterations_again(lm, ") == 1);
}

TEST_CASE("runs of kernels and transfers, after a loop and inside a run, are loops too") {
  // deploy_cases' row_repeats: its block loop's body L R A0 A0 A0 F (A0 A1)x3 R (L A0)x3
  // (A0 A0 A0 A1)x3 S S S prints five loops of three (A0 x3, (A0 A1), (L A0), the run of four,
  // memoized, so that the A0 x3 inside it is printed as it is, S x3) beside F's of 12. Their
  // words: "generated replays write Program::instantiate's words for every dim value", above.
  const std::string source = replay_of("row_repeats");
  const std::regex three(R"(for \(std::int64_t (i\d+) = 0, \1_end = \1 \+ 3; )");
  CHECK(std::distance(std::sregex_iterator(source.begin(), source.end(), three),
                      std::sregex_iterator()) == 5);
  CHECK(occurrences(source, "r.load(") == 2);   // L, and L in (L A0)
  CHECK(occurrences(source, "r.store(") == 1);  // S x3
}

TEST_CASE("kernel sites keyed on a short loop inside another keep an entry per iteration") {
  // The integer softmax's normalization computes a tile's probabilities in blocks of 320 rows,
  // at most 6 of them (ne::bounds of its loop's count over the dims' ranges), its six kernels
  // keyed on the block (the rounding's three and the store run once after the loop): each
  // keeps 6 entries, one per block, so that the next tile of queries (the loop around) finds
  // them all; the chunks past the kept ones, at most 7, keep 7 (the nine kernels there whose
  // rows are the chunk's keys, min(keys - 64 c, 64); ten before z_down_by_multiply took the
  // reset of z_down). A loop of more iterations than kKernelMemoEntries, or one with no loop
  // around it, keeps one entry per kernel (the chunks' loops: 32 chunks).
  const std::string source = isoftmax_replay();
  std::map<std::string, std::size_t> memos;  // by their entries, as printed
  const std::regex memo(R"(KernelMemo<\d+(?:, ([^>]+))?>)");
  for (std::sregex_iterator m(source.begin(), source.end(), memo), end; m != end; ++m)
    ++memos[(*m)[1].matched ? (*m)[1].str() : "1"];
  for (const auto& [entries, n] : memos) MESSAGE(n, " kernel memos of ", entries, " entries");
  CHECK(memos["6"] >= 6);
  CHECK(memos["7"] >= 9);
  for (const auto& kept : memos) {
    const std::string& entries = kept.first;  // (no binding: Clang 14's CAPTURE cannot name one)
    CAPTURE(entries);
    if (entries == "dlavm::runtime::kKernelMemoEntries") continue;
    const int most = std::stoi(entries);
    CHECK((most >= 1 && static_cast<std::size_t>(most) <= runtime::kKernelMemoEntries));
  }
}

TEST_CASE("kernel sites of constants write the images the codegen encoded") {
  // The integer softmax's kernels whose loops and micro-ops are constants (the reciprocal's
  // bits, the chunks' reductions) are encoded when the replay is printed: each site passes
  // its image (runtime::KernelImage) where it would collect micro-ops and encode them, and
  // sites of the same kernel share one. (Their words are checked above against the host's,
  // and a static program's at compile time below.)
  const std::string source = isoftmax_replay();
  const auto count = [&](std::string_view what) { return occurrences(source, what); };
  const std::size_t sites = count("_image(replay_kernels["), calls = count("r.kernel_begin();"),
                    images = count("dlavm::runtime::Opcode(");
  CAPTURE(sites);
  CAPTURE(calls);
  CAPTURE(images);
  // (77 images for 89 sites, and 59 kernels collected; 95 sites before the whole exponential's
  // shifts took three kernels where they took six, in each of two passes; 203 before the ten
  // quotient bits alike were printed once, in a loop)
  CHECK(sites >= 85);
  CHECK(images >= 20);
  CHECK(sites >= images + 10);  // sites of the same kernel share its image
  CHECK(calls >= 50);           // the keyed kernels still collect their micro-ops
}

void check_same(const Written& a, const Written& b) {
  CHECK(a.insns == b.insns);
  CHECK(a.error.status == b.error.status);
  CHECK(a.error.index == b.error.index);
  CHECK(a.error.opcode == b.error.opcode);
  CHECK(a.error.field == b.error.field);
  CHECK(a.error.value == b.error.value);
}

TEST_CASE("copied loop iterations fail where their calls fail: storage full, DRAM out of range") {
  std::size_t copies = 0, failed = 0, tiles = 0;
  for (const auto& e : entries) {
    const std::string name = e.name;
    // (softmax_blocks: a tiled loop, runtime::TileMemo, whose second to fourth tiles are
    // copied whole)
    if (name != "mlp0" && name != "mlp1" && name != "softmax_blocks") continue;
    CAPTURE(name);
    const std::vector<std::int64_t> dims = {name == "softmax_blocks" ? 192 : 256};
    std::vector<std::uint64_t> phys;
    for (std::size_t k = 0; k < e.params; ++k) phys.push_back(deploy_cases::param_phys(k));
    const auto full = firmware(e, dims, 100000, phys, true);
    REQUIRE(full.error.status == runtime::Status::Ok);
    REQUIRE(full.copied > 0);
    if (name == "mlp0") REQUIRE(full.whole > 0);
    if (name == "softmax_blocks" && runtime::kTimeShortcuts) REQUIRE(full.tiles == 3);
    // every storage size up to the whole stream: InsnsFull at the same instruction
    for (std::size_t capacity = 0; capacity < full.insns.size(); ++capacity) {
      CAPTURE(capacity);
      const auto copied = firmware(e, dims, capacity, phys, true);
      check_same(copied, firmware(e, dims, capacity, phys, false));
      CHECK(copied.error.status == runtime::Status::InsnsFull);
      copies += copied.copied;
      tiles += copied.tiles;
    }
    // parameters so high in DRAM that the element addresses of later iterations leave the
    // 32-bit field (INP's and OUT's elements of 16 bytes)
    for (const std::uint64_t below : {8, 64, 100, 200, 300, 1000, 3000}) {
      CAPTURE(below);
      std::vector<std::uint64_t> high(e.params, ((std::uint64_t{1} << 32) - below) * 256);
      const auto copied = firmware(e, dims, 100000, high, true);
      check_same(copied, firmware(e, dims, 100000, high, false));
      failed += copied.error.status == runtime::Status::FieldRange;
      copies += copied.copied;
      tiles += copied.tiles;
    }
    // one parameter at a time `below` 16-byte elements under 2^32, so that the first address
    // out of range falls in a recorded, a matched or a would-be whole copied iteration (the
    // first parameter of mlp0 from 516 to 771 below, the last from 1,031 to 1,542: a whole copy
    // checks its moved addresses before it writes a word, and leaves the failure to the calls)
    for (std::size_t k = 0; k < e.params; ++k)
      for (std::uint64_t below = 1; below < 2048; below += 7) {
        CAPTURE(k);
        CAPTURE(below);
        std::vector<std::uint64_t> phys_k = phys;
        phys_k[k] = ((std::uint64_t{1} << 32) - below) * 16;
        const auto copied = firmware(e, dims, 100000, phys_k, true);
        check_same(copied, firmware(e, dims, 100000, phys_k, false));
        failed += copied.error.status == runtime::Status::FieldRange;
        copies += copied.copied;
        tiles += copied.tiles;
      }
  }
  MESSAGE(copies, " iterations copied before the failures (", tiles, " tiles), ", failed,
          " DRAM ranges exceeded");
  CHECK(copies > 0);
  CHECK(failed > 0);
  if constexpr (runtime::kTimeShortcuts) CHECK(tiles > 0);  // (softmax_blocks')
}

TEST_CASE("a Replay goes on after its generated replay failed, once the error is cleared") {
  // A replay that fails inside a loop memo's copied or recorded iteration, or a tile being
  // recorded, leaves the function whose frame holds the memos: the Replay must not go on
  // copying into them (Mode::Copy would report LoopDiverged on the next kernel) nor noting
  // pushes and transfers in them. The failures of a coarser DRAM sweep than the one above (one
  // parameter high at a time, every 23rd address), then one ALU kernel on an accumulator region
  // with the same Replay: it is written, as it would be by a Replay that never failed; then
  // the whole replay again.
  std::size_t failures = 0;
  for (const auto& e : entries) {
    const std::string name = e.name;
    if (name != "mlp0" && name != "mlp1" && name != "softmax_blocks") continue;
    CAPTURE(name);
    std::uint32_t acc = 0;
    while (acc < e.region_count && e.regions[acc].memory != runtime::MemId::Acc) ++acc;
    REQUIRE(acc < e.region_count);
    const std::vector<std::int64_t> dims = {name == "softmax_blocks" ? 192 : 256};
    for (std::size_t k = 0; k < e.params; ++k)
      for (std::uint64_t below = 1; below < 2048; below += 23) {
        CAPTURE(k);
        CAPTURE(below);
        std::vector<std::uint64_t> phys;
        for (std::size_t p = 0; p < e.params; ++p) phys.push_back(deploy_cases::param_phys(p));
        phys[k] = ((std::uint64_t{1} << 32) - below) * 16;
        KernelTables kernels(64);
        FirmwareRig rig(e, 100000, phys, kernels);
        auto& r = rig.r;
        auto& w = rig.w;
        auto& st = rig.st;
        if (e.firmware(r, dims.data())) continue;
        ++failures;  // (a DRAM address out of its field, or misaligned for a larger element)
        w.clear_error();
        const std::size_t before = st.insn_count();
        const auto row = static_cast<std::int64_t>(e.regions[acc].begin);
        r.kernel_begin();
        r.loop_begin(1, 0, 0, 0);
        r.push(row, row, 0);
        CHECK(r.alu(runtime::AluOp::Add, true, 1, acc, acc));
        CHECK(w.error().status == runtime::Status::Ok);
        CHECK(st.insn_count() > before);
        // and the replay again, its parameters in range: it records and copies loop
        // iterations and tiles (softmax_blocks: a tile memo recording no tile, where the
        // Replay still named the failed run's, would copy none)
        phys[k] = deploy_cases::param_phys(k);
        const std::size_t tiles = r.copied_tiles(), copied = r.copied();
        CHECK(e.firmware(r, dims.data()));
        CHECK(r.copied() > copied);
        if (name == "softmax_blocks" && runtime::kTimeShortcuts) CHECK(r.copied_tiles() > tiles);
      }
  }
  CHECK(failures > 0);
}

// A static program's stream built in a constant expression by its generated replay, with
// storage of exactly the host stream's size.
template <std::size_t Insns, std::size_t Uops, std::size_t Regions, std::size_t Params,
          std::size_t Ops, class Fn>
constexpr bool constant_stream_equals(Fn replay, const runtime::SramRegion (&regions)[Regions],
                                      const runtime::InsnWord (&insns)[Insns],
                                      const std::uint32_t (&uops)[Uops]) {
  runtime::FixedStorage<Insns, Uops + Ops, 16> st;
  StreamWriter<runtime::FixedStorage<Insns, Uops + Ops, 16>> w({}, replays::kUopDepth, st);
  runtime::RegionState states[Regions] = {};
  runtime::UopOp ops[Ops + 1] = {};
  std::uint64_t phys[Params] = {};
  for (std::size_t k = 0; k < Params; ++k) phys[k] = deploy_cases::param_phys(k);
  Replay<runtime::FixedStorage<Insns, Uops + Ops, 16>> r(
      w, replays::kUopDepth, replays::kElemBytes, regions, states, Regions, phys, {ops, Ops});
  if (!replay(r, nullptr) || !w.finish() || st.insn_count() != Insns || st.uop_count() != Uops)
    return false;
  for (std::size_t i = 0; i < Insns; ++i)
    if (st.insns()[i] != insns[i]) return false;
  for (std::size_t i = 0; i < Uops; ++i)
    if (st.uops()[i] != uops[i]) return false;
  return true;
}

#define CONSTANT_STREAM(n)                                                            \
  constant_stream_equals<std::size(replays::n::kInsns), std::size(replays::n::kUops), \
                         std::size(replays::n::kRegions), replays::n::kParams,        \
                         replays::n::kMaxOps>(                                        \
      [](auto& r, const std::int64_t* d) { return replays::n::replay(r, d); },        \
      replays::n::kRegions, replays::n::kInsns, replays::n::kUops)

static_assert(CONSTANT_STREAM(vadd), "the vector add's constant stream differs from the host's");
static_assert(CONSTANT_STREAM(gemm), "the GEMM's constant stream differs from the host's");

TEST_CASE("a static program's stream is a constant expression equal to the host encoder's") {
  // the static_asserts above are the test; this states what they compared
  constexpr bool vadd = CONSTANT_STREAM(vadd), gemm = CONSTANT_STREAM(gemm);
  CHECK(vadd);
  CHECK(gemm);
  CHECK(std::size(replays::vadd::kInsns) > 4);
  CHECK(std::size(replays::gemm::kUops) > 0);
}

}  // namespace replay_codegen
