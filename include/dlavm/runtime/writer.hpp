// The instruction stream writer: what VTA's runtime API does (VTALoadBuffer2D,
// VTAStoreBuffer2D, micro-op kernels, VTADepPush / VTADepPop, VTASynchronize), as one
// implementation for the host (vta::Builder wraps it, throwing dlavm::Errors) and for firmware
// (the code deploy::emit generates), so both produce the same words. Standard library
// only: no exceptions, no heap, usable in constant expressions, C++17.
//
//   StreamWriter  appends checked instructions; pops requested for a module go on its next
//                 instruction; a GEMM/ALU kernel's micro-ops are stored once in the micro-op
//                 buffer (an identical kernel reuses them) and loaded into the micro-op SRAM
//                 when not resident (a LOAD UOP, relocatable); the first failure stops it and
//                 is kept in error() (a status and the instruction, field and value involved).
//   DepTracker    dependency tokens from data hazards on on-chip regions: before an
//                 instruction, a push on the latest conflicting instruction of each other
//                 module and a pop on this one (see vta/hw/dep_tracker.hpp for the argument
//                 that the k-th pop meets the k-th push and nothing deadlocks).
//
// Storage holds what grows: the instruction words, the micro-op words, the relocations, the
// table of stored kernels and of resident ones, and a scratch buffer for the kernel being
// encoded. It is a template parameter: vectors and maps on the host, fixed arrays in firmware
// (SpanStorage and FixedStorage below), whose exhaustion is a status, never a write past the
// end.
//
//   FixedStorage<64, 256, 16> st;                 // 64 instructions, 256 micro-ops, 16 kernels
//   StreamWriter<FixedStorage<64, 256, 16>> w(IsaLayout::default_layout(), 8192, st);
//   w.load(MemId::Acc, 0, 0x100, 1, 4, 4, 0, 0, 0, 0);
//   const KernelLoop loops[] = {{4, 1, 1, 0}};
//   const UopOp ops[] = {{0, 4, 0}};
//   w.alu(loops, 1, ops, 1, AluOp::Add, false, 0);
//   w.finish();                                    // w.ok(), st.insn_count() == ...
#pragma once

#include <dlavm/runtime/isa.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace dlavm::runtime {

// Why a write failed: an error code in firmware; the host turns it into a message.
enum class Status : std::uint8_t {
  Ok = 0,
  FieldRange,      // `field` of instruction `index` cannot hold `value`
  BadMemory,       // a LOAD of OUT (or of UOP, which the writer loads itself)
  KernelEmpty,     // a GEMM/ALU kernel without micro-ops
  KernelTooLarge,  // `value` micro-ops, more than the micro-op SRAM holds
  UopRange,        // micro-op `uop`'s `field` (dst 0, src 1, wgt 2) cannot hold `value`
  NotNeighbours,   // tokens between modules `from` and `to`, which share no queue
  NoInstruction,   // set_push on instruction `value`, which does not exist
  Misaligned,      // DRAM address `value` not aligned to its element
  EmptyTransfer,   // `field` (y_size / x_size) is `value`: no data to move
  InsnsFull,       // the storage holds no more instructions
  UopsFull,        // ... micro-ops
  KernelsFull,     // ... distinct kernels
  LoopShape,       // a kernel with more than two loop levels
  LoopDiverged,    // a loop iteration copied from the one before (Replay's loop memo) made other
                   // calls than that one: its replay's keys missed a value its body reads
};

struct WriterError {
  Status status = Status::Ok;
  std::uint64_t index = 0;  // the instruction (about to be) written
  Opcode opcode = Opcode::Finish;
  Field field = Field::count;
  std::int64_t value = 0;
  std::uint64_t uop = 0;                       // UopRange: the micro-op's position in its kernel
  Queue from = Queue::Load, to = Queue::Load;  // NotNeighbours
};

// x_stride = kDenseStride: dense rows (x_stride = x_size).
inline constexpr std::int64_t kDenseStride = -1;

// A loop level of a micro-op kernel and a micro-op, before encoding.
struct KernelLoop {
  std::int64_t extent = 1, dst = 0, src = 0, wgt = 0;
};
struct UopOp {
  std::int64_t dst = 0, src = 0, wgt = 0;
};

// A GEMM or ALU instruction as its kernel made it, before its micro-op range and dependency
// flags: what StreamWriter::again needs to write the same kernel again without encoding and
// looking up its micro-ops (a replay that enters a kernel with the same values as before).
// (KernelMemo::leave copies it member by member: a member added here is copied there too.)
struct WrittenKernel {
  InsnWord word{};  // the opcode, the op's own fields and the loops
  Opcode opcode = Opcode::Gemm;
  std::uint32_t dram = 0;  // its micro-ops' offset in the micro-op buffer
  std::uint32_t size = 0;  // how many
  // where they were resident when it was written: entry `sram` while the micro-op SRAM has
  // not started over since (StreamWriter::resident_epoch() still `epoch`, which is never 0)
  std::uint32_t epoch = 0, sram = 0;
};

// A GEMM or ALU kernel encoded when its replay was generated (vta::replay_source encodes each
// kernel whose loops and micro-ops are constants): its word as WrittenKernel's and its
// micro-ops' words, which StreamWriter::image stores and makes resident as it would encoded.
struct KernelImage {
  InsnWord word{};
  Opcode opcode = Opcode::Gemm;
  std::uint32_t size = 0;               // micro-ops
  const std::uint32_t* uops = nullptr;  // their words
};

// An on-chip region: a memory and a range of entries [begin, end); ACC_8BIT is the
// accumulator's memory. `arm`: 0, or the arm of a condition on the dims alone that the region
// lives in (2k - 1 the then arm of the program's k-th such condition, 2k its else arm). The
// two arms of one condition never run in the same instantiation, so their regions share SRAM
// without ever meeting: the hazards between them are none to track.
// `overlap_mask`: the regions of its table that it overlaps (bit r: region r), in a table of at
// most 64, or 0 where not given (a region overlaps itself unless empty, so a given mask is never
// 0 where it matters). A DepTracker reads it at each reset, which a replay does once per stream:
// Program and the headers deploy::emit writes give it (with_overlap_masks), so that reset does
// not compare every pair of regions again; without it the tracker compares them.
struct SramRegion {
  MemId memory = MemId::Inp;
  std::int64_t begin = 0, end = 0;
  std::uint32_t arm = 0;
  std::uint64_t overlap_mask = 0;
  constexpr bool overlaps(const SramRegion& o) const {
    const auto bank = [](MemId m) { return m == MemId::Acc8 ? MemId::Acc : m; };
    const bool apart = arm != 0 && o.arm != 0 && arm != o.arm && (arm + 1) / 2 == (o.arm + 1) / 2;
    return !apart && bank(memory) == bank(o.memory) && begin < o.end && o.begin < end;
  }
};

// The largest region table whose overlaps are bit sets (a mask's bits); a larger one's tracker
// compares its regions at each access.
inline constexpr std::size_t kMaskedRegions = 64;

// The mask of the regions of `regions[0, count)` that region r overlaps (count at most
// kMaskedRegions).
constexpr std::uint64_t overlap_mask(const SramRegion* regions, std::size_t count, std::size_t r) {
  std::uint64_t mask = 0;
  for (std::size_t o = 0; o < count; ++o)
    if (regions[r].overlaps(regions[o])) mask |= std::uint64_t{1} << o;
  return mask;
}
// Sets each region's overlap_mask, in a table of at most kMaskedRegions (a larger one is left
// as it is).
constexpr void with_overlap_masks(SramRegion* regions, std::size_t count) {
  if (count > kMaskedRegions) return;
  for (std::size_t r = 0; r < count; ++r) regions[r].overlap_mask = overlap_mask(regions, count, r);
}

// One access of an instruction: a region (an index into the tracker's table), read or written.
// (It has no member initializers, nor have RegionState, PushEdit and LoopCall, so that the
// arrays of them in a LoopMemo or TileMemo are left unset where a replay declares it. `T{}`
// zeroes one.)
struct RegionAccess {
  std::uint32_t region;
  bool write;
};

