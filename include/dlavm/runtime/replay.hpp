// Replay of a lowered VTA program's intrinsics: what vta::Program::instantiate runs on the host
// (evaluating the program's loops and fields) and what the C++ that deploy::emit generates
// runs in firmware (the same loops and fields, compiled), so that both write the same words.
// Each intrinsic orders itself after its data hazards (dependency tokens), checks its sizes,
// turns DRAM byte addresses into element addresses and writes its instruction:
//
//   load(mem, region, sram, param, offset, y, x, stride, pads)   vta.load
//   store(region, sram, param, offset, y, x, stride)             vta.store
//   kernel_begin(); loop_begin(extent, dst, src, wgt); push(dst, src, wgt);
//   gemm(reset, acc, inp, wgt) / alu(op, use_imm, imm, dst, src) a GEMM or ALU micro-op kernel
//   again(kernel, accesses)                                      a kernel written before
//   gemm_again(memo, ...) / alu_again(memo, ...)                 a memoized site (KernelMemo)
//   iteration_begin(memo, same, more, affine) / iteration_end     a memoized loop (LoopMemo)
//   iterations_again(memo, i, end, same_at)                      its next iterations, copied
//   tile_begin(memo, same, more, steps) / tile_end                a tiled loop (TileMemo)
//
// `param` indexes the program's parameters, whose byte addresses the replay is given; a region
// indexes the program's on-chip regions (SramRegion), their hazard states the caller's array.
// A kernel with a loop of no iterations (the last block of a symbolic dim) or no micro-op
// writes nothing. The writer is the caller's: several programs may write one stream, joined
// by StreamWriter::barrier. Standard library only, no exceptions, no heap, C++17.
#pragma once

#include <dlavm/runtime/writer.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace dlavm::runtime {

// The integer operations of the index expressions the generated replays compute (ne's
// FloorDiv, FloorMod, Min, Max), for divisors the generator has checked are nonzero constants.
constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b, r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? q - 1 : q;
}
constexpr std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
  const std::int64_t r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
constexpr std::int64_t min(std::int64_t a, std::int64_t b) { return a < b ? a : b; }
constexpr std::int64_t max(std::int64_t a, std::int64_t b) { return a < b ? b : a; }

// (the time shortcuts' copies of tiles and iterations) How many times `step` (not 0) can be
// added to `from`, a field's value, the sum staying in the field (0 to `limit`), or `most`
// where that many can: most steps leave it so, which a product tells without a division (it
// stays below 2^63 while `most` is below 2^31 and the step below 2^32).
constexpr std::int64_t steps_that_fit(std::int64_t from, std::int64_t step, std::int64_t limit,
                                      std::int64_t most) {
  const std::int64_t room = step > 0 ? limit - from : from, size = step > 0 ? step : -step;
  if (most < (std::int64_t{1} << 31) && size < (std::int64_t{1} << 32) && size * most <= room)
    return most;
  return room / size < most ? room / size : most;
}

// The bytes of one element of each memory (UOP, WGT, INP, ACC, OUT, ACC_8BIT), by MemId.
struct ElemBytes {
  std::uint64_t of[kMemIdCount] = {};
};

// The micro-ops of the kernel being replayed, in the caller's array of `capacity` entries
// (the program's largest kernel, which the host computes).
struct OpBuffer {
  UopOp* data = nullptr;
  std::size_t capacity = 0;
};

// How many entries a kernel site's memo holds where a memoized loop's body enters it with values
// of a loop inside that body (vta::replay_source's KernelMemo, the host's replay plan alike).
inline constexpr std::size_t kKernelMemoEntries = 8;

// What a kernel site of a generated replay (vta::replay_source) wrote the last times it was
// entered (Entries of them, the oldest replaced), each with the values of the loops around it
// that its fields read: entered again with the same values, it writes the same instruction
// (Replay::gemm_again, alu_again) without collecting and encoding its micro-ops, as the host's
// replay plan does. A replaced entry is counted (Replay::memo_replaced): a loop iteration is
// copied only where none was replaced since the iteration it copies began (a copy must find
// every kernel its calls found).
//
//   if (k3.hit(i1)) { if (!r.gemm_again(k3, false, 5u, 7u, 9u)) return false; }
//   else { k3.enter(r, i1); r.kernel_begin(); ...; if (!r.gemm(...)) return false;
//          k3.leave(r.writer()); }
template <std::size_t Keys, std::size_t Entries = 1>
struct KernelMemo {
  static_assert(Entries >= 1, "a memo holds an entry at least");
  struct Entry {
    std::int64_t key[Keys + 1] = {};  // one more: no array of size zero
    WrittenKernel written{};
    bool valid = false, wrote = false;
  };
  Entry entry[Entries] = {};
  std::uint32_t current = 0, next = 0;  // the entry hit or being written; the one to replace
  std::size_t insns_before = 0;

  template <class... K>
  constexpr bool hit(K... k) {
    static_assert(sizeof...(K) == Keys, "a key per loop value the kernel reads");
    const std::int64_t now[Keys + 1] = {static_cast<std::int64_t>(k)..., 0};
    for (std::size_t e = 0; e < Entries; ++e) {
      if (!entry[e].valid) continue;
      bool same = true;
      for (std::size_t i = 0; i < Keys && same; ++i) same = entry[e].key[i] == now[i];
      if (same) {
        current = static_cast<std::uint32_t>(e);
        return true;
      }
    }
    return false;
  }
  // Before the kernel's calls: the oldest entry takes these keys. `r`: the Replay, which
  // counts a valid entry replaced.
  template <class Replay, class... K>
  constexpr void enter(Replay& r, K... k) {
    static_assert(sizeof...(K) == Keys, "a key per loop value the kernel reads");
    const std::int64_t now[Keys + 1] = {static_cast<std::int64_t>(k)..., 0};
    current = next;
    next = static_cast<std::uint32_t>((next + 1) % Entries);
    Entry& e = entry[current];
    if (e.valid) r.memo_replaced();
    for (std::size_t i = 0; i < Keys; ++i) e.key[i] = now[i];
    insns_before = r.writer().size();
    e.valid = false;
  }
  // After the kernel's gemm or alu call succeeded: a kernel with no iterations wrote nothing.
  template <class Writer>
  constexpr void leave(const Writer& w) {
    Entry& e = entry[current];
    e.wrote = w.size() != insns_before;
    // (member by member: the writer has just stored its last kernel so, and the compiler's copy
    // of the whole record read it back in wider loads than those stores, which the processor
    // forwards none of; the copy cost step18's replay 2.5% at (1, 2,047))
    if (e.wrote) {
      const WrittenKernel& k = w.last_kernel();
      e.written.word.word[0] = k.word.word[0];
      e.written.word.word[1] = k.word.word[1];
      e.written.opcode = k.opcode;
      e.written.dram = k.dram;
      e.written.size = k.size;
      e.written.epoch = k.epoch;
      e.written.sram = k.sram;
    }
    e.valid = true;
  }
  // The entry hit or written last: whether it wrote an instruction, and which.
  constexpr bool wrote() const { return entry[current].wrote; }
  constexpr const WrittenKernel& written() const { return entry[current].written; }
};

// What a generated replay keeps of a loop (vta::replay_source declares a LoopMemo with each
// outermost loop it can memoize) so that an iteration like one before it, but for its DRAM
// addresses, is written by copying words:
//
//   dlavm::runtime::LoopMemo<1, 36, 11> lm{};  // keys, calls of an iteration, regions
//   for (std::int64_t i1 = 0, i1_end = i1 + n; i1 < i1_end; ++i1) {
//     if (r.iteration_begin(lm, lm.same(min(d0 - (i1 * 32), 32)), i1 + 1 < i1_end, true)) {
//       ... the body's calls ...
//     }
//     if (!r.iteration_end(lm)) return false;
//     if (!r.iterations_again(lm, i1, i1_end, lm_same)) return false;  // (affine loops)
//   }
//
// (`lm_same`, declared before the loop: [&](std::int64_t i1) { return lm.equal(keys); }, the
// same keys as iteration i1's.) The keys are the values the body reads from the loop's variable
// other than DRAM offsets (sizes, a kernel's memo keys, an inner loop's extent): with the same keys
// the body makes the same calls. An iteration whose keys equal the last one's is recorded: the
// instruction each call wrote, the pushes its hazards set, the dependency state at its start. A
// later iteration with the same keys, starting in a state that matches the recorded one up to a
// renaming of the instructions it can wait on (DepTracker::match, over the regions the recorded
// calls' accesses overlap: no other region's hazards reach them), makes the same tokens: it
// copies the words of the iteration before it (a DRAM address from the body's own call), sets
// the recorded pushes on the renamed instructions, and tracks its accesses as the calls do.
// The words, tokens and errors are those the calls write (tests/deploy compares them word
// for word); a recorded iteration that loaded micro-ops, or had more calls or pushes than the
// memo holds, is not copied.
// A call of a recorded iteration that wrote an instruction: where (from the iteration's first
// instruction), its module and accesses, and, for a transfer, how far its DRAM address moved
// from the iteration before (measured by the first copy, or, with the time shortcuts, as an
// affine loop's iteration is recorded: Replay::steps_from_earlier).
// (No member initializers, as RegionAccess.)
struct LoopCall {
  std::uint32_t at;
  Queue queue;
  std::uint8_t accesses;
  bool transfer;
  // (a time shortcut) bit a: a later call of the iteration writes access a's region, or reads
  // it from the same module after it, so that a whole copy need not track access a
  // (DepTracker::after's `passing`): the region's state at the iteration's end is another's
  std::uint8_t passing;
  RegionAccess access[3];
  std::int64_t step;
};

struct LoopTape {
  std::int64_t* keys = nullptr;  // the arrays of the LoopMemo holding this tape
  std::size_t key_capacity = 0;
  LoopCall* calls = nullptr;  // the recorded iteration's calls that wrote instructions
  std::size_t call_capacity = 0;
  PushLog log;                    // the pushes set while recording, at absolute indices
  RegionState* states = nullptr;  // the regions' states at the recorded iteration's start
  std::size_t state_capacity = 0;
  IndexMap map;  // the renaming from that start to the copy's

  bool have_keys = false;        // an iteration ran since reset(): `keys` are its
  bool armed = false;            // an iteration is recorded, and the last one is it or its copy
  bool stepped = false;          // the DRAM steps of the recorded calls are measured
  bool steady = false;           // a copy matched: the next ones start as the recorded one did
  std::uint32_t wholes = 0;      // its whole copies since it was recorded (2 once marked)
  int failures = 0;              // iterations recorded since reset()
  std::uint64_t replaced = 0;    // kernel memo entries replaced when the last iteration began
  bool replaced_inside = false;  // the last iteration replaced one
  std::uint32_t epoch = 0;       // the micro-op residency's (StreamWriter::resident_epoch) at
                                 // the recorded iteration's start
  std::size_t ncalls = 0;
  std::int64_t recorded = 0;                      // the recorded iteration's first instruction
  std::int64_t length = 0;                        // its instructions
  std::int64_t covered[DepTracker::kPairs] = {};  // the pushes set at its start
  std::int64_t pushed[DepTracker::kPairs] = {};   // at its end
  std::uint32_t ended = 0;  // the pushes set at the end of the last iteration (pushes())
  std::uint64_t met = ~std::uint64_t{0};  // the regions the recorded calls' accesses overlap
  // (a time shortcut) the pairs toward which the recorded iteration set a push (bit p: pushed[p]
  // != covered[p]), and whether it named an instruction before its start (a push set on one,
  // or the last toward a pair), which a copy renames (Replay::rename): else no copy reads the
  // renaming, and a steady copy does not read it anew (Replay::iteration_begin)
  std::uint16_t pairs = 0x1ff;
  bool renames = true;
  // a part's (`apart`): the calls counted at its last two starts, and how many it had (at most 2)
  std::uint64_t begun = 0, begun_before = 0;
  int begins = 0;
  bool apart = false;  // the tape's last iteration was a part's
  unsigned pops = 0;
  Queue last = Queue::Compute;
  std::size_t relocs = 0;
  std::int64_t from = 0;   // the first instruction of the iteration copied from
  std::int64_t start = 0;  // of the iteration being recorded or copied
  std::size_t cursor = 0;  // copying: the next call
  std::int64_t word = 0;   // copying: the next word, from `start`
  // (a time shortcut) the calls a whole copy visits once mark_passing ran: in order, those
  // with a transfer, of a module other than compute, or with an access that is not passing
  std::uint16_t* visited = nullptr;
  std::size_t nvisited = 0;
  std::uint16_t* transfers = nullptr;  // of those, the ones with a transfer
  std::size_t ntransfers = 0;
  // (a time shortcut) a loop reached again (enter(), in a loop around it) copies an iteration
  // like the one it recorded from that one's words as they ended (`kept` of them in
  // `snapshot`: later calls set pushes on the stream's), where its keys are that one's
  // (`recorded_keys`) and it starts as that one did (`entering`: none did yet); `entry`: the
  // copy under way is such a one; `keeps`: this entry keeps what it records for the next
  InsnWord* snapshot = nullptr;
  std::size_t snapshot_capacity = 0;
  std::int64_t* recorded_keys = nullptr;
  std::size_t kept = 0;
  bool entering = false, entry = false, keeps = false;
  // (a time shortcut) the last iteration begun and the one before it: where they started, and
  // where the one before ended; `affine`: the recorded iteration's loop is (its steps are
  // measured against the iteration before it: Replay::steps_from_earlier)
  std::int64_t last_start = 0, earlier = 0, last_end = 0;
  bool affine = false;
  // (a time shortcut) the calls noted (Replay::note_call) when the recorded iteration began
  std::uint64_t noted = 0;

  constexpr void reset() {
    have_keys = armed = stepped = steady = false;
    failures = 0;
  }
  // The loop reached (vta::replay_source declares the memo of a loop inside a loop outside
  // both, so that it outlives each entry): the tape forgets the iterations before but the one
  // it recorded, which an iteration like it copies (Replay::iteration_begin), and the DRAM
  // steps its copies measured where `steps_kept` (no step reads a loop around it). `again`:
  // the loop may be reached once more (a loop around it has iterations left), so that this
  // entry keeps what it records for the next.
  constexpr void enter(bool steps_kept, bool again) {
    const bool kept_steps = stepped && steps_kept;
    reset();
    stepped = kept_steps;
    begins = 0;
    entering = kTimeShortcuts && kept > 0;
    keeps = again;
  }
  // The recorded calls' passing accesses: backward, a write passes where a later call writes
  // its region, a read where one writes it or reads it from the same module (regions as bits,
  // where `masked`, at most kMaskedRegions; else every access is tracked); then the calls a
  // whole copy visits.
  constexpr void mark_passing(bool masked) {
    std::uint64_t written = 0, read[3] = {0, 0, 0};
    for (std::size_t c = ncalls < call_capacity ? ncalls : call_capacity; c-- > 0;) {
      LoopCall& call = calls[c];
      call.passing = 0;
      if (!masked) continue;
      auto& reads = read[static_cast<int>(call.queue) - 1];
      for (std::size_t a = call.accesses; a-- > 0;) {
        const std::uint64_t bit = std::uint64_t{1} << call.access[a].region;
        if ((written & bit) != 0 || (!call.access[a].write && (reads & bit) != 0))
          call.passing = static_cast<std::uint8_t>(call.passing | (1U << a));
        (call.access[a].write ? written : reads) |= bit;
      }
    }
    nvisited = ntransfers = 0;
    for (std::size_t c = 0; c < ncalls && c < call_capacity; ++c) {
      const LoopCall& call = calls[c];
      const unsigned tracked = ((1U << call.accesses) - 1U) & ~unsigned{call.passing};
      if (call.transfer || call.queue != Queue::Compute || tracked != 0)
        visited[nvisited++] = static_cast<std::uint16_t>(c);
      if (call.transfer) transfers[ntransfers++] = static_cast<std::uint16_t>(c);
    }
  }
  // Whether the keys of the iteration just begun (`keys`) are the recorded one's (`kept`).
  constexpr bool recorded_keys_same() const {
    if (kept == 0 || !have_keys) return false;
    for (std::size_t i = 0; i < key_capacity; ++i)
      if (keys[i] != recorded_keys[i]) return false;
    return true;
  }
  // Whether keys `k` (another iteration's) equal the last iteration's, which stay.
  template <class... K>
  constexpr bool equal(K... k) const {
    const std::int64_t now[sizeof...(K) + 1] = {static_cast<std::int64_t>(k)..., 0};
    if (sizeof...(K) > key_capacity || !have_keys) return false;
    for (std::size_t i = 0; i < sizeof...(K); ++i)
      if (keys[i] != now[i]) return false;
    return true;
  }
  // Whether the iteration's keys equal the last iteration's (keeping them for the next).
  template <class... K>
  constexpr bool same(K... k) {
    const std::int64_t now[sizeof...(K) + 1] = {static_cast<std::int64_t>(k)..., 0};
    // (more keys than the memo holds: never the same; vta::replay_source sizes each memo)
    if (sizeof...(K) > key_capacity) return have_keys = false;
    bool equal = have_keys;
    for (std::size_t i = 0; i < sizeof...(K); ++i) {  // (a count the compiler knows: unrolled)
      equal = equal & (keys[i] == now[i]);
      keys[i] = now[i];
    }
    have_keys = true;
    return equal;
  }
};

// The arrays every tape has, over Regions regions: its keys, the regions' states at the start
// it recorded, and the renaming a match finds (a region's writer and three readers: the most
// indices it can have); `attach` points a tape into them.
template <std::size_t Keys, std::size_t Regions>
struct TapeArrays {
  constexpr void attach(LoopTape& t) {
    t.keys = key_array;
    t.key_capacity = Keys;
    t.states = state_array;
    t.state_capacity = Regions;
    t.map.from = map_from;
    t.map.to = map_to;
    t.map.module = map_module;
    t.map.where = map_where;
    t.map.capacity = 4 * Regions;
  }
  std::int64_t key_array[Keys + 1] = {};  // one more: no array of size zero
  // (left unset, as the arrays below and in the memos: each is read only where written, the
  // states where an iteration was recorded, the renaming where IndexMap::add wrote, and a
  // generated replay declares its memos at each call, tens of kilobytes that setting would
  // write and read through the cache)
  RegionState state_array[Regions + 1];
  std::int64_t map_from[(4 * Regions) + 1], map_to[(4 * Regions) + 1];
  std::uint8_t map_module[(4 * Regions) + 1];
  std::uint32_t map_where[(4 * Regions) + 1];
};

// A LoopTape over arrays of its own: Keys keys, the calls of an iteration (Calls at most: a
// longer one is not copied), as many pushes, and the states of Regions regions. It points
// into itself, so it is neither copied nor moved.
template <std::size_t Keys, std::size_t Calls, std::size_t Regions, std::size_t Words = 0>
struct LoopMemo : LoopTape, TapeArrays<Keys, Regions> {
  constexpr LoopMemo() {
    this->attach(*this);
    calls = call_array;
    call_capacity = Calls;
    log.edits = edit_array;
    log.capacity = Calls;
    visited = visit_array;
    transfers = transfer_array;
    if constexpr (kTimeShortcuts && Words > 0) {
      snapshot = snapshot_array;
      snapshot_capacity = Words;
      recorded_keys = recorded_key_array;
    }
  }
  LoopMemo(const LoopMemo&) = delete;
  LoopMemo& operator=(const LoopMemo&) = delete;

  LoopCall call_array[Calls + 1];  // (unset: written as the calls are recorded, the pushes
  PushEdit edit_array[Calls + 1];  // as they are logged)
  static_assert(Calls < 65536, "a call's index fits LoopTape::visited");
  std::uint16_t visit_array[kTimeShortcuts ? Calls + 1 : 1];     // (mark_passing writes what
  std::uint16_t transfer_array[kTimeShortcuts ? Calls + 1 : 1];  // it lists)
  // a loop entered again: the recorded iteration's words and keys (Words > 0, a time shortcut)
  InsnWord snapshot_array[kTimeShortcuts ? Words + 1 : 1] = {};
  std::int64_t recorded_key_array[kTimeShortcuts && Words > 0 ? Keys + 1 : 1] = {};
};

// The memo of a loop inside another, where the time shortcuts keep it across the loop's
// entries (vta::replay_source): `KeptLoopMemo` declared outside every loop, with room for an
// iteration's words, and `OwnLoopMemo` where the loop is reached, one of them empty; the
// loop's tape is the other (loop_memo()). (Without the shortcuts, at -Os, each entry has a
// memo of its own, as sibling loops' memos share their stack.)
struct NoLoopMemo {};
template <std::size_t Keys, std::size_t Calls, std::size_t Regions>
using KeptLoopMemo =
    std::conditional_t<kTimeShortcuts, LoopMemo<Keys, Calls, Regions, Calls>, NoLoopMemo>;
template <std::size_t Keys, std::size_t Calls, std::size_t Regions>
using OwnLoopMemo = std::conditional_t<kTimeShortcuts, NoLoopMemo, LoopMemo<Keys, Calls, Regions>>;
template <class Own, class Kept>
constexpr LoopTape& loop_memo(Own& own, Kept& kept) {
  if constexpr (kTimeShortcuts)
    return kept;
  else
    return own;
}

// (a time shortcut) What a generated replay keeps of a tiled loop: one whose iterations (tiles)
// hold more than 32 calls, whose body reads its variable in DRAM offsets alone, each affine in
// it with a step free of the loops inside (vta::replay_source: the integer softmax's tiles of a
// decode step, 1,700 instructions each; a GEMM's blocks of rows):
//
//   dlavm::runtime::TileMemo<0, 96, 24> tm{};  // keys, transfers of a tile, regions
//   for (std::int64_t i0 = 0, i0_end = i0 + n; i0 < i0_end; ++i0) {
//     if (r.tile_begin(tm, tm.same(), i0 + 1 < i0_end)) {
//       ... the body's calls, its kernels memoized, and its inner loops too where its
//       iterations hold more calls than a LoopMemo does ...
//     }
//     if (!r.tile_end(tm)) return false;
//   }
//
// The calls write the first tile. A tile after one with the same keys is recorded: its start
// state and end state (the regions', O(regions)), the pushes it set on instructions before it,
// and, compared word by word with the tile before it, the transfers whose DRAM address moved
// and by how much (every other bit the same but the dependency flags, or it is not recorded).
// Where the code gives each transfer's step (tile_begin's `steps`; vta::replay_source does),
// the first tile is recorded too, and its transfers, noted as they are written (a load's or
// store's word that moves data: a pop's no-op moves none), are given their steps in order:
//
//     if (r.tile_begin(tm, tm.same(), i0 + 1 < i0_end, true)) { ... }
//     if (tm.recording) { tm.step(d0 + d1); ... }  // each transfer's, as the body writes them
//     if (!r.tile_end(tm)) return false;
//
// A later tile with the same keys, after the recorded one or its copies, starting in a state
// that matches the recorded one's up to a renaming (DepTracker::match, as a loop iteration's),
// is the words of the tile before it with those addresses moved once more, the recorded pushes
// set on the renamed instructions, and the regions' states as the recorded tile left them,
// moved (DepTracker::copy_tile): no call of its body runs, nor its inner loops' or kernels'
// memos, which hold what they held (each a cache of words the calls write alike). A recorded
// tile that loaded micro-ops is not copied, but with the steps given (the loads, at most
// TileTape::kLoads and without a token, are passed over). A later tile may also start
// otherwise where a copy can make up for it (Replay::starts_alike: readers before it that it
// waits for). A tile right after a copy, every tile from the recorded one on having begun where
// the one before ended, starts as that copy did, one tile on (steady: the same waits, the
// renaming read from the slots). Without the time shortcuts every tile runs its calls, and a
// TileMemo holds nothing, but where a loop memo would hold a tile's calls: it is one then
// (TiledLoopMemo).
// A tile is recorded only where another follows, at most kMaxLoopRecords times, and where the
// regions fit the memo. A TileMemo is declared where its loop is reached, new at each entry
// (its tiles are copied from the tile before in the same entry). Of LoopTape it uses the keys,
// the start state, renaming and push log of the recorded tile, and its place (recorded, from,
// start, length, pushed, pairs); not the calls, the snapshot of an entry, enter() or reset().
struct TileTape : LoopTape {
  RegionState* end_states = nullptr;  // the regions' states at the recorded tile's end
  std::uint32_t* moved_at = nullptr;  // the transfers whose DRAM address moves from a tile to
  std::int64_t* moved_by = nullptr;   // the next: where in the tile, and by how much
  std::size_t move_capacity = 0, moves = 0;
  // the copies made since the recorded tile, and how many fit: the n-th after it moves each
  // address n steps, which must stay in its field (Replay::copy_tile)
  std::int64_t copies = 0, copies_fit = 0;
  // (while a tile is recorded with the steps given) its transfers as they are written, in
  // moved_at (where in it, before the micro-op loads are passed over: Replay::transferred),
  // and their count, past the capacity too
  std::size_t logged = 0;
  std::int64_t previous = 0;  // the first instruction of the tile before the one begun last
  bool begun = false;         // a tile began since the memo was declared
  bool recording = false;     // the tile begun last is being recorded
  bool copying = false;       // or was copied
  // (a copy's) the tiles from the recorded one to it followed each other with nothing written
  // between (each began where the one before ended)
  bool chained = false;
  bool given = false;  // the code gives the recorded tile's steps (step())
  // the module of its last instruction and the pops pending where the recorded tile ended
  Queue last_end = Queue::Compute;
  unsigned pops_end = 0;
  // the micro-op loads the recorded tile wrote (the first to enter its kernels, with the steps
  // given): where in it; its copies pass them over, as their calls would load none
  static constexpr std::size_t kLoads = 4;
  std::uint32_t load_at[kLoads] = {};
  std::size_t loads = 0;
  // (its log's first_writes: the recorded tile's first write of each region, its index times
  // 4 plus its queue, or -1, DepTracker::log_tile_pushes) once it ended, the first write of
  // memory each region holds (the earliest of those of the regions it overlaps:
  // Replay::first_write_meeting)
  std::int64_t* first_meets = nullptr;
  // (a copy's) the regions whose readers before it another module waits for, where nothing
  // waited at the recorded tile's start, and the pairs of modules whose pops it adds at their
  // first writes (bit 3 m + q - 1: queue q's waits for queue m + 1's; Replay::starts_alike);
  // those of the last copy, whose pops the next one, copying its words, clears before it adds
  // its own (take_waits)
  std::uint64_t waits = 0, waits_added = 0;
  unsigned wait_pairs = 0, pairs_added = 0;
  // (the recorded tile's pops, read once: Replay::popped_before) its words before `scanned`
  // read (in the copies' numbering), and the first of them each module popped a token with
  // from each other (bit 3 m + q - 1 of `popped`, m and q as in wait_pairs; `first_pop`, the
  // same index: the instruction), or none
  std::int64_t scanned = 0;
  std::int64_t first_pop[9] = {};
  unsigned popped = 0;