// Where a writer finds the instruction layout. The host knows it only at run time (a VTA
// configuration): DynamicLayout holds it. The code deploy::emit generates knows it when the
// firmware compiles (its kLayout): StaticLayout names it as a template argument, so every
// field's place folds into a constant shift and mask (a third less time per instruction,
// docs/performance.md), and both write the same words.
struct DynamicLayout {
  static constexpr bool kStatic = false;
  IsaLayout value;
  constexpr DynamicLayout(const IsaLayout& layout) : value(layout) {}  // NOLINT: implicit
  constexpr const IsaLayout& get() const { return value; }
};
template <const IsaLayout& Layout>
struct StaticLayout {
  static constexpr bool kStatic = true;
  static constexpr const IsaLayout& get() { return Layout; }
};

template <class Storage, class Layout = DynamicLayout>
class StreamWriter {
 public:
  constexpr StreamWriter(Layout source, std::uint32_t uop_depth, Storage& storage)
      : layout_(source), uop_depth_(uop_depth), s_(storage) {
    for (std::size_t form = 0; form < 3; ++form)
      for (std::size_t x = 0; x < kFieldCount; ++x) {
        limit_[form][x] = field_limit(layout().form(static_cast<Form>(form))[x].width);
      }
    const int imm = layout().pos(Form::Alu, Field::imm).width;
    imm_hi_ = imm == 0 ? -1 : (std::int64_t{1} << (imm - 1)) - 1;
    imm_lo_ = imm == 0 ? 0 : -imm_hi_ - 1;
    const int x = layout().pos(Form::Mem, Field::x_size).width,
              stride = layout().pos(Form::Mem, Field::x_stride).width;
    const int bits = x < stride ? x : stride;
    uop_load_limit_ = bits >= 32 ? ~std::uint32_t{0} : (std::uint32_t{1} << bits) - 1;
  }

  constexpr bool ok() const { return error_.status == Status::Ok; }
  constexpr const WriterError& error() const { return error_; }
  // Forgets the failure (the failing instruction was not written): the host, having reported
  // it, may go on.
  constexpr void clear_error() { error_ = WriterError{}; }
  constexpr const IsaLayout& layout() const { return layout_.get(); }
  constexpr std::size_t size() const { return s_.insn_count(); }
  constexpr Storage& storage() { return s_; }

  // LOAD of y rows of x elements, `stride` apart, from element address `dram` into SRAM at
  // `sram`, with zero padding.
  constexpr bool load(MemId memory, std::int64_t sram, std::int64_t dram, std::int64_t y,
                      std::int64_t x, std::int64_t stride, std::int64_t y_pad_0,
                      std::int64_t y_pad_1, std::int64_t x_pad_0, std::int64_t x_pad_1) {
    if (!ok()) return false;
    if (memory == MemId::Out || memory == MemId::Uop)
      return fail_field(Status::BadMemory, Opcode::Load, Field::memory_type,
                        static_cast<std::int64_t>(memory));
    InsnWord w;
    constexpr Opcode op = Opcode::Load;
    return mem_word(w, op, memory, sram, dram, y, x, stride) &&
           put(w, Form::Mem, op, Field::y_pad_0, y_pad_0) &&
           put(w, Form::Mem, op, Field::y_pad_1, y_pad_1) &&
           put(w, Form::Mem, op, Field::x_pad_0, x_pad_0) &&
           put(w, Form::Mem, op, Field::x_pad_1, x_pad_1) &&
           append_word(
               w, memory == MemId::Inp || memory == MemId::Wgt ? Queue::Load : Queue::Compute, op);
  }

  // STORE of accumulator rows (cut to the output width) to DRAM.
  constexpr bool store(std::int64_t sram, std::int64_t dram, std::int64_t y, std::int64_t x,
                       std::int64_t stride) {
    if (!ok()) return false;
    InsnWord w;
    return mem_word(w, Opcode::Store, MemId::Out, sram, dram, y, x, stride) &&
           append_word(w, Queue::Store, Opcode::Store);
  }

  // GEMM over a kernel (acc[dst] += inp[src] x wgt[wgt]^T, or acc[dst] = 0 with reset).
  constexpr bool gemm(const KernelLoop* loops, std::size_t nloops, const UopOp* ops,
                      std::size_t nops, bool reset) {
    if (!ok()) return false;
    InsnWord w;
    put_field(w, layout().pos(Form::Gemm, Field::opcode), static_cast<std::uint64_t>(Opcode::Gemm));
    put_field(w, layout().pos(Form::Gemm, Field::reset_reg), reset ? 1 : 0);
    return push_kernel(w, Opcode::Gemm, loops, nloops, ops, nops);
  }

  // ALU over a kernel: acc[dst] = op(acc[dst], acc[src]), or op(acc[dst], imm).
  constexpr bool alu(const KernelLoop* loops, std::size_t nloops, const UopOp* ops,
                     std::size_t nops, AluOp op, bool use_imm, std::int64_t imm) {
    if (!ok()) return false;
    const auto& t = layout().form(Form::Alu);
    InsnWord w;
    put_field(w, t[static_cast<std::size_t>(Field::opcode)],
              static_cast<std::uint64_t>(Opcode::Alu));
    put_field(w, t[static_cast<std::size_t>(Field::alu_opcode)], static_cast<std::uint64_t>(op));
    if (use_imm) {
      if (imm < imm_lo_ || imm > imm_hi_)
        return fail_field(Status::FieldRange, Opcode::Alu, Field::imm, imm);
      put_field(w, t[static_cast<std::size_t>(Field::use_imm)], 1);
      put_field(w, t[static_cast<std::size_t>(Field::imm)], static_cast<std::uint64_t>(imm));
    }
    return push_kernel(w, Opcode::Alu, loops, nloops, ops, nops);
  }

  // The last GEMM or ALU kernel written (once one was).
  constexpr const WrittenKernel& last_kernel() const { return last_kernel_; }

  // Kernel k (a last_kernel() of this stream) again: the same micro-ops, loops and fields,
  // made resident in the micro-op SRAM if they no longer are.
  constexpr bool again(const WrittenKernel& k) {
    if (!ok()) return false;
    std::uint32_t begin = k.sram;
    // resident where it was while the SRAM has not started over (its entries stay until then)
    if (!(kTimeShortcuts && k.epoch == resident_epoch_) &&
        !make_resident(k.opcode, k.dram, k.size, begin))
      return false;
    InsnWord w = k.word;
    if constexpr (kSpecializedEncoder) {
      if (k.opcode == Opcode::Gemm)
        return append_kernel(std::integral_constant<Form, Form::Gemm>{}, w, k.opcode, begin,
                             k.size);
      return append_kernel(std::integral_constant<Form, Form::Alu>{}, w, k.opcode, begin, k.size);
    } else {
      return append_kernel(FormOfOpcode{}, w, k.opcode, begin, k.size);
    }
  }

  // A kernel's image (vta::replay_source checked its fields when it encoded them). (A
  // template: a firmware whose replays have no image compiles none of it.)
  template <class Image>
  constexpr bool image(const Image& k) {
    if (!ok()) return false;
    if (k.size > uop_depth_)
      return fail_field(Status::KernelTooLarge, k.opcode, Field::count, k.size);
    std::uint32_t dram = 0;
    if (!store_kernel(k.opcode, k.uops, k.size, dram)) return false;
    last_kernel_ = {k.word, k.opcode, dram, k.size};
    if (!make_resident(k.opcode, dram, k.size, last_kernel_.sram)) return false;
    last_kernel_.epoch = resident_epoch_;
    return again(last_kernel_);  // (resident now: its word alone, with shortcuts)
  }

  // An instruction of this stream (`from`) appended again as it is (a loop iteration copied
  // from the one before it: Replay::iteration_begin), or one a loop memo kept of the iteration
  // it recorded, with its DRAM address set to `dram` if `patch`: the dependency flags are
  // copied, no pending pop is taken.
  constexpr bool repeat(const InsnWord& from, bool patch, std::int64_t dram) {
    if (!ok()) return false;
    InsnWord w = from;
    const FieldPos at = layout().pos(Form::Mem, Field::dram_base);
    const auto op = static_cast<Opcode>(get_field(w, layout().pos(Form::Mem, Field::opcode)));
    if (patch) {
      if (dram < 0 || dram > limit_[static_cast<std::size_t>(Form::Mem)]
                                   [static_cast<std::size_t>(Field::dram_base)])
        return fail_field(Status::FieldRange, op, Field::dram_base, dram);
      set_field(w, at, static_cast<std::uint64_t>(dram));
    }
    if (!s_.push_insn(w)) return fail_field(Status::InsnsFull, op, Field::count, 0);
    return true;
  }