  // (the generated replay's, after the body of a tile being recorded, where tile_begin was
  // told it gives them) The DRAM step from this tile to the next of each transfer the tile
  // wrote, in the order written: each transfer's offset's coefficient of the tile's variable.
  constexpr void step(std::int64_t by) {
    if (moves < move_capacity) moved_by[moves] = by;
    ++moves;  // (counted past the capacity: the tile is then not copied)
  }
};
template <std::size_t Keys, std::size_t Transfers, std::size_t Regions>
struct TileMemoArrays : TileTape, TapeArrays<Keys, Regions> {
  constexpr TileMemoArrays() {
    this->attach(*this);
    log.edits = edit_array;
    log.capacity = 4 * Regions;
    end_states = end_array;
    moved_at = at_array;
    moved_by = by_array;
    move_capacity = Transfers;
    log.first_writes = first_array;
    first_meets = meet_array;
  }
  TileMemoArrays(const TileMemoArrays&) = delete;
  TileMemoArrays& operator=(const TileMemoArrays&) = delete;

  // the pushes a tile sets before its start: at most one a slot its accesses wait on
  // (unset, as the arrays below: the pushes are written as they are logged, the end states as
  // the recorded tile ends, the moves as they are measured or given, the first writes as a
  // tile is recorded, each before it is read)
  PushEdit edit_array[(4 * Regions) + 1];
  RegionState end_array[Regions + 1];
  std::uint32_t at_array[Transfers + 1];
  std::int64_t by_array[Transfers + 1];
  std::int64_t first_array[Regions + 1];
  std::int64_t meet_array[Regions + 1];
};
// Without the time shortcuts (at -Os) a tiled loop whose iterations a loop memo holds (`Calls`
// of them; vta::replay_source gives 0 where they are more) is memoized as a loop: its tiles
// are iterations (Replay::tile_begin, tile_end), recorded and copied as any memoized loop's
// (no step is given: the second tile is recorded, and measures them).
template <std::size_t Keys, std::size_t Calls, std::size_t Regions>
struct TiledLoopMemo : LoopMemo<Keys, Calls, Regions> {
  static constexpr bool recording = false;
  constexpr void step(std::int64_t /*by*/) {}
};
template <std::size_t Keys, std::size_t Transfers, std::size_t Regions, std::size_t Calls = 0>
using TileMemo = std::conditional_t<
    kTimeShortcuts, TileMemoArrays<Keys, Transfers, Regions>,
    std::conditional_t<Calls == 0, TileTape, TiledLoopMemo<Keys, Calls, Regions>>>;

template <class Storage, class Layout = DynamicLayout>
class Replay {
 public:
  constexpr Replay(StreamWriter<Storage, Layout>& writer, std::uint32_t uop_depth,
                   const ElemBytes& elem, const SramRegion* regions, RegionState* states,
                   std::size_t region_count, const std::uint64_t* param_phys, OpBuffer ops)
      : w_(writer),
        uop_depth_(uop_depth),
        deps_(regions, states, region_count),
        elem_(elem),
        phys_(param_phys),
        ops_(ops) {
    // element sizes are powers of two on VTA: a shift instead of a 64-bit division per transfer
    for (std::size_t m = 0; m < static_cast<std::size_t>(kMemIdCount); ++m) {
      const std::uint64_t b = elem_.of[m];
      if (b == 0 || (b & (b - 1)) != 0) continue;
      int shift = 0;
      while ((std::uint64_t{1} << shift) != b) ++shift;
      elem_shift_[m] = shift;
    }
  }

  constexpr bool ok() const { return w_.ok(); }
  constexpr StreamWriter<Storage, Layout>& writer() { return w_; }
  constexpr const DepTracker& deps() const { return deps_; }
  // The loop iterations written by copying (LoopMemo), and whether iterations may be copied
  // (on by default; off, every iteration is written by its calls, to compare with).
  constexpr std::size_t copied() const { return copied_; }
  constexpr std::size_t copied_whole() const { return copied_whole_; }  // of them, without calls
  // of them, tiles (TileMemo; a template, as the tile functions: no code in a firmware without)
  template <class = void>
  constexpr std::size_t copied_tiles() const {
    return shortcut_count(copied_tiles_);
  }
  // (a time shortcut) Of the loop iterations that began armed, those whose start was matched to
  // the recorded one's (DepTracker::match), not taken as steady: the first copy of each
  // recording, and a part's copy after calls that did not repeat (iteration_begin's `apart`).
  template <class = void>
  constexpr std::size_t matched() const {
    return shortcut_count(matched_);
  }
  // The kernel memo entries replaced (KernelMemo::enter): each a kernel encoded again.
  constexpr std::uint64_t replaced() const { return memo_replaced_; }
  constexpr void copy_loops(bool on) { copy_loops_ = on; }
  // After a generated replay failed (false, its error the writer's): the loop and tile memos
  // it was recording or copying lived in its frame, which is gone; the Replay forgets them, so
  // that once the caller cleared the writer's error it goes on writing calls as they come
  // (vta::replay_source's function calls it; false, as the replay returned). (A template: a
  // firmware with no generated replay compiles none of it.)
  template <class = void>
  constexpr bool abandon() {
    mode_ = Mode::Off;
    tape_ = nullptr;
    deps_.log_pushes(nullptr);
    if constexpr (kTimeShortcuts) {
      tile_recorded_ = nullptr;
      deps_.log_tile_pushes(nullptr, 0);
    }
    return false;
  }

  constexpr bool load(MemId mem, std::uint32_t region, std::int64_t sram, std::size_t param,
                      std::int64_t offset, std::int64_t y, std::int64_t x, std::int64_t stride,
                      std::int64_t y_pad_0, std::int64_t y_pad_1, std::int64_t x_pad_0,
                      std::int64_t x_pad_1) {
    const Queue q = mem == MemId::Inp || mem == MemId::Wgt ? Queue::Load : Queue::Compute;
    const RegionAccess access{region, true};
    std::int64_t dram = 0;
    // a block of padding rows only reads no DRAM: its address is the tensor's start
    if (mode_ == Mode::Copy)
      return element(Opcode::Load, param, mem, dram) &&
             copy(true, dram + (y > 0 ? offset : 0), q, &access, 1) && transferred();
    return sizes(Opcode::Load, mem, y, x) && element(Opcode::Load, param, mem, dram) &&
           deps_.before(w_, q, &access, 1) &&
           w_.load(mem, sram, dram + (y > 0 ? offset : 0), y, x, stride, y_pad_0, y_pad_1, x_pad_0,
                   x_pad_1) &&
           after(q, &access, 1) && transferred();
  }

  constexpr bool store(std::uint32_t region, std::int64_t sram, std::size_t param,
                       std::int64_t offset, std::int64_t y, std::int64_t x, std::int64_t stride) {
    const RegionAccess access{region, false};
    std::int64_t dram = 0;
    if (mode_ == Mode::Copy)
      return element(Opcode::Store, param, MemId::Out, dram) &&
             copy(true, dram + offset, Queue::Store, &access, 1) && transferred();
    return sizes(Opcode::Store, MemId::Out, y, x) &&
           element(Opcode::Store, param, MemId::Out, dram) &&
           deps_.before(w_, Queue::Store, &access, 1) &&
           w_.store(sram, dram + offset, y, x, stride) && after(Queue::Store, &access, 1) &&
           transferred();
  }

  constexpr void kernel_begin() {
    nloops_ = 0;
    nops_ = 0;
    empty_ = false;
  }
  constexpr void loop_begin(std::int64_t extent, std::int64_t dst, std::int64_t src,
                            std::int64_t wgt) {
    if (empty_) return;
    if (extent < 1) {
      empty_ = true;  // no iterations: the kernel writes nothing
      return;
    }
    if (nloops_ == 2) {
      InsnFields none;
      w_.fail(Status::LoopShape, none, Field::count, 3);
      return;
    }
    loops_[nloops_++] = {extent, dst, src, wgt};
  }
  constexpr void push(std::int64_t dst, std::int64_t src, std::int64_t wgt) {
    if (empty_) return;
    if (nops_ < ops_.capacity) ops_.data[nops_] = {dst, src, wgt};
    ++nops_;  // counted past the capacity, so that a kernel too large names its size
  }

  // A GEMM kernel (acc += inp x wgt), or with reset (acc = 0, inp and wgt unused).
  constexpr bool gemm(bool reset, std::uint32_t acc, std::uint32_t inp, std::uint32_t wgt) {
    if (empty_ || nops_ == 0) return ok();
    const RegionAccess accesses[] = {{acc, true}, {inp, false}, {wgt, false}};
    const std::size_t n = reset ? 1 : 3;
    if (mode_ == Mode::Copy) return diverged(Opcode::Gemm);
    return fits(Opcode::Gemm) && deps_.before(w_, Queue::Compute, accesses, n) &&
           w_.gemm(loops_, nloops_, ops_.data, nops_, reset) && after(Queue::Compute, accesses, n);
  }

  // A kernel site whose loops and micro-ops are constants, by the image vta::replay_source
  // encoded (runtime::KernelImage), with alu()'s and gemm()'s accesses.
  template <class Image>
  constexpr bool alu_image(const Image& k, std::uint32_t dst, std::uint32_t src) {
    const RegionAccess accesses[] = {{dst, true}, {src, false}};
    return image(k, accesses, 2);
  }
  template <class Image>
  constexpr bool gemm_image(const Image& k, bool reset, std::uint32_t acc, std::uint32_t inp,
                            std::uint32_t wgt) {
    const RegionAccess accesses[] = {{acc, true}, {inp, false}, {wgt, false}};
    return image(k, accesses, reset ? 1 : 3);
  }

  // A kernel written before in this stream (its writer's last_kernel() then), again, with
  // the accesses it made then (GEMM: acc written, inp and wgt read; reset: acc; ALU: dst
  // written, src read): what a replay that enters a kernel with the same values writes,
  // without collecting and encoding its micro-ops. (Inlined: left to GCC, it was out of line
  // once more loops were tiled, and the steps that enter kernels again ran 2% to 5% slower.)
  DLAVM_RUNTIME_INLINE constexpr bool again(const WrittenKernel& k, const RegionAccess* accesses,
                                            std::size_t n) {
    if (mode_ == Mode::Copy) return copy(false, 0, Queue::Compute, accesses, n);
    return deps_.before(w_, Queue::Compute, accesses, n) && w_.again(k) &&
           after(Queue::Compute, accesses, n);
  }

  // A memoized GEMM kernel site entered with the values it was last entered with.
  template <std::size_t K, std::size_t E>
  constexpr bool gemm_again(const KernelMemo<K, E>& m, bool reset, std::uint32_t acc,
                            std::uint32_t inp, std::uint32_t wgt) {
    if (!m.wrote()) return ok();
    const RegionAccess accesses[] = {{acc, true}, {inp, false}, {wgt, false}};
    return again(m.written(), accesses, reset ? 1 : 3);
  }
  // A memoized ALU kernel site entered with the values it was last entered with.
  template <std::size_t K, std::size_t E>
  constexpr bool alu_again(const KernelMemo<K, E>& m, std::uint32_t dst, std::uint32_t src) {
    if (!m.wrote()) return ok();
    const RegionAccess accesses[] = {{dst, true}, {src, false}};
    return again(m.written(), accesses, 2);
  }
  // A kernel memo's entry replaced (KernelMemo::enter); a loop iteration after one is not
  // copied (iteration_begin).
  constexpr void memo_replaced() { ++memo_replaced_; }

  // An ALU kernel: dst = op(dst, src), or op(dst, imm).
  constexpr bool alu(AluOp op, bool use_imm, std::int64_t imm, std::uint32_t dst,
                     std::uint32_t src) {
    if (empty_ || nops_ == 0) return ok();
    const RegionAccess accesses[] = {{dst, true}, {src, false}};
    if (mode_ == Mode::Copy) return diverged(Opcode::Alu);
    return fits(Opcode::Alu) && deps_.before(w_, Queue::Compute, accesses, 2) &&
           w_.alu(loops_, nloops_, ops_.data, nops_, op, use_imm, imm) &&
           after(Queue::Compute, accesses, 2);
  }

  // A memoized loop's iteration (LoopMemo): copied when its keys are the last iteration's
  // (`same`), no kernel memo replaced an entry in that one (memo_replaced), and it
  // starts as the recorded one did; else recorded when another follows
  // (`more`); else written by its calls alone. Whether the body must run: not when the
  // iteration was copied whole, which an `affine` loop's is (its DRAM offsets move by the
  // same step every iteration) once the steps are measured (by a copy, or as the iteration
  // was recorded: steps_from_earlier), unless a word would not fit
  // (then the body's calls copy it); then, or when the copy failed, iteration_end only
  // returns ok().
  // `apart`: the tape memoizes a part of a loop's body, other calls written between its
  // iterations (a statement whose calls differ from one iteration to the next: vta.replay_apart
  // in the lowered program). Each copy then matches the dependency state anew (the calls
  // between may leave it otherwise), and none copies words on which a call after the part
  // set a push (those words would carry it twice).
  constexpr bool iteration_begin(LoopTape& t, bool same, bool more, bool affine = false,
                                 bool apart = false) {
    tape_ = &t;
    mode_ = Mode::Off;
    if constexpr (kTimeShortcuts) {
      t.entry = false;
      t.earlier = t.last_start;
      t.last_start = static_cast<std::int64_t>(w_.size());
    }
    // not copied after a kernel memo replaced an entry: the iteration copied might have
    // entered a kernel with it (KernelMemo::enter and the host's replay plan count them)
    same = same && !t.replaced_inside;
    t.replaced = memo_replaced_;
    t.apart = apart;
    if (apart) {
      log_calls_ = true;
      // a copy starts as the one before did (steady) only where the calls since that one
      // began are those between the two before it: the same accesses from a state the same
      // up to renaming leave it so (as a loop's iterations do); else it is matched anew
      const std::uint64_t now = calls_, span = now - t.begun;
      const bool repeats = t.begins >= 2 && span == t.begun - t.begun_before &&
                           now - t.begun_before <= kCallRing && same_calls(t.begun_before, now);
      t.begun_before = t.begun;
      t.begun = now;
      if (t.begins < 2) ++t.begins;
      if (!repeats || w_.resident_epoch() != t.epoch || w_.pending_pops() != t.pops ||
          w_.last_queue() != t.last)
        t.steady = false;
      if (w_.pushed_since(t.ended, t.from, t.from + t.length)) same = false;
    }
    // A loop entered again: its first iteration with the keys of the one before it, where
    // those are the recorded one's, starts as that one did most often (recorded where the
    // keys were those of the one before, too): it copies it, or else records one anew.
    if constexpr (kTimeShortcuts)
      if (t.entering && same) {
        t.entering = false;
        if (copy_loops_ && ok() && t.recorded_keys_same() && starts_as_recorded(t)) {
          t.armed = t.steady = t.entry = true;
          t.start = static_cast<std::int64_t>(w_.size());
          t.cursor = 0;
          t.word = 0;
          mode_ = Mode::Copy;
          return true;
        }
      }
    if (!same) t.armed = t.steady = false;
    if (!same || !ok() || !copy_loops_) return true;
    const auto size = static_cast<std::int64_t>(w_.size());
    // The recorded iteration j started in state S and ended in F(S); a copy matching it
    // started in S' = S renamed and ended in F(S'), F(S) renamed. Once the first copy
    // matched, F(S) = S renamed, so every copy after it starts in S renamed too: its
    // renaming is read from the slots that hold the instructions the recorded one named.
    // (the micro-op residency is the recorded start's while no micro-ops were loaded since)
    // (no copy reads the renaming where the recorded iteration named no instruction before
    // its start: LoopTape::renames)
    if (t.armed && t.steady) {
      if (!kTimeShortcuts || t.renames)
        for (std::size_t i = 0; i < t.map.size; ++i) t.map.to[i] = deps_.slot(t.map.where[i]);
    } else if (t.armed) {
      t.armed = t.steady = starts_as_recorded(t);
      if constexpr (kTimeShortcuts) ++matched_;
    }
    if (t.armed) {
      t.start = size;
      t.cursor = 0;
      t.word = 0;
      if (affine && t.stepped) {
        // (the passing accesses marked at a recorded iteration's first whole copy where
        // another iteration follows, else at its second: marking costs about what a copy
        // saves, and many loops are recorded, few copied whole)
        if constexpr (kTimeShortcuts)
          if (++t.wholes == 2 || (t.wholes == 1 && more)) {
            t.mark_passing(deps_.count() <= kMaskedRegions);
            t.wholes = 2;
          }
        if (copy_whole(t)) return false;
      }
      mode_ = Mode::Copy;
      return true;
    }
    t.armed = t.stepped = t.steady = false;
    if (!more || t.failures >= kMaxLoopRecords || deps_.count() > t.state_capacity) return true;
    record(t, size);
    t.kept = 0;
    t.ncalls = 0;
    t.wholes = 0;
    if constexpr (kTimeShortcuts) {
      t.affine = affine;
      t.noted = calls_;
    }
    deps_.log_pushes(&t.log);
    mode_ = Mode::Record;
    return true;
  }

  constexpr bool iteration_end(LoopTape& t) {
    const Mode mode = mode_;
    mode_ = Mode::Off;
    t.replaced_inside = memo_replaced_ != t.replaced;
    std::int64_t earlier_end = 0;  // (where the iteration before this one ended)
    if constexpr (kTimeShortcuts) {
      earlier_end = t.last_end;
      t.last_end = static_cast<std::int64_t>(w_.size());
    }
    if (mode == Mode::Record) {
      deps_.log_pushes(nullptr);
      if (!ok()) return false;
      const std::int64_t length = recorded(t);
      t.armed = length > 0 && t.ncalls <= t.call_capacity && !t.log.overflow &&
                w_.storage().reloc_count() == t.relocs;
      // (an affine loop's recorded iteration, its keys those of the one before it: the steps
      // measured now, so that the next iteration is copied whole, not by its calls)
      if constexpr (kTimeShortcuts) {
        if (t.armed && t.affine && copy_loops_) t.stepped = steps_from_earlier(t, earlier_end);
        if (t.armed && log_calls_ && calls_ - t.noted == t.ncalls) note_recorded(t);
      }
      t.met = ~std::uint64_t{0};
      if (deps_.count() <= kMaskedRegions) {
        t.met = 0;
        for (std::size_t c = 0; c < t.ncalls && c < t.call_capacity; ++c)
          for (std::size_t a = 0; a < t.calls[c].accesses; ++a)
            t.met |= deps_.states()[t.calls[c].access[a].region].overlaps;
      }
      // (kept where it is an entry's first recording: one after it starts otherwise, past the
      // iterations like it, and the next entry would not find it)
      if constexpr (kTimeShortcuts)
        if (t.keeps && t.armed && t.failures == 1 && !t.replaced_inside &&
            static_cast<std::size_t>(length) <= t.snapshot_capacity) {
          for (std::int64_t k = 0; k < length; ++k)
            t.snapshot[k] = w_.storage().insn(static_cast<std::size_t>(t.start + k));
          for (std::size_t k = 0; k < t.key_capacity; ++k) t.recorded_keys[k] = t.keys[k];
          t.kept = static_cast<std::size_t>(length);
        }
      return ended(t);
    }
    if (mode != Mode::Copy) return ok() && ended(t);
    if (!ok()) return false;
    if (t.cursor != t.ncalls || t.word != t.length) return diverged(Opcode::Finish);
    // (an entry's copy measures no step: it copies an iteration of another entry)
    if constexpr (kTimeShortcuts)
      if (t.entry) {
        t.entry = false;
        return finish_copy(t);
      }
    t.stepped = true;
    return finish_copy(t);
  }

  // (a time shortcut) Right after iteration_end: the iterations after a copied one, while their
  // keys are its own (`same_at(j)`: the memo's equal() of iteration j's keys), copied whole as
  // iteration_begin and iteration_end would copy them one by one: the same words, pushes,
  // regions' states and counts, without a return to the loop's code for each. `i` moves past
  // them. None where the iteration ended was not a copy that the next would copy whole (a tape
  // armed, whose whole copies marked the passing accesses: iteration_begin; not a part's,
  // which vta::replay_source never passes), nor past those whose words and moved addresses
  // fit: the loop's code copies the rest one by one, or its calls write them and fail where
  // they would.
  template <class SameAt>
  constexpr bool iterations_again(LoopTape& t, std::int64_t& i, std::int64_t end,
                                  const SameAt& same_at) {
    if constexpr (kTimeShortcuts) {
      if (!t.armed || t.wholes < 2) return true;
      const std::int64_t fit = copies_fit(t);
      std::int64_t n = 0;
      while (n < fit && i + 1 + n < end && same_at(i + 1 + n)) ++n;
      if (n == 0) return true;
      i += n;
      return copy_again(t, n);
    }
    return true;
  }