  // What a loop memo compares between two iterations' starts: the pops pending per module
  // (bit 2k: from the previous module, 2k + 1: from the next) and the last module written.
  constexpr unsigned pending_pops() const {
    unsigned bits = 0;
    for (std::size_t q = 0; q < 3; ++q)
      bits |= (pending_pop_prev_[q] ? 1u : 0u) << (2 * q) | (pending_pop_next_[q] ? 2u : 0u)
                                                                << (2 * q);
    return bits;
  }
  constexpr Queue last_queue() const { return last_queue_; }
  // (a time shortcut, after words copied whole: Replay's tiled loops) The module of the last
  // instruction and the pops pending (pending_pops()'s bits) as the copied words leave them,
  // which the writer did not write one by one. (A template: a firmware with no tiled loop
  // compiles none of it.)
  template <class = void>
  constexpr void resume(Queue last, unsigned pops) {
    last_queue_ = last;
    for (std::size_t q = 0; q < 3; ++q) {
      pending_pop_prev_[q] = ((pops >> (2 * q)) & 1U) != 0;
      pending_pop_next_[q] = ((pops >> (2 * q)) & 2U) != 0;
    }
  }
  // How many times the micro-op SRAM started over (full): the kernels resident before stay
  // where they are while it has not (a later LOAD UOP only adds entries after them).
  constexpr std::uint32_t resident_epoch() const { return resident_epoch_; }
  // The push flags set on instructions already written (set_push, and dep_push on the last
  // one): how many so far, and whether one of those set after the first `since` fell in
  // [begin, end) (also, not knowing, when more than kPushRing were set since).
  static constexpr std::uint32_t kPushRing = 8;
  constexpr std::uint32_t pushes() const { return pushes_; }
  constexpr bool pushed_since(std::uint32_t since, std::int64_t begin, std::int64_t end) const {
    if (pushes_ - since > kPushRing) return true;  // (modulo 2^32, as the count)
    for (std::uint32_t k = since; k != pushes_; ++k) {
      const std::int64_t at = push_ring_[k % kPushRing];
      if (at >= begin && at < end) return true;
    }
    return false;
  }

  // VTADepPush: after the last instruction of `from`, a token for its neighbour `to`.
  constexpr bool dep_push(Queue from, Queue to) {
    if (!ok()) return false;
    if (!neighbours(from, to)) return fail_pair(from, to);
    if (!commit_pending_pop(from)) return false;
    const bool next = from < to;
    if (s_.insn_count() > 0 && last_queue_ == from) {
      const FieldPos flag = push_flag(from, to);
      InsnWord& last = s_.insn(s_.insn_count() - 1);
      if (get_field(last, flag) == 0) {
        put_field(last, flag, 1);
        note_push(s_.insn_count() - 1);
        return true;
      }
    }
    InsnFields nop = make_nop(from);
    (next ? nop.push_next_dep : nop.push_prev_dep) = true;
    return append(nop);
  }

  // Sets the push flag toward `to` on instruction `index`, already written: the dependency
  // tracker attaches a token to the producer of a hazard after the fact.
  constexpr bool set_push(std::size_t index, Queue to) {
    if (!ok()) return false;
    if (index >= s_.insn_count()) {
      InsnFields none;
      return fail(Status::NoInstruction, none, Field::count, static_cast<std::int64_t>(index));
    }
    InsnWord& word = s_.insn(index);
    const Queue from = module_of(word);
    if (!neighbours(from, to)) return fail_pair(from, to);
    put_field(word, push_flag(from, to), 1);
    note_push(index);
    return true;
  }

  // The push flag toward `to` on instruction `index` set or cleared, even after a failure: a
  // loop memo leaves the words of a copy that failed as its calls would have left them.
  constexpr void mark_push(std::size_t index, Queue to, bool on) {
    if (index >= s_.insn_count()) return;
    InsnWord& word = s_.insn(index);
    set_field(word, push_flag(module_of(word), to), on ? 1 : 0);
  }

  // VTADepPop: the next instruction of `to` waits for, and consumes, a token from `from`.
  constexpr bool dep_pop(Queue from, Queue to) {
    if (!ok()) return false;
    if (!neighbours(from, to)) return fail_pair(from, to);
    bool* pending = from < to ? pending_pop_prev_.data() : pending_pop_next_.data();
    if (pending[index(to)] && !commit_pending_pop(to)) return false;
    pending[index(to)] = true;
    return true;
  }

  // Orders everything after this point behind everything before it, without ending the
  // stream: compute waits for the last load and store, the next load waits for compute (the
  // next stores follow their own computation, as always). Two
  // programs written one after the other into one stream (graph::Module's lite firmware) are
  // joined this way, so that the second reads what the first stored to DRAM.
  constexpr bool barrier() {
    return dep_push(Queue::Store, Queue::Compute) && dep_push(Queue::Load, Queue::Compute) &&
           dep_pop(Queue::Store, Queue::Compute) && dep_pop(Queue::Load, Queue::Compute) &&
           commit_pending_pop(Queue::Compute) && dep_push(Queue::Compute, Queue::Load) &&
           dep_pop(Queue::Compute, Queue::Load);
  }

  // VTASynchronize: FINISH after every load and store has completed.
  constexpr bool finish() {
    if (!dep_push(Queue::Store, Queue::Compute) || !dep_push(Queue::Load, Queue::Compute) ||
        !dep_pop(Queue::Store, Queue::Compute) || !dep_pop(Queue::Load, Queue::Compute) ||
        !commit_pending_pop(Queue::Compute))
      return false;
    InsnFields f;
    f.opcode = Opcode::Finish;
    return append(f);
  }

  // Appends an instruction given by its fields, every field of its form checked.
  constexpr bool emit(const InsnFields& f) {
    if (!ok()) return false;
    if (const Field e = bad_enum(f); e != Field::count)
      return fail(Status::FieldRange, f, e, enum_value(f, e));
    const Form form = form_of(f.opcode);
    Field bad = Field::count;
    for_each_field(form, [&](Field x) {
      if (bad != Field::count) return;
      const auto v =
          x == Field::imm ? static_cast<std::int64_t>(f.imm) : static_cast<std::int64_t>(f.get(x));
      if (!fits(f, x, v)) bad = x;
    });
    if (bad != Field::count)
      return fail(Status::FieldRange, f, bad,
                  bad == Field::imm ? f.imm : static_cast<std::int64_t>(f.get(bad)));
    return append(f);
  }

  // The element address of byte address `phys` for memory `m` (false: not aligned).
  static constexpr bool dram_elem(std::uint64_t phys, std::uint64_t elem_bytes, std::int64_t& out) {
    if (elem_bytes == 0 || phys % elem_bytes != 0) return false;
    out = static_cast<std::int64_t>(phys / elem_bytes);
    return true;
  }

  // Fails the writer from outside (a replay's own checks), keeping the first failure.
  constexpr bool fail(Status status, const InsnFields& f, Field field, std::int64_t value) {
    if (ok()) error_ = {status, s_.insn_count(), f.opcode, field, value, 0};
    return false;
  }

 private:
  // The module that runs a written instruction (from its opcode and memory type).
  constexpr Queue module_of(const InsnWord& word) const {
    InsnFields head;
    head.opcode = static_cast<Opcode>(get_field(word, layout().pos(Form::Mem, Field::opcode)));
    head.memory_type =
        static_cast<MemId>(get_field(word, layout().pos(Form::Mem, Field::memory_type)));
    return queue_of(head);
  }
  // Where an instruction of module `from` holds its push toward `to` (the dependency flags sit
  // at the same bits in every form).
  constexpr FieldPos push_flag(Queue from, Queue to) const {
    return layout().pos(Form::Mem, from < to ? Field::push_next_dep : Field::push_prev_dep);
  }