 private:
  // (iterations_again) How many copies of the iteration that ended fit: their words, and each
  // transfer's address moved once more per copy. (Templates, as iterations_again, which alone
  // calls them: a firmware without the time shortcuts compiles none of them.)
  template <class = void>
  constexpr std::int64_t copies_fit(const LoopTape& t) {
    const FieldPos dram = w_.layout().pos(Form::Mem, Field::dram_base);
    const std::int64_t limit = field_limit(dram.width);
    std::int64_t fit = static_cast<std::int64_t>(w_.storage().insn_room()) / t.length;
    for (std::size_t k = 0; k < t.ntransfers; ++k) {
      const LoopCall& call = t.calls[t.transfers[k]];
      const auto from = static_cast<std::int64_t>(
          get_field(w_.storage().insn(static_cast<std::size_t>(t.start + call.at)), dram));
      if (call.step != 0) fit = steps_that_fit(from, call.step, limit, fit);
    }
    return fit;
  }
  // (iterations_again) n copies of the iteration that ended, which fit.
  template <class = void>
  constexpr bool copy_again(LoopTape& t, std::int64_t n) {
    const FieldPos dram = w_.layout().pos(Form::Mem, Field::dram_base);
    const unsigned half = dram.offset / 64U, shift = dram.offset % 64U;  // (as copy_tile's)
    const std::int64_t length = t.length, first = t.start;               // (the iteration copied)
    // the words: the last iteration's as the next would copy them (the pushes its own next
    // sets on it come later), n times over
    for (std::int64_t copies = 0; copies < n;) {
      const std::int64_t more = copies + 1 < n - copies ? copies + 1 : n - copies;
      w_.storage().repeat_insns(static_cast<std::size_t>(first),
                                static_cast<std::size_t>(more * length));
      copies += more;
    }
    // then each iteration as iteration_begin, copy_whole and iteration_end go on, but for the
    // regions' states, which the calls of the first and the last alone track. Every iteration
    // makes the calls the one before made, one iteration further on, so that each slot its
    // renaming reads (t.map.where) holds an instruction of the iteration before, moved by an
    // iteration each time (`moving`), or the same one: the first shows which (the one before
    // it, copied whole, made the same calls; where a slot did neither, every iteration
    // tracks). The last one's calls set every slot the calls set, as all of them would.
    std::uint64_t moving = 0;
    bool skip = n > 2 && t.map.size <= 64;
    for (std::int64_t k = 1; k <= n; ++k) {
      const std::int64_t start = first + (k * length);
      if (t.renames) {
        if (k == 1 || !skip) {
          for (std::size_t m = 0; m < t.map.size; ++m) t.map.to[m] = deps_.slot(t.map.where[m]);
        } else {
          for (std::uint64_t bits = moving; bits != 0; bits &= bits - 1)
            t.map.to[lowest_bit(bits)] += length;
        }
      }
      t.start = start;
      const bool track = !skip || k == 1 || k == n;
      for (std::size_t v = 0; v < t.nvisited; ++v) {
        const LoopCall& call = t.calls[t.visited[v]];
        if (call.transfer) {
          // the copied address moved k steps, which stay in the field (copies_fit), added to
          // the half of the word that holds it, as copy_tile adds a tile's
          w_.storage().insn(static_cast<std::size_t>(start + call.at)).word[half] +=
              static_cast<std::uint64_t>(k * call.step) << shift;
          if (tile_recorded_ != nullptr) note_transfer(start + call.at);
        }
        if (track)
          deps_.after(call.queue, start + call.at, call.access, call.accesses, call.passing);
      }
      if (k == 1 && skip && t.renames)
        for (std::size_t m = 0; m < t.map.size; ++m) {
          const std::int64_t now = deps_.slot(t.map.where[m]);
          if (now == t.map.to[m] + length)
            moving |= std::uint64_t{1} << m;
          else if (now != t.map.to[m])
            skip = false;
        }
      if (log_calls_) note_call(static_cast<std::uint64_t>(t.recorded) << 2);
      if (!finish_copy(t)) return false;
    }
    // what the last iteration_begin and iteration_end leave: where the last two began, where
    // the last ended, its words and calls all copied, and the counts
    t.earlier = t.start - length;
    t.last_start = t.start;
    t.last_end = t.start + length;
    t.cursor = t.ncalls;
    t.word = length;
    t.wholes += static_cast<std::uint32_t>(n);
    copied_whole_ += static_cast<std::size_t>(n);
    return true;
  }

 public:
  // A tiled loop's tile (TileMemo): copied whole where its keys are the last tile's (`same`),
  // that tile was the recorded one or a copy of it, and it starts as the recorded one did (or
  // alike: starts_alike); then its body need not run (false). Else its calls write it (true),
  // and it is recorded where another follows (`more`) and, unless the code gives the steps of
  // its transfers (`steps`), the tile before it had the same keys. Without the time shortcuts
  // every tile runs its calls, or is a memoized loop's iteration (TiledLoopMemo). (Templates: a
  // firmware with no tiled loop compiles none of it.)
  template <class Tape>
  constexpr bool tile_begin(Tape& tape, bool same, bool more, bool steps = false) {
    if constexpr (!kTimeShortcuts) {
      if constexpr (std::is_base_of_v<TileTape, Tape>)
        return true;
      else
        return iteration_begin(tape, same, more, /*affine=*/true);  // (as every tiled loop)
    } else {
      TileTape& t = tape;
      // (inside a loop memo's recorded or copied iteration, which must see every call, the
      // tiles run their calls: vta::replay_source tiles no loop there)
      if (mode_ != Mode::Off) {
        t.armed = t.recording = t.copying = false;
        return true;
      }
      const auto size = static_cast<std::int64_t>(w_.size());
      const bool after = t.begun;
      // (steady: the tiles from the recorded one to this one, the last of them copied, follow
      // each other with nothing written between, so that this one starts as the copy before it
      // did, its instructions one tile further on: it needs the same waits, and the renaming
      // is read from the slots that hold the instructions the recorded tile named, as a loop's
      // steady iterations read theirs)
      // (where the tile before ended: the words a copy reads)
      const std::int64_t previous_end =
          t.from + t.length + static_cast<std::int64_t>(source_loads(t));
      const bool was_copy = t.copying;
      const bool adjacent = after && size == previous_end;
      const bool steady = was_copy && t.chained && adjacent && w_.resident_epoch() == t.epoch;
      t.previous = t.start;
      t.start = size;
      t.begun = true;
      t.recording = t.copying = false;
      // (not where a call since the tile before set a push on its words, which a copy would
      // carry)
      if (same && t.armed && copy_loops_ && ok() &&
          !w_.pushed_since(t.ended, t.from, previous_end) &&
          (steady ? renamed(t) : starts_alike(t)) && copy_tile(t)) {
        t.copying = true;
        t.chained = adjacent && (!was_copy || t.chained);
        return false;
      }
      t.armed = false;
      // (with steps given, the first tile too: no tile before it to compare with)
      // (nor inside a tile being recorded with the steps given, which notes the transfers its
      // inner tiles' calls write: a copy of one would write them unnoted)
      if ((!steps && (!same || !after)) || !more || !copy_loops_ || !ok() ||
          t.failures >= kMaxLoopRecords || deps_.count() > t.state_capacity ||
          tile_recorded_ != nullptr)
        return true;
      record(t, size);
      for (std::size_t r = 0; r < deps_.count(); ++r) t.log.first_writes[r] = -1;
      deps_.log_tile_pushes(&t.log, size);
      t.recording = true;
      t.given = steps;
      t.logged = 0;
      if (steps) tile_recorded_ = &t;
      t.moves = 0;
      t.loads = 0;
      t.waits_added = t.pairs_added = 0;
      return true;
    }
  }
  // A tile's end: a recorded one is kept where its words are the tile before it's but for
  // transfers' DRAM addresses and no micro-ops were loaded (measure_moves), or it wrote as many
  // transfers as the code gave steps and its micro-op loads hold no token (place_steps,
  // pass_loads), and where its log held every push it set before its start.
  template <class Tape>
  constexpr bool tile_end(Tape& tape) {
    if constexpr (!kTimeShortcuts) {
      if constexpr (std::is_base_of_v<TileTape, Tape>)
        return ok();
      else
        return iteration_end(tape);
    } else {
      TileTape& t = tape;
      if (!t.recording) return ok();
      t.recording = false;
      deps_.log_tile_pushes(nullptr, 0);
      tile_recorded_ = nullptr;
      if (!ok()) return false;
      const std::int64_t length = recorded(t);
      t.armed = length > 0 && !t.log.overflow && w_.resident_epoch() == t.epoch &&
                (t.given ? pass_loads(t) && place_steps(t)
                         : w_.storage().reloc_count() == t.relocs && measure_moves(t));
      if (!t.armed) return true;
      ended(t);
      t.last_end = w_.last_queue();
      t.pops_end = w_.pending_pops();
      // the regions its calls met: those it set a slot of (DepTracker::copy_tile), and those
      // they overlap
      t.met = ~std::uint64_t{0};
      if (deps_.count() <= kMaskedRegions) t.met = 0;
      for (std::size_t r = 0; r < deps_.count(); ++r) {
        RegionState& e = t.end_states[r] = deps_.states()[r];
        if (deps_.count() <= kMaskedRegions &&
            (e.writer >= t.recorded || e.reader[0] >= t.recorded || e.reader[1] >= t.recorded ||
             e.reader[2] >= t.recorded))
          t.met |= e.overlaps;
        // (its instructions as its copies hold them: the micro-op loads passed over)
        e.writer = compact(t, e.writer);
        for (auto& x : e.reader) x = compact(t, x);
        if (const std::int64_t f = t.log.first_writes[r]; f >= 0)
          t.log.first_writes[r] = (compact(t, f >> 2) << 2) | (f & 3);
      }
      for (auto& x : t.pushed) x = compact(t, x);
      t.length -= static_cast<std::int64_t>(t.loads);
      t.scanned = t.recorded;  // (its pops not read yet: popped_before)
      t.popped = 0;
      // each moved address's, and how many copies keep every one in its field
      const FieldPos dram = w_.layout().pos(Form::Mem, Field::dram_base);
      const std::int64_t limit = field_limit(dram.width);
      t.copies = 0;
      t.copies_fit = limit;
      for (std::size_t k = 0; k < t.moves; ++k) {
        const std::int64_t from = static_cast<std::int64_t>(
            get_field(w_.storage().insn(static_cast<std::size_t>(source(t, t.moved_at[k]))), dram));
        // (not 0: a move)
        t.copies_fit = steps_that_fit(from, t.moved_by[k], limit, t.copies_fit);
      }
      // (a copy that waits reads them: at most kMaskedRegions regions, starts_alike)
      for (std::size_t r = 0; r < deps_.count() && deps_.count() <= kMaskedRegions; ++r) {
        t.first_meets[r] = -1;
        for (std::uint64_t bits = deps_.states()[r].overlaps; bits != 0; bits &= bits - 1) {
          const std::int64_t at = t.log.first_writes[lowest_bit(bits)];
          if (at >= 0 && (t.first_meets[r] < 0 || at < t.first_meets[r])) t.first_meets[r] = at;
        }
      }
      return true;
    }
  }

 private:
  enum class Mode : std::uint8_t { Off, Record, Copy };
  // the iterations a loop records at most (each copies the regions' states)
  static constexpr int kMaxLoopRecords = 3;

  // An iteration (or tile) recorded from its start, instruction `size`: the regions' states,
  // the last pushes toward each pair, the pops pending, the last module, the micro-op
  // residency, and the pushes its calls set go to its log (the caller's to hook up).
  template <class Tape>
  DLAVM_RUNTIME_PART constexpr void record(Tape& t, std::int64_t size) {
    ++t.failures;
    for (std::size_t r = 0; r < deps_.count(); ++r) t.states[r] = deps_.states()[r];
    for (std::size_t p = 0; p < DepTracker::kPairs; ++p) t.covered[p] = deps_.covered(p);
    t.pops = w_.pending_pops();
    t.last = w_.last_queue();
    t.relocs = w_.storage().reloc_count();
    t.epoch = w_.resident_epoch();
    t.log.size = 0;
    t.log.overflow = false;
    t.start = size;
  }
  // Its end: the last pushes toward each pair, where it starts and how long it is (returned),
  // which pairs it set a push toward and whether it named an instruction before its start.
  template <class Tape>
  DLAVM_RUNTIME_PART constexpr std::int64_t recorded(Tape& t) {
    const std::int64_t length = static_cast<std::int64_t>(w_.size()) - t.start;
    for (std::size_t p = 0; p < DepTracker::kPairs; ++p) t.pushed[p] = deps_.covered(p);
    t.recorded = t.from = t.start;
    t.length = length;
    if constexpr (kTimeShortcuts) {
      t.pairs = 0;
      t.renames = false;
      for (std::size_t p = 0; p < DepTracker::kPairs; ++p)
        if (t.pushed[p] != t.covered[p]) {
          t.pairs = static_cast<std::uint16_t>(t.pairs | (1U << p));
          t.renames = t.renames || t.pushed[p] < t.recorded;
        }
      for (std::size_t e = 0; e < t.log.size; ++e)
        t.renames = t.renames || t.log.edits[e].at < t.recorded;
    }
    return length;
  }