  static constexpr std::size_t index(Queue q) { return static_cast<std::size_t>(q) - 1; }
  static constexpr bool neighbours(Queue from, Queue to) {
    const int a = static_cast<int>(from), b = static_cast<int>(to);
    return a >= 1 && a <= 3 && b >= 1 && b <= 3 && (a - b == 1 || b - a == 1);
  }
  constexpr void note_push(std::size_t index) {
    push_ring_[pushes_++ % kPushRing] = static_cast<std::uint32_t>(index);
  }
  constexpr bool fail_pair(Queue from, Queue to) {
    InsnFields none;
    fail(Status::NotNeighbours, none, Field::count, 0);
    error_.from = from;
    error_.to = to;
    return false;
  }
  // The enum field of `f` that holds no value of its enum (opcode, a transfer's memory type,
  // an ALU op), or Field::count.
  static constexpr Field bad_enum(const InsnFields& f) {
    if (static_cast<unsigned>(f.opcode) >= static_cast<unsigned>(kOpcodeCount))
      return Field::opcode;
    if ((f.opcode == Opcode::Load || f.opcode == Opcode::Store) &&
        static_cast<unsigned>(f.memory_type) >= static_cast<unsigned>(kMemIdCount))
      return Field::memory_type;
    if (f.opcode == Opcode::Alu &&
        static_cast<unsigned>(f.alu_opcode) >= static_cast<unsigned>(kAluOpCount))
      return Field::alu_opcode;
    return Field::count;
  }
  static constexpr std::int64_t enum_value(const InsnFields& f, Field e) {
    if (e == Field::opcode) return static_cast<std::int64_t>(f.opcode);
    if (e == Field::memory_type) return static_cast<std::int64_t>(f.memory_type);
    return static_cast<std::int64_t>(f.alu_opcode);
  }

  // Whether `value` fits `field` in f's form (imm: signed).
  constexpr bool fits(const InsnFields& f, Field field, std::int64_t value) const {
    const FieldPos p = layout().pos(form_of(f.opcode), field);
    if (p.width == 0) return false;
    if (field == Field::imm) {
      const std::int64_t hi = (std::int64_t{1} << (p.width - 1)) - 1;
      return value >= -hi - 1 && value <= hi;
    }
    return value >= 0 && static_cast<std::uint64_t>(value) <= low_mask(p.width);
  }
  static constexpr InsnFields make_nop(Queue q) {
    InsnFields f;
    f.opcode = q == Queue::Store ? Opcode::Store : Opcode::Load;
    f.memory_type = q == Queue::Load ? MemId::Inp : q == Queue::Store ? MemId::Out : MemId::Uop;
    return f;
  }
  constexpr bool commit_pending_pop(Queue q) {
    if (pending_pop_prev_[index(q)] || pending_pop_next_[index(q)]) return append(make_nop(q));
    return true;
  }
  constexpr bool append(const InsnFields& f) {
    return append_word(pack(layout(), f), queue_of(f), f.opcode);
  }
  // Appends a word of module q, with the pops pending for q.
  constexpr bool append_word(InsnWord w, Queue q, Opcode op) {
    if (pending_pop_prev_[index(q)]) put_field(w, layout().pos(Form::Mem, Field::pop_prev_dep), 1);
    if (pending_pop_next_[index(q)]) put_field(w, layout().pos(Form::Mem, Field::pop_next_dep), 1);
    if (!s_.push_insn(w)) return fail_field(Status::InsnsFull, op, Field::count, 0);
    pending_pop_prev_[index(q)] = pending_pop_next_[index(q)] = false;
    last_queue_ = q;
    return true;
  }

  // The encoder's hot path builds each word directly: a field checked against its width and
  // put at its place, without InsnFields and pack. The bound is limit_'s (the layout's, found
  // once), or with the specialized encoder and a StaticLayout field_limit of the constant
  // width, a constant where the form is one.
  DLAVM_RUNTIME_INLINE constexpr bool put(InsnWord& w, Form form, Opcode op, Field x,
                                          std::int64_t v) {
    const auto i = static_cast<std::size_t>(x);
    std::int64_t limit = 0;
    if constexpr (kSpecializedEncoder && Layout::kStatic)
      limit = field_limit(layout().form(form)[i].width);
    else
      limit = limit_[static_cast<std::size_t>(form)][i];
    if (v < 0 || v > limit) return fail_field(Status::FieldRange, op, x, v);
    put_field(w, layout().form(form)[i], static_cast<std::uint64_t>(v));
    return true;
  }
  constexpr bool mem_word(InsnWord& w, Opcode op, MemId memory, std::int64_t sram,
                          std::int64_t dram, std::int64_t y, std::int64_t x, std::int64_t stride) {
    const auto& t = layout().form(Form::Mem);
    put_field(w, t[static_cast<std::size_t>(Field::opcode)], static_cast<std::uint64_t>(op));
    put_field(w, t[static_cast<std::size_t>(Field::memory_type)],
              static_cast<std::uint64_t>(memory));
    return put(w, Form::Mem, op, Field::sram_base, sram) &&
           put(w, Form::Mem, op, Field::dram_base, dram) &&
           put(w, Form::Mem, op, Field::y_size, y) && put(w, Form::Mem, op, Field::x_size, x) &&
           put(w, Form::Mem, op, Field::x_stride, stride == kDenseStride ? x : stride);
  }
  constexpr bool fail_field(Status status, Opcode op, Field field, std::int64_t value) {
    InsnFields f;
    f.opcode = op;
    return fail(status, f, field, value);
  }

  // A GEMM or ALU kernel: `w` holds the opcode and the op's own fields; the loops and the
  // micro-op range go in here. The specialized encoder writes each form's fields with code of
  // their own (kernel_insn for a constant form: a StaticLayout's places and bounds fold into
  // constants, 8% of a decode step's replay); else one copy reads them by the opcode's form.
  constexpr bool push_kernel(InsnWord w, Opcode op, const KernelLoop* loops, std::size_t nloops,
                             const UopOp* ops, std::size_t nops) {
    if constexpr (!kSpecializedEncoder) {
      return kernel_insn(FormOfOpcode{}, w, op, loops, nloops, ops, nops);
    } else {
      if (op == Opcode::Gemm)
        return kernel_insn(std::integral_constant<Form, Form::Gemm>{}, w, Opcode::Gemm, loops,
                           nloops, ops, nops);
      return kernel_insn(std::integral_constant<Form, Form::Alu>{}, w, Opcode::Alu, loops, nloops,
                         ops, nops);
    }
  }
  struct FormOfOpcode {};  // a kernel's form: the opcode's, known when it runs
  // the form: FormOf's constant, or the opcode's
  template <class FormOf>
  static constexpr Form form_for(FormOf, Opcode op) {
    if constexpr (std::is_same_v<FormOf, FormOfOpcode>)
      return op == Opcode::Gemm ? Form::Gemm : Form::Alu;
    else
      return FormOf::value;
  }
  // A kernel's word `w` with its micro-op range [begin, begin + n), appended.
  template <class FormOf>
  DLAVM_RUNTIME_INLINE constexpr bool append_kernel(FormOf, InsnWord& w, Opcode op,
                                                    std::uint32_t begin, std::size_t n) {
    const Form form = form_for(FormOf{}, op);
    return put(w, form, op, Field::uop_bgn, begin) &&
           put(w, form, op, Field::uop_end, static_cast<std::int64_t>(begin + n)) &&
           append_word(w, Queue::Compute, op);
  }
  // (always inlined: push_kernel is the one function at -Os, as it was before the forms)
  template <class FormOf>
#if defined(__GNUC__)
  __attribute__((always_inline))
#endif
  constexpr bool
  kernel_insn(FormOf, InsnWord& w, Opcode op, const KernelLoop* loops, std::size_t nloops,
              const UopOp* ops, std::size_t nops) {
    const bool gemm = op == Opcode::Gemm;
    const Form form = form_for(FormOf{}, op);
    if (nloops > 2)
      return fail_field(Status::LoopShape, op, Field::count, static_cast<int>(nloops));
    if (nops == 0) return fail_field(Status::KernelEmpty, op, Field::count, 0);
    if (nops > uop_depth_)
      return fail_field(Status::KernelTooLarge, op, Field::count, static_cast<std::int64_t>(nops));
    std::uint32_t* words = s_.kernel_scratch(nops);
    if (words == nullptr) return fail_field(Status::UopsFull, op, Field::count, 0);
    const FieldPos pos[3] = {layout().uop_dst, layout().uop_src, layout().uop_wgt};
    for (std::size_t i = 0; i < nops; ++i) {
      const std::int64_t v[3] = {ops[i].dst, ops[i].src, gemm ? ops[i].wgt : 0};
      for (int k = 0; k < 3; ++k)
        if (v[k] < 0 || static_cast<std::uint64_t>(v[k]) > low_mask(pos[k].width)) {
          fail_field(Status::UopRange, op, static_cast<Field>(k), v[k]);
          error_.uop = i;
          return false;
        }
      words[i] =
          pack_uop(layout(), {static_cast<std::uint32_t>(v[0]), static_cast<std::uint32_t>(v[1]),
                              static_cast<std::uint32_t>(v[2])});
    }
    const KernelLoop none{};
    const KernelLoop& outer = nloops > 0 ? loops[0] : none;
    const KernelLoop& inner = nloops > 1 ? loops[1] : none;
    if (!put(w, form, op, Field::iter_out, outer.extent) ||
        !put(w, form, op, Field::iter_in, inner.extent) ||
        !put(w, form, op, Field::dst_factor_out, outer.dst) ||
        !put(w, form, op, Field::dst_factor_in, inner.dst) ||
        !put(w, form, op, Field::src_factor_out, outer.src) ||
        !put(w, form, op, Field::src_factor_in, inner.src))
      return false;
    if (gemm && (!put(w, form, op, Field::wgt_factor_out, outer.wgt) ||
                 !put(w, form, op, Field::wgt_factor_in, inner.wgt)))
      return false;
    // every loop field is checked before the kernel may emit its LOAD UOP
    std::uint32_t dram = 0, begin = 0;
    if (!store_kernel(op, words, nops, dram)) return false;
    last_kernel_ = {w, op, dram, static_cast<std::uint32_t>(nops)};
    if (!make_resident(op, dram, nops, begin)) return false;
    if constexpr (kTimeShortcuts) {
      last_kernel_.epoch = resident_epoch_;
      last_kernel_.sram = begin;
    }
    return append_kernel(FormOf{}, w, op, begin, nops);
  }

  // Stores a kernel's micro-ops once in the micro-op buffer (an identical kernel's are reused);
  // `dram` is their offset there.
  constexpr bool store_kernel(Opcode op, const std::uint32_t* words, std::size_t n,
                              std::uint32_t& dram) {
    if (s_.find_kernel(words, n, dram)) return true;
    dram = static_cast<std::uint32_t>(s_.uop_count());
    if (!s_.push_uops(words, n)) return fail_field(Status::UopsFull, op, Field::count, 0);
    if (!s_.add_kernel(dram, n)) return fail_field(Status::KernelsFull, op, Field::count, 0);
    return true;
  }

  // Makes the n micro-ops at `dram` resident in the micro-op SRAM (a LOAD UOP when they are
  // not, starting over when it is full); `begin` is their first SRAM entry.
  constexpr bool make_resident(Opcode op, std::uint32_t dram, std::size_t n, std::uint32_t& begin) {
    if (s_.find_resident(dram, begin)) return true;
    if (uop_next_ + n > uop_depth_) {
      s_.clear_resident();
      uop_next_ = 0;
      ++resident_epoch_;
      uop_load_ = {};  // (its `sram` no entry)
    }
    // the micro-ops that follow the last LOAD UOP's, in DRAM as in the SRAM: that LOAD loads
    // them too (a kernel stored just after the one it loaded, most often), one instruction
    // fewer; the entries it now fills were free since it, and nothing between reads them.
    // (A storage that forgets its kernels, the host Builder's take(), stores the next at 0,
    // which follows no LOAD's.) The SRAM compare holds for any LOAD of this epoch, uop_next_
    // moving only here: what it tells is that there is one (a restart's sentinel fails it).
    const bool follows = uop_load_.dram + uop_load_.words == dram &&
                         uop_load_.sram + uop_load_.words == uop_next_ &&
                         uop_load_.words + n <= uop_load_limit_;
    if (!follows) {
      InsnWord load;
      if (!mem_word(load, Opcode::Load, MemId::Uop, uop_next_, dram, 1,
                    static_cast<std::int64_t>(n), static_cast<std::int64_t>(n)))
        return false;
      if (!append_word(load, Queue::Compute, Opcode::Load)) return false;
      // the relocation after its instruction: a LOAD that found the storage full must leave no
      // relocation behind (it would name an instruction past the storage)
      if (!s_.push_reloc(static_cast<std::uint32_t>(s_.insn_count() - 1)))
        return fail_field(Status::InsnsFull, Opcode::Load, Field::count, 0);
      uop_load_ = {s_.insn_count() - 1, dram, uop_next_, 0};
    }
    if (!s_.add_resident(dram, uop_next_))
      return fail_field(Status::KernelsFull, op, Field::count, 0);
    uop_load_.words += static_cast<std::uint32_t>(n);
    if (follows) {
      const auto& t = layout().form(Form::Mem);
      InsnWord& load = s_.insn(uop_load_.at);
      set_field(load, t[static_cast<std::size_t>(Field::x_size)], uop_load_.words);
      set_field(load, t[static_cast<std::size_t>(Field::x_stride)], uop_load_.words);
    }
    begin = uop_next_;
    uop_next_ += static_cast<std::uint32_t>(n);
    return true;
  }

  Layout layout_;
  std::uint32_t uop_depth_;
  Storage& s_;
  Queue last_queue_ = Queue::Compute;        // the module of the last instruction written
  std::int64_t limit_[3][kFieldCount] = {};  // per form and field: the largest value (-1: none)
  std::int64_t imm_lo_ = 0, imm_hi_ = -1;
  std::uint32_t uop_load_limit_ = 0;  // the most words one LOAD UOP's x_size and x_stride hold
  std::array<bool, 3> pending_pop_prev_{}, pending_pop_next_{};
  std::uint32_t uop_next_ = 0;
  // the last LOAD UOP this epoch: its instruction, DRAM and SRAM offsets and words (none: an
  // SRAM offset no entry has)
  struct UopLoad {
    std::size_t at = 0;
    std::uint32_t dram = 0, sram = ~std::uint32_t{0}, words = 0;
  } uop_load_;
  std::uint32_t resident_epoch_ = 1;  // the micro-op SRAM's restarts, from 1
  std::uint32_t pushes_ = 0;          // push flags set on written instructions (pushed_since)
  std::uint32_t push_ring_[kPushRing] = {};  // the instructions of the last kPushRing
  WrittenKernel last_kernel_{};
  WriterError error_{};
};

// The hazard state of one region: its last writer and, per module, its last reader (stream
// indices, -1: none). The tracker sets its regions' states as it starts (DepTracker::reset):
// the storage it is given needs no value.
struct RegionState {
  std::int64_t writer;
  Queue writer_queue;
  // (a time shortcut, DepTracker::settled) the tracker's mark, plus 1 for a write, when a
  // compute access here last found each of its hazards covered; 0: never
  std::uint32_t settled;
  std::int64_t reader[3];
  std::uint64_t overlaps;  // the regions it overlaps (bit r: region r), up to 64 regions
};
// A region no instruction accessed yet.
inline constexpr RegionState kUntouchedRegion{-1, Queue::Compute, 0, {-1, -1, -1}, 0};

// A push the tracker set on an earlier instruction, and the log of them a loop memo keeps while
// it records an iteration (Replay::iteration_begin): full, it notes that it missed some.
struct PushEdit {
  std::int64_t at;
  Queue to;
  std::int64_t when;  // the stream's length when it was set
};
struct PushLog {
  PushEdit* edits = nullptr;
  std::size_t capacity = 0, size = 0;
  bool overflow = false;
  // (a tiled loop's tile being recorded: DepTracker::log_tile_pushes) the tile's first write
  // of each region, its index times 4 plus its queue, or -1
  std::int64_t* first_writes = nullptr;
  constexpr void add(std::int64_t at, Queue to, std::int64_t when) {
    if (size == capacity) {
      overflow = true;
      return;
    }
    edits[size++] = {at, to, when};
  }
};

// A renaming of instructions (DepTracker::match): instruction from[i], of module module[i],
// is to[i]; one module's instructions keep their order (a hazard waits on the latest).
// where[i] is a slot holding it (4 * region + 0 for the writer, 1 + m for the reader of m).
struct IndexMap {
  std::int64_t* from = nullptr;
  std::int64_t* to = nullptr;
  std::uint8_t* module = nullptr;
  std::uint32_t* where = nullptr;
  std::size_t capacity = 0, size = 0;

  constexpr void clear() { size = 0; }
  constexpr bool add(std::int64_t x, std::int64_t y, int m, std::uint32_t slot) {
    for (std::size_t i = 0; i < size; ++i) {
      if (from[i] == x || to[i] == y) {
        if (from[i] == x && to[i] == y) return true;
        return false;
      }
      if (module[i] == m && (from[i] < x) != (to[i] < y)) return false;
    }
    if (size == capacity) return false;
    from[size] = x;
    to[size] = y;
    where[size] = slot;
    module[size++] = static_cast<std::uint8_t>(m);
    return true;
  }
  constexpr bool find(std::int64_t x, std::int64_t& y) const {
    for (std::size_t i = 0; i < size; ++i)
      if (from[i] == x) {
        y = to[i];
        return true;
      }
    return false;
  }
};