  // Whether the iteration begun starts as the recorded one did, up to the renaming match()
  // finds (t.map): the same pops pending, last module and micro-op residency, and the hazards
  // of the regions its calls meet.
  constexpr bool starts_as_recorded(LoopTape& t) const {
    return w_.pending_pops() == t.pops && w_.last_queue() == t.last &&
           w_.resident_epoch() == t.epoch && deps_.match(t.states, t.covered, t.map, t.met);
  }
  // A copy's end: the pushes the recorded iteration set before its start, on the renamed
  // instructions (those inside it came with its words), and the pushes set since then.
  constexpr bool finish_copy(LoopTape& t) {
    for (std::size_t e = 0; e < t.log.size; ++e) {
      std::int64_t at = 0;
      if (t.log.edits[e].at >= t.recorded) continue;
      if (!rename(t, t.log.edits[e].at, at)) return diverged(Opcode::Finish);
      if (!w_.set_push(static_cast<std::size_t>(at), t.log.edits[e].to)) return false;
      // (a tile being recorded logs it too, at the copy's end: the stream's, but where
      // iterations_again copied the words of those after it first)
      if constexpr (kTimeShortcuts) deps_.note_tile_push(at, t.log.edits[e].to, t.start + t.length);
    }
    // the last push toward each pair the recorded iteration set one toward
    const auto pushed = [&](std::size_t p) {
      std::int64_t at = 0;
      if (!rename(t, t.pushed[p], at)) return diverged(Opcode::Finish);
      deps_.set_covered(p, at);
      return true;
    };
    if constexpr (kTimeShortcuts) {
      for (unsigned bits = t.pairs; bits != 0; bits &= bits - 1U)  // (LoopTape::pairs)
        if (!pushed(static_cast<std::size_t>(lowest_bit(bits)))) return false;
    } else {
      for (std::size_t p = 0; p < DepTracker::kPairs; ++p)
        if (t.pushed[p] != t.covered[p] && !pushed(p)) return false;
    }
    t.from = t.start;
    ++copied_;
    return ended(t);
  }
  // An iteration's end: the pushes set so far, after which a later call may set one on its
  // words (`apart`).
  constexpr bool ended(LoopTape& t) {
    t.ended = w_.pushes();
    return true;
  }

  // A whole iteration copied without its calls: the words of the iteration before, each
  // transfer's DRAM address moved by its step, and the calls' accesses tracked. False, nothing
  // written, where a moved address or the words would not fit: the calls then copy their words
  // one by one (Mode::Copy) and fail where they would have.
  constexpr bool copy_whole(LoopTape& t) {
    const FieldPos dram = w_.layout().pos(Form::Mem, Field::dram_base);
    const auto moved = [&](const LoopCall& call, std::int64_t base) {
      const InsnWord& word = w_.storage().insn(static_cast<std::size_t>(base + call.at));
      return static_cast<std::int64_t>(get_field(word, dram)) + call.step;
    };
    // (once the passing accesses are marked, the calls mark_passing listed alone:
    // LoopTape::visited, LoopTape::transfers)
    // (a tile being recorded notes each region's first write, DepTracker::log_tile_pushes: an
    // iteration copied whole writes none first, its calls those of its loop's first iteration,
    // which ran them, recorded or copied)
    const bool listed = kTimeShortcuts && t.wholes >= 2;  // (marked: iteration_begin)
    const std::size_t visits = listed ? t.nvisited : t.ncalls;
    const auto visit = [&](std::size_t k) -> const LoopCall& {
      return t.calls[listed ? t.visited[k] : k];
    };
    // (the bound of StreamWriter::repeat's check, from the layout: a writer member for it
    // cost 26 bytes of the runtime's ARM text, which is at its budget)
    const auto fits = [&](const LoopCall& call) {
      const std::int64_t to = moved(call, t.from);
      return to >= 0 && to <= field_limit(dram.width);
    };
    if (listed) {
      for (std::size_t k = 0; k < t.ntransfers; ++k)  // (LoopTape::transfers)
        if (!fits(t.calls[t.transfers[k]])) return false;
    } else {
      for (std::size_t k = 0; k < t.ncalls; ++k)
        if (t.calls[k].transfer && !fits(t.calls[k])) return false;
    }
    if (!w_.storage().repeat_insns(static_cast<std::size_t>(t.from),
                                   static_cast<std::size_t>(t.length)))
      return false;
    for (std::size_t k = 0; k < visits; ++k) {
      const LoopCall& call = visit(k);
      if (call.transfer) {
        set_field(w_.storage().insn(static_cast<std::size_t>(t.start + call.at)), dram,
                  static_cast<std::uint64_t>(moved(call, t.start)));
        if constexpr (kTimeShortcuts)
          if (tile_recorded_ != nullptr) note_transfer(t.start + call.at);
      }
      if constexpr (kTimeShortcuts)
        deps_.after(call.queue, t.start + call.at, call.access, call.accesses, call.passing);
      else
        deps_.after(call.queue, t.start + call.at, call.access, call.accesses);
    }
    // the calls' accesses as one ring word: the recorded iteration's first instruction, which
    // names its calls (a stream's instructions are never rewritten, and two tapes' recorded
    // iterations never start at the same one), module bits 0 (no call's)
    if (log_calls_) note_call(static_cast<std::uint64_t>(t.recorded) << 2);
    t.cursor = t.ncalls;
    t.word = t.length;
    ++copied_whole_;
    finish_copy(t);  // (its error, if any, is the writer's: iteration_end returns it)
    return true;
  }

  // The words of the tape's recorded run, [t.start, t.start + t.length), against those of an
  // earlier run of the same calls, [from, end), word by word, that run's micro-op loads (the
  // relocated words: the first to enter its kernels) passed over: `word(k, a, b, kind)` for
  // each, kind 0 where they are the same but for the dependency flags (which each run's start
  // sets), 1 where they also differ in a Mem-form word's DRAM address alone, 2 otherwise;
  // false where it returns false or the runs' lengths differ.
  template <class Tape, class Word>
  constexpr bool compare_runs(const Tape& t, std::int64_t from, std::int64_t end, Word&& word) {
    const IsaLayout& layout = w_.layout();
    const FieldPos op = layout.pos(Form::Mem, Field::opcode);
    const FieldPos dram = layout.pos(Form::Mem, Field::dram_base);
    InsnWord flags{}, address{};  // the bits the words may differ in
    for (const Field flag :       // (at the same place in every form: kCommonFields)
         {Field::pop_prev_dep, Field::pop_next_dep, Field::push_prev_dep, Field::push_next_dep})
      set_field(flags, layout.pos(Form::Mem, flag), 1);
    set_field(address, dram, low_mask(dram.width));
    const std::uint32_t* relocs = w_.storage().relocs();
    std::size_t reloc = t.relocs;  // (the first the earlier run wrote)
    while (reloc > 0 && relocs[reloc - 1] >= from) --reloc;
    std::int64_t before = from;
    // (the loads are the earlier run's alone: those after its end, another call's)
    const auto pass_loads = [&] {
      for (; reloc < t.relocs && before < end && relocs[reloc] == before; ++reloc) ++before;
    };
    for (std::int64_t k = 0; k < t.length; ++k, ++before) {
      pass_loads();
      if (before >= end) return false;
      const InsnWord& a = w_.storage().insn(static_cast<std::size_t>(before));
      const InsnWord& b = w_.storage().insn(static_cast<std::size_t>(t.start + k));
      const std::uint64_t low = (a.word[0] ^ b.word[0]) & ~flags.word[0];
      const std::uint64_t high = (a.word[1] ^ b.word[1]) & ~flags.word[1];
      const int kind = (low | high) == 0 ? 0
                       : form_of(static_cast<Opcode>(get_field(b, op))) == Form::Mem &&
                               (low & ~address.word[0]) == 0 && (high & ~address.word[1]) == 0
                           ? 1
                           : 2;
      if (!word(k, a, b, kind)) return false;
    }
    pass_loads();
    return before == end;
  }
  // The DRAM address's move from word a to word b. (A template, as the tile functions: no
  // code in a firmware without the time shortcuts.)
  template <class = void>
  constexpr std::int64_t dram_move(const InsnWord& a, const InsnWord& b) const {
    const FieldPos dram = w_.layout().pos(Form::Mem, Field::dram_base);
    return static_cast<std::int64_t>(get_field(b, dram)) -
           static_cast<std::int64_t>(get_field(a, dram));
  }

  // (a time shortcut) The recorded iteration's steps (LoopCall::step, transfer), measured
  // against the words of the iteration before it, [t.earlier, end), which had the same keys:
  // word for word the same but for the dependency flags and the DRAM addresses of its
  // transfers (an affine loop's move by the same step each iteration), its micro-op loads
  // passed over (compare_runs). What the first copy by the calls would measure (Replay::copy),
  // the words of two iterations instead of three; false, nothing measured, where another bit
  // differs.
  template <class = void>
  constexpr bool steps_from_earlier(LoopTape& t, std::int64_t end) {
    const FieldPos op = w_.layout().pos(Form::Mem, Field::opcode);
    std::size_t c = 0;
    const auto word = [&](std::int64_t k, const InsnWord& a, const InsnWord& b, int kind) {
      bool transfer = false;  // (a call's word: its last, LoopCall::at)
      if (c < t.ncalls && t.calls[c].at == k) {
        LoopCall& call = t.calls[c++];
        call.transfer = transfer = form_of(static_cast<Opcode>(get_field(b, op))) == Form::Mem;
        call.step = transfer ? dram_move(a, b) : 0;
      }
      return kind == 0 || (kind == 1 && transfer);
    };
    return compare_runs(t, t.earlier, end, word) && c == t.ncalls;
  }

  // The recorded tile's words against the tile before it's (compare_runs): the same but for
  // the dependency flags and the transfers' DRAM addresses, whose moves it notes; false where
  // another bit differs or the moves do not fit the memo. The tile before may have loaded
  // micro-ops (the first to enter its kernels, where the recorded one loaded none): those
  // words are passed over, so that each call's instruction is compared with the same call's.
  template <class Tape>
  constexpr bool measure_moves(Tape& t) {
    t.moves = 0;
    const auto word = [&](std::int64_t k, const InsnWord& a, const InsnWord& b, int kind) {
      if (kind == 0) return true;  // (most words)
      if (kind == 2 || t.moves == t.move_capacity) return false;
      t.moved_at[t.moves] = static_cast<std::uint32_t>(k);
      t.moved_by[t.moves++] = dram_move(a, b);
      return true;
    };
    return compare_runs(t, t.previous, t.recorded, word);
  }
  // The recorded tile's transfers, in the order written, given the steps the code listed
  // (TileTape::step): those that move, where in the tile (in its copies' numbering) and by how
  // much. False where it wrote another count of transfers than the steps. (A transfer: a LOAD
  // or STORE call's word that moves data, x_size >= 1, noted as written: Replay::transferred.
  // A pop's no-op moves none; the tile's micro-op loads, the writer's, are no call's.)
  template <class Tape>
  constexpr bool place_steps(Tape& t) {
    const std::size_t given = t.moves;
    if (given > t.move_capacity || t.logged != given) return false;
    std::size_t moves = 0;  // (moves <= n: each transfer is read before it is written)
    for (std::size_t n = 0; n < given; ++n) {
      const std::int64_t by = t.moved_by[n];
      if (by == 0) continue;
      // (the micro-op loads before it passed over: its copies have none)
      t.moved_at[moves] =
          static_cast<std::uint32_t>(compact(t, t.recorded + t.moved_at[n]) - t.recorded);
      t.moved_by[moves++] = by;
    }
    t.moves = moves;
    return true;
  }
  // The micro-op loads the recorded tile wrote (the first to enter its kernels): where in it,
  // at most TileTape::kLoads, none with a dependency flag (the words its copies leave out).
  template <class Tape>
  constexpr bool pass_loads(Tape& t) {
    const IsaLayout& layout = w_.layout();
    const std::uint32_t* relocs = w_.storage().relocs();
    t.loads = 0;
    for (std::size_t i = t.relocs; i < w_.storage().reloc_count(); ++i) {
      if (t.loads == TileTape::kLoads) return false;
      const InsnWord& w = w_.storage().insn(relocs[i]);
      for (const Field flag :
           {Field::pop_prev_dep, Field::pop_next_dep, Field::push_prev_dep, Field::push_next_dep})
        if (get_field(w, layout.pos(Form::Mem, flag)) != 0) return false;
      t.load_at[t.loads++] = static_cast<std::uint32_t>(relocs[i] - t.recorded);
    }
    return true;
  }
  // Instruction x of the recorded tile as its copies number theirs: the micro-op loads before
  // it passed over (others as they are).
  template <class Tape>
  static constexpr std::int64_t compact(const Tape& t, std::int64_t x) {
    if (x < t.recorded) return x;
    std::int64_t before = 0;
    for (std::size_t i = 0; i < t.loads; ++i)
      before += static_cast<std::int64_t>(t.load_at[i]) < x - t.recorded ? 1 : 0;
    return x - before;
  }
  // The micro-op loads among the words a copy reads (those of the recorded tile, the first
  // copy's).
  template <class Tape>
  static constexpr std::size_t source_loads(const Tape& t) {
    return t.from == t.recorded ? t.loads : 0;
  }

  // Whether the tile begun starts as the recorded one did (starts_as_recorded), or would but
  // for the module of the last instruction, and regions (t.waits) whose earlier readers of
  // another module wait now where nothing waited on them at the recorded tile's start (the
  // stores of the tile before: its first tile had none to wait for). The tile's first write of
  // memory such a region holds (first_write_meeting), of the one module they may wait for,
  // then waits for them, which a copy makes it do (take_waits) as its calls would: its word
  // took no token from those modules in the recorded tile, and the tile set no push, anywhere
  // in it, on an instruction of theirs before it (its log), so that the one pop moves nothing
  // else (a pop of the tile's own before that write leaves none to add: popped_before). (The
  // module of the last instruction is no matter: a tile's calls push no token after the last
  // instruction of a module, StreamWriter::dep_push, and a copy ends as the recorded tile did,
  // StreamWriter::resume.)
  template <class Tape>
  constexpr bool starts_alike(Tape& t) {
    // (the waits first where the last copy took some: the next most often does too)
    if (t.waits_added != 0 && starts_waiting(t)) return true;
    t.waits = 0;
    t.wait_pairs = 0;
    return starts_as_recorded(t) || (t.waits_added == 0 && starts_waiting(t));
  }
  // The renaming of a steady copy (tile_begin), read from the slots the recorded tile's start
  // named.
  template <class Tape>
  constexpr bool renamed(Tape& t) const {
    for (std::size_t i = 0; i < t.map.size; ++i) t.map.to[i] = deps_.slot(t.map.where[i]);
    return true;
  }
  // ... but for the waits (t.waits) alone.
  template <class Tape>
  constexpr bool starts_waiting(Tape& t) {
    t.waits = 0;
    t.wait_pairs = 0;
    // (no pops pending: the first instruction of a module would take one, which popped_before
    // would count as the tile's own)
    const std::size_t count = deps_.count();
    if (!t.given || count > kMaskedRegions || w_.pending_pops() != 0 || t.pops != 0 ||
        w_.resident_epoch() != t.epoch)
      return false;
    std::int64_t covered[DepTracker::kPairs] = {};
    for (std::size_t p = 0; p < DepTracker::kPairs; ++p) covered[p] = deps_.covered(p);
    unsigned pairs = 0;  // (bit 3 m + q - 1: the module of queue q waits for m + 1's)
    for (std::size_t r = 0; r < count; ++r) {
      if (((t.met >> r) & 1U) == 0) continue;
      const RegionState& a = t.states[r];
      const RegionState& b = deps_.states()[r];
      const unsigned reach = deps_.reaching(r);
      const auto waits = [&](const std::int64_t* c, std::int64_t x, int m) {
        return DepTracker::waiting(c, x, m) & reach;
      };
      unsigned readers = 0;  // the modules whose readers some module waits for now
      for (int m = 0; m < 3; ++m)
        if (waits(covered, b.reader[m], m) != 0) readers |= 1U << m;
      if (readers == 0) continue;
      // nothing waited on the region then; now its readers alone, for the first write's module
      const std::int64_t first = first_write_meeting(t, r);
      const unsigned writing = first < 0 ? 7U : 1U << ((first & 3) - 1);
      bool idle = waits(t.covered, a.writer, static_cast<int>(a.writer_queue) - 1) == 0 &&
                  waits(covered, b.writer, static_cast<int>(b.writer_queue) - 1) == 0;
      for (int m = 0; m < 3; ++m)
        idle = idle && waits(t.covered, a.reader[m], m) == 0 &&
               (waits(covered, b.reader[m], m) & ~writing) == 0;
      if (!idle) return false;
      t.waits |= std::uint64_t{1} << r;
      if (first >= 0)
        for (int m = 0; m < 3; ++m)
          if (((readers >> m) & 1U) != 0) pairs |= 1U << ((3 * m) + (first & 3) - 1);
    }
    if (!deps_.match(t.states, t.covered, t.map, t.met & ~t.waits)) return false;
    t.wait_pairs = pairs;
    // the recorded tile waited for no instruction of those modules before it
    for (std::size_t e = 0; e < t.log.size; ++e) {
      const PushEdit& edit = t.log.edits[e];
      if (edit.at >= t.recorded) continue;
      const int m = queue_of(w_.storage().insn(static_cast<std::size_t>(edit.at))) - 1;
      if (((pairs >> ((3 * m) + static_cast<int>(edit.to) - 1)) & 1U) != 0) return false;
    }
    // nor did the first writes wait for them
    for (std::uint64_t bits = t.waits; bits != 0; bits &= bits - 1) {
      const std::int64_t first = first_write_meeting(t, static_cast<std::size_t>(lowest_bit(bits)));
      if (first < 0) continue;  // (none: nothing in the tile waits)
      const InsnWord& w = w_.storage().insn(static_cast<std::size_t>(recorded_word(t, first >> 2)));
      for (int m = 0; m < 3; ++m)
        if (((pairs >> ((3 * m) + (first & 3) - 1)) & 1U) != 0 &&
            get_field(w, pop_flag(m + 1, static_cast<int>(first & 3))) != 0)
          return false;
    }
    return true;
  }
  // The queue of an instruction's module. (Templates, as the tile functions.)
  template <class = void>
  constexpr int queue_of(const InsnWord& w) const {
    const auto code = static_cast<Opcode>(get_field(w, w_.layout().pos(Form::Mem, Field::opcode)));
    const auto memory =
        static_cast<MemId>(get_field(w, w_.layout().pos(Form::Mem, Field::memory_type)));
    if (code == Opcode::Store) return static_cast<int>(Queue::Store);
    return static_cast<int>(code == Opcode::Load && (memory == MemId::Inp || memory == MemId::Wgt)
                                ? Queue::Load
                                : Queue::Compute);
  }
  // Whether the recorded tile popped a token from queue m's module toward queue q's before its
  // instruction x (in the copies' numbering): one for an instruction of its own, then (its log
  // holds none before it), which the token before it the copy waits for precedes.
  // (Its words are read once, as far as the copies ask, the first pops found kept:
  // TileTape::first_pop. The scan keeps its state in locals, which the words, that might
  // alias the tape, do not make the compiler store at each word.)
  template <class Tape>
  constexpr bool popped_before(Tape& t, int m, int q, std::int64_t x) const {
    unsigned popped = t.popped;
    // (the words in order, the micro-op loads passed over as recorded_word does, one walk: the
    // next of them `load`; the flags read before the module, as most words pop nothing)
    const FieldPos prev_flag = w_.layout().pos(Form::Mem, Field::pop_prev_dep);
    const FieldPos next_flag = w_.layout().pos(Form::Mem, Field::pop_next_dep);
    std::int64_t at = t.scanned;
    std::size_t load = 0;
    for (std::int64_t k = t.scanned; k < x; ++k, ++at) {
      for (; load < t.loads && t.recorded + t.load_at[load] <= at; ++load) ++at;
      const InsnWord& w = w_.storage().insn(static_cast<std::size_t>(at));
      const bool prev = get_field(w, prev_flag) != 0;
      const bool next = get_field(w, next_flag) != 0;
      if (!prev && !next) continue;
      const int queue = queue_of(w);
      for (int from = 1; from <= 3; ++from) {
        const int pair = (3 * (from - 1)) + queue - 1;
        if (from == queue || !(from < queue ? prev : next) || ((popped >> pair) & 1U) != 0)
          continue;
        popped |= 1U << pair;
        t.first_pop[pair] = k;
      }
    }
    if (x > t.scanned) t.scanned = x;
    t.popped = popped;
    const auto pair = static_cast<std::size_t>((3 * (m - 1)) + q - 1);
    return ((t.popped >> pair) & 1U) != 0 && t.first_pop[pair] < x;
  }
  // The flag of an instruction of the module of queue q that pops a token from queue m's.
  template <class = void>
  constexpr FieldPos pop_flag(int m, int q) const {
    return w_.layout().pos(Form::Mem, m < q ? Field::pop_prev_dep : Field::pop_next_dep);
  }
  // The recorded tile's first write of memory region r holds (its index, in the copies'
  // numbering, times 4, plus its queue: TileTape::first_meets), or -1.
  template <class Tape>
  static constexpr std::int64_t first_write_meeting(const Tape& t, std::size_t r) {
    return t.first_meets[r];
  }
  // Where word k of a copy (in the copies' numbering) comes from: the tile before's, or the
  // recorded one's, its micro-op loads passed over.
  template <class Tape>
  static constexpr std::int64_t source(const Tape& t, std::int64_t k) {
    return t.from != t.recorded ? t.from + k : recorded_word(t, t.recorded + k);
  }
  // Instruction x of the recorded tile in the copies' numbering (compact()): its word.
  template <class Tape>
  static constexpr std::int64_t recorded_word(const Tape& t, std::int64_t x) {
    std::int64_t k = x - t.recorded;
    for (std::size_t i = 0; i < t.loads && static_cast<std::int64_t>(t.load_at[i]) <= k; ++i) ++k;
    return t.recorded + k;
  }

  // A tile copied whole from the one before it (t.from): its words with the transfers' DRAM
  // addresses moved once more, the recorded pushes on the renamed instructions, the regions'
  // states, the writer's last module and pending pops as the recorded tile left them, and the
  // waits its start adds (take_waits). False, nothing written, where a moved address or the
  // words would not fit: its calls then write it and fail where they would.
  template <class Tape>
  constexpr bool copy_tile(Tape& t) {
    const FieldPos dram = w_.layout().pos(Form::Mem, Field::dram_base);
    if (t.copies >= t.copies_fit) return false;  // (a moved address would leave its field)
    // the words between the micro-op loads of the tile copied (the recorded one's, or none),
    // each run of them fitting where all of them do
    if (w_.storage().insn_room() < static_cast<std::size_t>(t.length)) return false;
    const std::size_t loads = source_loads(t);
    std::int64_t at = t.from;
    for (std::size_t i = 0; i <= loads; ++i) {
      const std::int64_t end = i < loads ? t.recorded + t.load_at[i]
                                         : t.from + t.length + static_cast<std::int64_t>(loads);
      w_.storage().repeat_insns(static_cast<std::size_t>(at), static_cast<std::size_t>(end - at));
      at = end + 1;
    }
    ++t.copies;
    // each moved address the tile before's plus its step, which stays in the field (copies_fit):
    // the step shifted to the field added to the half of the word that holds it (every field
    // lies in one: IsaLayout::make), no bit above the field carried into or borrowed from
    const unsigned half = dram.offset / 64U, shift = dram.offset % 64U;
    for (std::size_t k = 0; k < t.moves; ++k)
      w_.storage().insn(static_cast<std::size_t>(t.start + t.moved_at[k])).word[half] +=
          static_cast<std::uint64_t>(t.moved_by[k]) << shift;
    take_waits(t);
    deps_.copy_tile(t.end_states, t.recorded, t.start);
    w_.resume(t.last_end, t.pops_end);
    // the calls' accesses as one ring word no span of calls matches (Replay::same_calls)
    if (log_calls_) note_call(std::uint64_t{1} << 63);
    tape_ = &t;  // (whose cursor a failed renaming names)
    ++copied_whole_;
    ++copied_tiles_;
    finish_copy(t);  // (its error, if any, is the writer's: tile_end returns it)
    return true;
  }
  // A copy's waits (starts_alike): at each first write of memory those regions hold, in order,
  // a pop from each module whose reader there its module waits for, the push on the latest of
  // them, as the calls' check would set them.
  template <class Tape>
  constexpr void take_waits(Tape& t) {
    // the pops the tile copied took this way (it was a copy), which the recorded one had not
    if (t.from != t.recorded)
      for (std::uint64_t bits = t.waits_added; bits != 0; bits &= bits - 1) {
        const std::int64_t f = first_write_meeting(t, static_cast<std::size_t>(lowest_bit(bits)));
        if (f < 0) continue;
        const int q = static_cast<int>(f & 3);
        for (int m = 0; m < 3; ++m)
          if (((t.pairs_added >> ((3 * m) + q - 1)) & 1U) != 0)
            set_field(
                w_.storage().insn(static_cast<std::size_t>(t.start + ((f >> 2) - t.recorded))),
                pop_flag(m + 1, q), 0);
      }
    t.waits_added = t.waits;
    t.pairs_added = t.wait_pairs;
    for (std::int64_t last = -1;;) {
      std::int64_t f = -1;  // the next first write
      for (std::uint64_t bits = t.waits; bits != 0; bits &= bits - 1) {
        const std::int64_t at = first_write_meeting(t, static_cast<std::size_t>(lowest_bit(bits)));
        if (at > last && (f < 0 || at < f)) f = at;
      }
      if (f < 0) return;
      last = f;
      const int q = static_cast<int>(f & 3);
      std::int64_t need[3] = {-1, -1, -1};
      for (std::uint64_t bits = t.waits; bits != 0; bits &= bits - 1) {
        const auto r = static_cast<std::size_t>(lowest_bit(bits));
        if (first_write_meeting(t, r) != f) continue;
        for (int m = 0; m < 3; ++m) {
          const std::int64_t x = deps_.states()[r].reader[m];
          if (m + 1 != q && x > need[m]) need[m] = x;
        }
      }
      InsnWord& word =
          w_.storage().insn(static_cast<std::size_t>(t.start + ((f >> 2) - t.recorded)));
      for (int m = 0; m < 3; ++m) {
        const auto pair = static_cast<std::size_t>((3 * m) + q - 1);
        if (need[m] < 0 || need[m] <= deps_.covered(pair) || popped_before(t, m + 1, q, f >> 2))
          continue;
        set_field(word, pop_flag(m + 1, q), 1);
        w_.set_push(static_cast<std::size_t>(need[m]), static_cast<Queue>(q));
        deps_.set_covered(pair, need[m]);
      }
    }
  }