// The index of the lowest set bit of m (nonzero): the compiler's count of trailing zeros where
// it has one, else a binary search (the runtime keeps to standard C++17 elsewhere).
constexpr int lowest_bit_portable(std::uint64_t m) {
  int n = 0;
  for (int width = 32; width > 0; width /= 2) {
    const std::uint64_t low = (std::uint64_t{1} << width) - 1;
    if ((m & low) == 0) {
      m >>= width;
      n += width;
    }
  }
  return n;
}
constexpr int lowest_bit(std::uint64_t m) {
#if defined(__GNUC__)
  return __builtin_ctzll(m);
#else
  return lowest_bit_portable(m);
#endif
}

// Dependency tokens from data hazards (vta/hw/dep_tracker.hpp describes the scheme). The
// regions and their states are the caller's arrays (`count` of each).
class DepTracker {
 public:
  constexpr DepTracker(const SramRegion* regions, RegionState* states, std::size_t count)
      : regions_(regions), states_(states), count_(count) {
    reset();
  }

  constexpr void reset() {
    for (std::size_t r = 0; r < count_; ++r) {
      states_[r] = kUntouchedRegion;
      if (count_ <= kMaskedRegions)
        states_[r].overlaps = regions_[r].overlap_mask != 0 ? regions_[r].overlap_mask
                                                            : overlap_mask(regions_, count_, r);
    }
    for (auto& c : covered_) c = -1;
    if constexpr (kTimeShortcuts) mark_ = 2;
  }

  // Before the instruction of module `q` that performs `accesses`: pushes on the producers of
  // its hazards, a pop pending on the writer for q's next instruction.
  // (The settled check is inlined where it is called: most compute accesses pass it.)
  template <class Writer>
  DLAVM_RUNTIME_INLINE constexpr bool before(Writer& w, Queue q, const RegionAccess* accesses,
                                             std::size_t n) {
    if constexpr (kTimeShortcuts)
      if (q == Queue::Compute && settled(accesses, n)) return true;
    return check(w, q, accesses, n);
  }

  // The conflicting instruction when before() failed on modules that share no token queue.
  constexpr std::int64_t unordered() const { return unordered_; }

  // What a loop memo reads and restores (Replay::iteration_begin): the regions' states, the
  // last instruction of each module whose push toward each other module was set (pair
  // 3 * (from - 1) + to - 1), and the log the pushes set go to while an iteration is recorded.
  constexpr std::size_t count() const { return count_; }
  constexpr const RegionState* states() const { return states_; }
  static constexpr std::size_t kPairs = 9;
  constexpr std::int64_t covered(std::size_t pair) const { return covered_[pair]; }
  constexpr void set_covered(std::size_t pair, std::int64_t at) {
    if constexpr (kTimeShortcuts)
      if (at < covered_[pair]) unsettle();  // a hazard covered before may not be now
    covered_[pair] = at;
  }
  constexpr void log_pushes(PushLog* log) { log_ = log; }
  // (a time shortcut) The log of a tiled loop's tile being recorded (Replay::tile_begin), apart
  // from an inner loop's (log_pushes): the pushes set on instructions before `from`, the
  // tile's first (those on its own come with its words).
  // Its first write of each region goes to the log's first_writes, where it has them (where a
  // later tile may wait for what the recorded one did not: Replay::starts_alike).
  constexpr void log_tile_pushes(PushLog* log, std::int64_t from) {
    tile_log_ = log;
    tile_from_ = from;
  }
  constexpr void note_tile_push(std::int64_t at, Queue to, std::int64_t when) {
    if (tile_log_ != nullptr && at < tile_from_) tile_log_->add(at, to, when);
  }
  // (a time shortcut) What a copied tile does to the regions' states (Replay::tile_begin): the
  // slots the recorded tile, which started at instruction `recorded` and ended in states `end`,
  // set, as it set them, its instructions moved to the copy's, which starts at `start`. A
  // region it wrote: its writer and every reader (-1, or one of its reads after the write); a
  // region it read alone: the readers it set. The other slots stay as they are, as the calls
  // would leave them.
  constexpr void copy_tile(const RegionState* end, std::int64_t recorded, std::int64_t start) {
    const auto moved = [&](std::int64_t x) { return x >= recorded ? start + (x - recorded) : x; };
    for (std::size_t r = 0; r < count_; ++r) {
      const RegionState& e = end[r];
      RegionState& s = states_[r];
      const bool wrote = e.writer >= recorded;
      if (wrote) {
        s.writer = moved(e.writer);
        s.writer_queue = e.writer_queue;
      }
      for (int m = 0; m < 3; ++m)
        if (wrote || e.reader[m] >= recorded) s.reader[m] = moved(e.reader[m]);
    }
    unsettle();  // (loads and stores tracked)
  }
  // The modules that reach region r's memory, the only ones that wait on it (bit m: queue
  // m + 1): load and compute reach INP and WGT, compute and store the accumulator, compute
  // alone the micro-ops.
  constexpr unsigned reaching(std::size_t r) const {
    const MemId mem = regions_[r].memory;
    const bool staged = mem == MemId::Inp || mem == MemId::Wgt;
    return 2U | (staged ? 1U : 0U) | (!staged && mem != MemId::Uop ? 4U : 0U);
  }
  // The index in slot `where` (IndexMap): 4 * region + 0 its writer, 1 + m the reader of m.
  constexpr std::int64_t slot(std::uint32_t where) const {
    const RegionState& s = states_[where / 4];
    return where % 4 == 0 ? s.writer : s.reader[(where % 4) - 1];
  }

  // The modules that wait on index x of module m (bit `to`: x is past the last push from m to
  // `to` in `covered`), none where x < 0 or for m itself.
  static constexpr unsigned waiting(const std::int64_t* covered, std::int64_t x, int m) {
    if (x < 0) return 0;
    const std::int64_t* past = covered + (m * 3);
    return (static_cast<unsigned>(x > past[0]) | (static_cast<unsigned>(x > past[1]) << 1U) |
            (static_cast<unsigned>(x > past[2]) << 2U)) &
           ~(1U << static_cast<unsigned>(m));
  }
  // Whether the hazards an instruction can meet now are those it could meet at an earlier
  // point, up to a renaming of the instructions waited on: each index an access could still
  // wait on (past the push already set toward the accessing module) is an instruction of the
  // same module then and now, in the same order among that module's, and every other index
  // is unreachable then as now. `states` and `covered` are the copies taken at that point;
  // `map` gets the renaming. From two such points on, the same calls make the same tokens
  // (a push set on instruction x then is set on map(x) now).
  // `only`: the regions compared, where not all (bit r: region r; a table of at most
  // kMaskedRegions): those an iteration's accesses meet, whose hazards alone make its tokens.
  constexpr bool match(const RegionState* was_states, const std::int64_t* was_covered,
                       IndexMap& map, std::uint64_t only = ~std::uint64_t{0}) const {
    // (match() is where a copied loop iteration's time goes: regions the loop never touched
    // are skipped, the others compared slot by slot, each slot's waiting modules as bits)
    // a slot, for the modules in `mask`: the same modules wait on it then as now, and where
    // any does, the same module's instruction, renamed (once)
    const auto same = [&](std::int64_t was, int was_m, std::int64_t now, int now_m, unsigned mask,
                          std::uint32_t slot) {
      const unsigned waited = waiting(was_covered, was, was_m) & mask;
      if (waited != (waiting(covered_, now, now_m) & mask)) return false;
      return waited == 0 || (was_m == now_m && map.add(was, now, was_m, slot));
    };
    map.clear();
    // (with the time shortcuts, a table of at most kMaskedRegions regions is walked by the set
    // bits of `only`: a loop's iteration meets few of its regions)
    const bool by_bits = kTimeShortcuts && count_ <= kMaskedRegions;
    std::uint64_t left = only;
    if (by_bits && count_ < kMaskedRegions) left &= (std::uint64_t{1} << count_) - 1;
    for (std::size_t r = 0; r < count_; ++r) {
      if (by_bits) {
        if (left == 0) break;
        r = static_cast<std::size_t>(lowest_bit(left));
        left &= left - 1;
      } else if (r < kMaskedRegions && ((only >> r) & 1U) == 0) {
        continue;
      }
      const RegionState& a = was_states[r];
      const RegionState& b = states_[r];
      // a region untouched then and now (another arm's, most often) has nothing to compare
      if ((a.writer & a.reader[0] & a.reader[1] & a.reader[2] & b.writer & b.reader[0] &
           b.reader[1] & b.reader[2]) < 0)  // every index -1: the sign bit survives the ands
        continue;
      const unsigned mask = reaching(r);
      const auto slot = static_cast<std::uint32_t>(4 * r);
      if (!same(a.writer, static_cast<int>(a.writer_queue) - 1, b.writer,
                static_cast<int>(b.writer_queue) - 1, mask, slot))
        return false;
      for (int m = 0; m < 3; ++m)
        if ((a.reader[m] & b.reader[m]) >= 0 &&  // (no reader then nor now: most slots)
            !same(a.reader[m], m, b.reader[m], m, mask, slot + 1 + static_cast<std::uint32_t>(m)))
          return false;
    }
    return true;
  }

  // After writing: instruction `index`, of module q, performed `accesses`.
  constexpr void after(Queue q, std::int64_t index, const RegionAccess* accesses, std::size_t n) {
    if constexpr (kTimeShortcuts) {
      if (q != Queue::Compute) unsettle();
      if (tile_log_ != nullptr) note_first_writes(q, index, accesses, n);
    }
    for (std::size_t i = 0; i < n; ++i) track(q, index, accesses[i]);
  }
  // ... but for those in `passing` (bit i: access i), whose regions a whole copied iteration's
  // later calls set again (LoopCall::passing; a time shortcut). Nor does a tile being
  // recorded note first writes here: the calls a whole copy repeats ran before it in the same
  // entry of its loop, inside the tile, and noted them (Replay::copy_whole).
  constexpr void after(Queue q, std::int64_t index, const RegionAccess* accesses, std::size_t n,
                       unsigned passing) {
    if (q != Queue::Compute) unsettle();
    for (std::size_t i = 0; i < n; ++i)
      if (((passing >> i) & 1U) == 0) track(q, index, accesses[i]);
  }

 private:
  // before()'s hazards, region by region.
  template <class Writer>
  constexpr bool check(Writer& w, Queue q, const RegionAccess* accesses, std::size_t n) {
    std::int64_t need[3] = {-1, -1, -1};
    // an in-place ALU's read of the region it writes meets a subset of the write's hazards
    if (kTimeShortcuts && n == 2 && accesses[1].region == accesses[0].region && accesses[0].write)
      n = 1;
    for (std::size_t i = 0; i < n; ++i) {
      const auto hazard = [&](const RegionState& s) {
        if (s.writer >= 0 && s.writer_queue != q) raise(need, s.writer_queue, s.writer);
        if (accesses[i].write)
          for (int m = 0; m < 3; ++m)
            if (s.reader[m] >= 0 && m != static_cast<int>(q) - 1)
              raise(need, static_cast<Queue>(m + 1), s.reader[m]);
      };
      if (count_ <= kMaskedRegions) {  // the overlapping regions, from the bit set
        for (std::uint64_t m = states_[accesses[i].region].overlaps; m != 0; m &= m - 1)
          hazard(states_[lowest_bit(m)]);
      } else {
        const SramRegion& mine = regions_[accesses[i].region];
        for (std::size_t r = 0; r < count_; ++r)
          if (regions_[r].overlaps(mine)) hazard(states_[r]);
      }
    }
    for (int m = 0; m < 3; ++m) {
      if (need[m] < 0) continue;
      const auto from = static_cast<Queue>(m + 1);
      // load and store never share a memory, so no hazard joins them; one would be a bug
      if ((from == Queue::Load && q == Queue::Store) ||
          (from == Queue::Store && q == Queue::Load)) {
        unordered_ = need[m];
        return w.dep_pop(from, q);  // fails: NotNeighbours
      }
      std::int64_t& covered = covered_[(m * 3) + static_cast<int>(q) - 1];
      if (need[m] <= covered) continue;
      if (!w.set_push(static_cast<std::size_t>(need[m]), q) || !w.dep_pop(from, q)) return false;
      if (log_ != nullptr) log_->add(need[m], q, static_cast<std::int64_t>(w.size()));
      if constexpr (kTimeShortcuts) note_tile_push(need[m], q, static_cast<std::int64_t>(w.size()));
      covered = need[m];
    }
    if constexpr (kTimeShortcuts)
      if (q == Queue::Compute) settle(accesses, n);
    return true;
  }

  // (a time shortcut) A tile being recorded: the first write of each region (PushLog).
  template <class = void>
  constexpr void note_first_writes(Queue q, std::int64_t index, const RegionAccess* accesses,
                                   std::size_t n) {
    if (tile_log_->first_writes == nullptr) return;
    for (std::size_t i = 0; i < n; ++i)
      if (accesses[i].write && tile_log_->first_writes[accesses[i].region] == -1)
        tile_log_->first_writes[accesses[i].region] = (index * 4) + static_cast<std::int64_t>(q);
  }
  constexpr void track(Queue q, std::int64_t index, const RegionAccess& access) {
    RegionState& s = states_[access.region];
    if (access.write) {
      // later accesses wait for this write, which itself waited for the earlier readers
      s.writer = index;
      s.writer_queue = q;
      s.reader[0] = s.reader[1] = s.reader[2] = -1;
    } else {
      s.reader[static_cast<int>(q) - 1] = index;
    }
  }
  static constexpr void raise(std::int64_t* need, Queue from, std::int64_t at) {
    auto& n = need[static_cast<int>(from) - 1];
    if (at > n) n = at;
  }

  // A compute instruction waits on loads and stores alone (its own module runs in order), and
  // only a load or store tracked since (after) adds a hazard: a compute write resets its
  // region's readers, a read adds a compute reader. So where none was tracked since the same
  // accesses (a write covers a read) found every hazard covered, none is new: the ALU runs of
  // a softmax's division, all on the compute module, are checked once a region.
  // (a region's mark less mark_: 1 for a write, 0 for a read; unsigned, so older marks are
  // more; where the marks would wrap, none is kept)
  constexpr bool settled(const RegionAccess* accesses, std::size_t n) const {
    if (mark_ >= kMarkLimit) return false;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t since = states_[accesses[i].region].settled - mark_;
      if (since > 1 || since < static_cast<std::uint32_t>(accesses[i].write)) return false;
    }
    return true;
  }
  constexpr void settle(const RegionAccess* accesses, std::size_t n) {
    if (mark_ >= kMarkLimit) return;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t& s = states_[accesses[i].region].settled;
      if (s - mark_ > 1 || accesses[i].write) s = mark_ + accesses[i].write;  // a write's stays
    }
  }
  constexpr void unsettle() { mark_ += mark_ < kMarkLimit ? 2 : 0; }  // (it stops there)
  static constexpr std::uint32_t kMarkLimit = ~std::uint32_t{0} - 1;

  const SramRegion* regions_;
  RegionState* states_;
  std::size_t count_;
  std::int64_t covered_[9] = {-1, -1, -1, -1, -1, -1, -1, -1, -1};
  std::int64_t unordered_ = -1;
  PushLog* log_ = nullptr;
  PushLog* tile_log_ = nullptr;  // (log_tile_pushes)
  std::int64_t tile_from_ = 0;
  // (settled) 2 x (the loads and stores tracked, and the covers moved back, + 1)
  std::uint32_t mark_ = 2;
};

// A stored kernel (its first micro-op word and size) or a resident one (its micro-op buffer
// offset and SRAM entry), and its entry in the table's hash index.
struct KernelSlot {
  std::uint32_t at = 0, size = 0, slot = 0;
};

// The caller's arrays for SpanStorage's kernel tables: at most `capacity` distinct kernels
// stored, and `resident_capacity` resident at once (the micro-op SRAM's entries are enough:
// each resident kernel holds one or more), and their hash index (index_size(capacity,
// resident_capacity) entries). None is cleared before a stream: whatever an earlier stream left
// in them, an index entry counts only if the kernel it names points back at it (a sparse set),
// so a stream starts, and the micro-op SRAM starts over, in constant time.
struct KernelTables {
  KernelSlot* stored = nullptr;
  KernelSlot* resident = nullptr;
  std::uint32_t* index = nullptr;
  std::size_t capacity = 0, resident_capacity = 0;
  // each table's index twice its capacity, so that a probe meets a free entry
  static constexpr std::size_t index_size(std::size_t capacity, std::size_t resident_capacity) {
    return 2 * (capacity + resident_capacity);
  }
  // Enough for a stream of at most `insns` instructions and `uops` micro-op words: each kernel
  // stored holds a word and is written by an instruction (at least 1, an array's size).
  static constexpr std::size_t capacity_for(std::uint64_t insns, std::uint64_t uops) {
    const std::uint64_t fewer = insns < uops ? insns : uops;
    return fewer > 1 ? static_cast<std::size_t>(fewer) : 1;
  }
  // ... and resident at once in a micro-op SRAM of `uop_depth` entries: each holds one or more.
  static constexpr std::size_t resident_capacity_for(std::size_t capacity,
                                                     std::uint32_t uop_depth) {
    return capacity < uop_depth ? capacity : uop_depth;
  }
};