  // Copying an iteration: the words the recorded call wrote (pops' no-ops, then its
  // instruction), from the iteration before; a transfer's DRAM address is this call's.
  constexpr bool copy(bool patch, std::int64_t dram, Queue q, const RegionAccess* accesses,
                      std::size_t n) {
    LoopTape& t = *tape_;
    if (t.cursor == t.ncalls) return diverged(Opcode::Finish);
    LoopCall& call = t.calls[t.cursor++];
    const std::int64_t at = call.at;
    for (; t.word < at; ++t.word)
      if (!w_.repeat(word(t, t.word), false, 0)) return unwind(t);
    ++t.word;
    call.transfer = patch;
    if (!(kTimeShortcuts && t.entry))
      call.step = dram - static_cast<std::int64_t>(
                             get_field(word(t, at), w_.layout().pos(Form::Mem, Field::dram_base)));
    if (!w_.repeat(word(t, at), patch, dram)) return unwind(t);
    return after(q, accesses, n);
  }
  // (a time shortcut) A load's or store's word just written (the last): noted where a tile is
  // being recorded with the steps given (true: the call's result is its own).
  template <class = void>
  DLAVM_RUNTIME_INLINE constexpr bool transferred() {
    if constexpr (kTimeShortcuts)
      if (tile_recorded_ != nullptr) note_transfer(static_cast<std::int64_t>(w_.size()) - 1);
    return true;
  }
  // Instruction `at` noted as a transfer of the tile being recorded where it moves data
  // (x_size >= 1: a pop's no-op moves none), in the order written (TileTape::logged).
  template <class = void>
  DLAVM_RUNTIME_COLD constexpr void note_transfer(std::int64_t at) {
    if constexpr (kTimeShortcuts) {
      TileTape& t = *tile_recorded_;
      const FieldPos x = w_.layout().pos(Form::Mem, Field::x_size);
      if (get_field(w_.storage().insn(static_cast<std::size_t>(at)), x) == 0) return;
      if (t.logged < t.move_capacity)
        t.moved_at[t.logged] = static_cast<std::uint32_t>(at - t.start);
      ++t.logged;
    }
  }
  // Word k of the iteration copied: the one before's, or an entry's, the recorded one's.
  DLAVM_RUNTIME_INLINE constexpr const InsnWord& word(const LoopTape& t, std::int64_t k) {
    if constexpr (kTimeShortcuts)
      if (t.entry) return t.snapshot[k];
    return w_.storage().insn(static_cast<std::size_t>(t.from + k));
  }
  // A copy that failed: the pushes its calls would have set by then set, those they would
  // have set later on the words copied cleared (the words are those of the calls, too).
  constexpr bool unwind(const LoopTape& t) {
    const std::int64_t written = static_cast<std::int64_t>(w_.size()) - t.start;
    for (std::size_t e = 0; e < t.log.size; ++e) {
      const PushEdit& edit = t.log.edits[e];
      const bool done = edit.when - t.recorded <= written;
      std::int64_t at = 0;
      if (edit.at < t.recorded) {
        if (done && rename(t, edit.at, at))
          w_.mark_push(static_cast<std::size_t>(at), edit.to, true);
      } else if (!done && edit.at - t.recorded < written) {
        w_.mark_push(static_cast<std::size_t>(t.start + (edit.at - t.recorded)), edit.to, false);
      }
    }
    return false;
  }
  // Instruction x in the recorded iteration's time, in the copy's: one of its own moved to
  // the copy, one before it renamed as the match found.
  static constexpr bool rename(const LoopTape& t, std::int64_t x, std::int64_t& out) {
    if (x >= t.recorded) {
      out = t.start + (x - t.recorded);
      return true;
    }
    return t.map.find(x, out);
  }
  constexpr bool diverged(Opcode op) {
    InsnFields f;
    f.opcode = op;
    return w_.fail(Status::LoopDiverged, f, Field::count, static_cast<std::int64_t>(tape_->cursor));
  }

  // x_size = 0 makes a transfer a no-op on VTA: for a padded block it would also drop the
  // padding, so an empty row is an error, not a silent no-op (rows of padding only, with
  // y_size = 0, are what input loads write).
  constexpr bool sizes(Opcode op, MemId mem, std::int64_t y, std::int64_t x) {
    InsnFields f;
    f.opcode = op;
    f.memory_type = mem;
    if (y < 0) return w_.fail(Status::EmptyTransfer, f, Field::y_size, y);
    if (x < 1) return w_.fail(Status::EmptyTransfer, f, Field::x_size, x);
    return true;
  }
  constexpr bool element(Opcode op, std::size_t param, MemId mem, std::int64_t& out) {
    const std::uint64_t phys = phys_[param];
    const auto m = static_cast<std::size_t>(mem);
    if (elem_shift_[m] >= 0) {
      if ((phys & (elem_.of[m] - 1)) == 0) {
        out = static_cast<std::int64_t>(phys >> elem_shift_[m]);
        return true;
      }
    } else if (StreamWriter<Storage, Layout>::dram_elem(phys, elem_.of[m], out)) {
      return true;
    }
    InsnFields f;
    f.opcode = op;
    f.memory_type = mem;
    return w_.fail(Status::Misaligned, f, Field::dram_base, static_cast<std::int64_t>(phys));
  }
  template <class Image>
  constexpr bool image(const Image& k, const RegionAccess* accesses, std::size_t n) {
    if (mode_ == Mode::Copy) return diverged(k.opcode);
    return deps_.before(w_, Queue::Compute, accesses, n) && w_.image(k) &&
           after(Queue::Compute, accesses, n);
  }
  constexpr bool fits(Opcode op) {
    if (nops_ <= ops_.capacity) return true;
    InsnFields f;
    f.opcode = op;
    return w_.fail(nops_ > uop_depth_ ? Status::KernelTooLarge : Status::UopsFull, f, Field::count,
                   static_cast<std::int64_t>(nops_));
  }
  constexpr bool after(Queue q, const RegionAccess* accesses, std::size_t n) {
    const auto index = static_cast<std::int64_t>(w_.size()) - 1;
    deps_.after(q, index, accesses, n);
    if (log_calls_) note_call(call_word(q, accesses, n));
    if (mode_ == Mode::Record) {
      LoopTape& t = *tape_;
      if (t.ncalls < t.call_capacity) {
        LoopCall& call = t.calls[t.ncalls];
        call.at = static_cast<std::uint32_t>(index - t.start);
        call.queue = q;
        call.accesses = static_cast<std::uint8_t>(n);
        for (std::size_t a = 0; a < n; ++a) call.access[a] = accesses[a];
        if constexpr (kTimeShortcuts)
          call.passing = 0;  // each access tracked until the tape's second whole copy
      }
      ++t.ncalls;  // counted past the capacity: such an iteration is not copied
    }
    return true;
  }

  StreamWriter<Storage, Layout>& w_;
  std::uint32_t uop_depth_;
  DepTracker deps_;
  ElemBytes elem_;
  const std::uint64_t* phys_;
  OpBuffer ops_;
  int elem_shift_[kMemIdCount] = {-1, -1, -1, -1, -1, -1};  // log2 of each element size
  KernelLoop loops_[2] = {};
  std::size_t nloops_ = 0, nops_ = 0;
  bool empty_ = false;
  LoopTape* tape_ = nullptr;
  Mode mode_ = Mode::Off;
  std::size_t copied_ = 0, copied_whole_ = 0;
  std::uint64_t memo_replaced_ = 0;
  bool copy_loops_ = true;
  // once a part of a loop's body began (iteration_begin's `apart`), the last kCallRing calls'
  // accesses (note_call; a whole copied iteration's calls as one word, and, with the time
  // shortcuts, its recorded one's: note_recorded), the words noted since, and one past the last
  // call whose accesses no word holds (a region past 2^12, or a slot written over); replays
  // with no parts log nothing
  bool log_calls_ = false;
  static constexpr std::uint64_t kCallRing = 128;
  std::uint64_t calls_ = 0, unworded_ = 0;
  std::uint64_t ring_[kCallRing] = {};
  // (last: at -Os, where no tile is copied, it is empty and the others' places stay)
  struct NoCount {};
  // A count the time shortcuts keep (without them, NoCount: 0).
  template <class Count>
  static constexpr std::size_t shortcut_count(const Count& c) {
    if constexpr (std::is_same_v<Count, NoCount>)
      return 0;
    else
      return c;
  }
  std::conditional_t<kTimeShortcuts, std::size_t, NoCount> copied_tiles_{}, matched_{};
  // the tile being recorded with the steps given, whose transfers are noted as written
  std::conditional_t<kTimeShortcuts, TileTape*, NoCount> tile_recorded_{};

  // A call's module and accesses, as one word; bit 63 set where a region is past 2^12.
  static constexpr std::uint64_t call_word(Queue q, const RegionAccess* accesses, std::size_t n) {
    std::uint64_t w = static_cast<std::uint64_t>(q) | (static_cast<std::uint64_t>(n) << 2);
    for (std::size_t a = 0; a < n; ++a) {
      if (accesses[a].region >= 4096) w |= std::uint64_t{1} << 63;
      w |= ((static_cast<std::uint64_t>(accesses[a].region & 4095U) << 1) |
            (accesses[a].write ? 1U : 0U))
           << (4 + (13 * a));
    }
    return w;
  }
  // (a time shortcut) A recorded iteration's calls, once it ended armed, noted again as its
  // whole copies note theirs, one word (copy_whole): they are its copies' calls, so that the
  // calls between a part's first two copies repeat those between the recorded one and the
  // first, and its second copy is steady. The ring's slots its calls took held the calls
  // kCallRing before them, which no span may reach now (unworded_).
  template <class = void>
  constexpr void note_recorded(const LoopTape& t) {
    const std::uint64_t end = calls_;
    calls_ = t.noted;
    if (end > kCallRing && end - kCallRing > unworded_) unworded_ = end - kCallRing;
    note_call(static_cast<std::uint64_t>(t.recorded) << 2);
  }
  constexpr void note_call(std::uint64_t word) {
    if ((word >> 63) != 0) unworded_ = calls_ + 1;
    ring_[calls_ % kCallRing] = word;
    ++calls_;
  }

  // Whether the calls [before, now) are one span of calls twice over (now - before at most
  // kCallRing, `now` the calls so far).
  constexpr bool same_calls(std::uint64_t before, std::uint64_t now) const {
    if (unworded_ > before) return false;
    const std::uint64_t mid = before + ((now - before) / 2);
    for (std::uint64_t i = 0; before + i < mid; ++i)
      if (ring_[(before + i) % kCallRing] != ring_[(mid + i) % kCallRing]) return false;
    return true;
  }
};

}  // namespace dlavm::runtime