// Storage in the caller's arrays, for firmware: instructions, micro-op words (the kernels
// stored, then the kernel being encoded), relocations (one per instruction at most) and the
// kernel tables; running out of any is a status (InsnsFull, UopsFull, KernelsFull). A kernel
// is found by the hash of its words, a resident one by its offset: open addressing in an index
// twice the table's capacity, linear probing.
class SpanStorage {
  // A table's kernels in the order added (at most `capacity`), and its index of 2 * capacity
  // entries: entry s names kernel index[s] if that one's slot is s. (Declared first: Clang 14
  // does not instantiate, in a constant expression, a member template of a class declared
  // after the function that calls it.)
  struct Table {
    KernelSlot* kernels;
    std::uint32_t* index;
    std::size_t capacity;
    std::size_t count = 0;
    constexpr const KernelSlot* at(std::size_t s) const {
      const std::uint32_t k = index[s];
      return k < count && kernels[k].slot == s ? kernels + k : nullptr;
    }
    constexpr void add(std::size_t s, KernelSlot k) {
      k.slot = static_cast<std::uint32_t>(s);
      kernels[count] = k;
      index[s] = static_cast<std::uint32_t>(count++);
    }
    // The kernel `match` accepts among those probed from the hash's entry, or null.
    template <class Match>
    constexpr const KernelSlot* find(std::uint32_t hash, Match match) const {
      if (capacity == 0) return nullptr;
      for (std::size_t s = home(hash);; s = next(s)) {
        const KernelSlot* k = at(s);
        if (k == nullptr || match(*k)) return k;
      }
    }
    // the entry a hash's high bits name, then each one after
    constexpr std::size_t home(std::uint32_t hash) const {
      return static_cast<std::size_t>((std::uint64_t{hash} * (2 * capacity)) >> 32);
    }
    constexpr std::size_t next(std::size_t s) const { return s + 1 == 2 * capacity ? 0 : s + 1; }
    constexpr std::size_t free_slot(std::uint32_t hash) const {
      std::size_t s = home(hash);
      while (at(s) != nullptr) s = next(s);
      return s;
    }
  };

 public:
  constexpr SpanStorage(InsnWord* insns, std::size_t insn_capacity, std::uint32_t* uops,
                        std::size_t uop_capacity, std::uint32_t* relocs, KernelTables kernels)
      : insns_(insns),
        uops_(uops),
        relocs_(relocs),
        stored_{kernels.stored, kernels.index, kernels.capacity},
        resident_{kernels.resident, kernels.index + 2 * kernels.capacity,
                  kernels.resident_capacity},
        insn_cap_(insn_capacity),
        uop_cap_(uop_capacity) {}

  constexpr std::size_t insn_count() const { return insns_n_; }
  constexpr std::size_t insn_room() const { return insn_cap_ - insns_n_; }  // (words that fit)
  constexpr InsnWord& insn(std::size_t i) { return insns_[i]; }
  constexpr const InsnWord* insns() const { return insns_; }
  constexpr bool push_insn(const InsnWord& w) {
    if (insns_n_ == insn_cap_) return false;
    insns_[insns_n_++] = w;
    return true;
  }
  // The n instructions from `from` (from + n <= insn_count()) appended again, or false, none
  // appended, where they do not all fit.
  constexpr bool repeat_insns(std::size_t from, std::size_t n) {
    if (n > insn_cap_ - insns_n_) return false;
    const InsnWord* src = insns_ + from;
    InsnWord* dst = insns_ + insns_n_;
    insns_n_ += n;
#if defined(__GNUC__)  // and Clang: a memcpy, where the words are not copied by the compiler
    // (the compiler cannot tell the ranges apart, so its loop copies a word at a time)
    if (!__builtin_is_constant_evaluated()) {
      __builtin_memcpy(dst, src, n * sizeof(InsnWord));
      return true;
    }
#endif
    for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
    return true;
  }
  constexpr std::size_t uop_count() const { return uops_n_; }
  constexpr const std::uint32_t* uops() const { return uops_; }
  constexpr bool push_uops(const std::uint32_t* w, std::size_t n) {
    if (n > uop_cap_ - uops_n_) return false;
    for (std::size_t i = 0; i < n; ++i) uops_[uops_n_ + i] = w[i];
    uops_n_ += n;
    return true;
  }
  constexpr std::size_t reloc_count() const { return relocs_n_; }
  constexpr const std::uint32_t* relocs() const { return relocs_; }
  constexpr bool push_reloc(std::uint32_t index) {
    if (relocs_n_ == insn_cap_) return false;
    relocs_[relocs_n_++] = index;
    return true;
  }
  // The kernel being encoded goes after the stored ones.
  constexpr std::uint32_t* kernel_scratch(std::size_t n) {
    return n > uop_cap_ - uops_n_ ? nullptr : uops_ + uops_n_;
  }
  constexpr bool find_kernel(const std::uint32_t* w, std::size_t n, std::uint32_t& at) const {
    const KernelSlot* k = stored_.find(words_hash(w, n), [&](const KernelSlot& s) {
      return s.size == n && same_words(uops_ + s.at, w, n);
    });
    if (k != nullptr) at = k->at;
    return k != nullptr;
  }
  constexpr bool add_kernel(std::uint32_t at, std::size_t n) {
    if (stored_.count == stored_.capacity) return false;
    stored_.add(stored_.free_slot(words_hash(uops_ + at, n)),
                {at, static_cast<std::uint32_t>(n), 0});
    return true;
  }
  constexpr bool find_resident(std::uint32_t dram, std::uint32_t& sram) const {
    const KernelSlot* k =
        resident_.find(offset_hash(dram), [&](const KernelSlot& s) { return s.at == dram; });
    if (k != nullptr) sram = k->size;
    return k != nullptr;
  }
  constexpr bool add_resident(std::uint32_t dram, std::uint32_t sram) {
    if (resident_.count == resident_.capacity) return false;
    resident_.add(resident_.free_slot(offset_hash(dram)), {dram, sram, 0});
    return true;
  }
  constexpr void clear_resident() { resident_.count = 0; }
  constexpr void clear() {
    insns_n_ = uops_n_ = relocs_n_ = 0;
    stored_.count = resident_.count = 0;
  }

 private:
  static constexpr std::uint32_t words_hash(const std::uint32_t* w, std::size_t n) {
    std::uint32_t h = 0x811C9DC5u;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ w[i]) * 0x9E3779B1u;
    return h;
  }
  static constexpr std::uint32_t offset_hash(std::uint32_t dram) { return dram * 0x9E3779B1u; }
  static constexpr bool same_words(const std::uint32_t* a, const std::uint32_t* b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }

  InsnWord* insns_;
  std::uint32_t* uops_;
  std::uint32_t* relocs_;
  Table stored_, resident_;
  std::size_t insn_cap_, uop_cap_;
  std::size_t insns_n_ = 0, uops_n_ = 0, relocs_n_ = 0;
};

// SpanStorage over arrays of its own: at most Insns instructions, Uops micro-op words and
// Kernels distinct kernels. It points into itself, so it is neither copied nor moved.
template <std::size_t Insns, std::size_t Uops, std::size_t Kernels>
class FixedStorage : public SpanStorage {
 public:
  constexpr FixedStorage()
      : SpanStorage(insn_array_, Insns, uop_array_, Uops, reloc_array_,
                    {kernel_array_, resident_array_, index_array_, Kernels, Kernels}) {}
  FixedStorage(const FixedStorage&) = delete;
  FixedStorage& operator=(const FixedStorage&) = delete;

 private:
  InsnWord insn_array_[Insns] = {};
  std::uint32_t uop_array_[Uops] = {};
  std::uint32_t reloc_array_[Insns] = {};
  KernelSlot kernel_array_[Kernels] = {}, resident_array_[Kernels] = {};
  std::uint32_t index_array_[KernelTables::index_size(Kernels, Kernels)] = {};
};

}  // namespace dlavm::runtime
