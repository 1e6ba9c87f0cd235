// runtime/writer.hpp's StreamWriter: random instruction sequences (LOAD / STORE / GEMM / ALU,
// kernels written again, dependency pushes and pops, set_push, barriers) written by
//   - StreamWriter over FixedStorage (firmware's storage), with a DynamicLayout and with a
//     StaticLayout,
//   - vta::Builder (the host's storage: hash tables and vectors),
//   - a reference model in this file: VTA's runtime API as writer.hpp's comments describe it
//     (pops go on the module's next instruction, a push on the module's last instruction or a
//     no-op LOAD / STORE, micro-ops stored once and loaded when not resident, the micro-op
//     SRAM starting over when full), its fields encoded by vta::encode (which
//     tests/runtime/test_isa.cpp checks against a bit-by-bit packer),
// must give the same instruction words, micro-op words and relocations, for the default
// configuration and a small one (a 128-entry micro-op SRAM, so kernels are evicted). Then
// each error status, with the instruction, field and value it names, and that a failure
// writes nothing: not past the storage, and no instruction, relocation or counter of a write
// that failed.
#include <dlavm/runtime/writer.hpp>
#include <dlavm/vta/hw/builder.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <vector>

namespace runtime_writer_test {

namespace rt = dlavm::runtime;
namespace vta = dlavm::vta;
using i64 = std::int64_t;
using rt::Field;
using rt::MemId;
using rt::Opcode;
using rt::Queue;
using rt::Status;

struct Kernel {
  std::vector<rt::KernelLoop> loops;
  std::vector<rt::UopOp> ops;
};

vta::UopKernel builder_kernel(const Kernel& k) {
  vta::UopKernel u;
  for (const auto& l : k.loops) u.loop_begin(l.extent, l.dst, l.src, l.wgt);
  for (const auto& o : k.ops) u.push(o.dst, o.src, o.wgt);
  for (std::size_t i = 0; i < k.loops.size(); ++i) u.loop_end();
  return u;
}

// ---- the reference model --------------------------------------------------------------

class Model {
 public:
  Model(const rt::IsaLayout& layout, std::uint32_t uop_depth)
      : layout_(layout), depth_(uop_depth) {}

  std::vector<rt::InsnFields> insns;
  std::vector<std::uint32_t> uops, relocs;

  void load(MemId m, i64 sram, i64 dram, i64 y, i64 x, i64 stride, const i64 (&pad)[4]) {
    rt::InsnFields f = transfer(Opcode::Load, m, sram, dram, y, x, stride);
    f.y_pad_0 = u32(pad[0]);
    f.y_pad_1 = u32(pad[1]);
    f.x_pad_0 = u32(pad[2]);
    f.x_pad_1 = u32(pad[3]);
    append(f);
  }
  void store(i64 sram, i64 dram, i64 y, i64 x, i64 stride) {
    append(transfer(Opcode::Store, MemId::Out, sram, dram, y, x, stride));
  }
  void kernel(Opcode op, const Kernel& k, bool reset, rt::AluOp alu, bool use_imm, i64 imm) {
    const bool gemm = op == Opcode::Gemm;
    std::vector<std::uint32_t> words;
    for (const auto& o : k.ops)
      words.push_back(rt::pack_uop(layout_, {u32(o.dst), u32(o.src), gemm ? u32(o.wgt) : 0}));
    // stored once: an identical kernel's micro-ops are reused
    auto stored = stored_.find(words);
    if (stored == stored_.end()) {
      stored = stored_.emplace(words, static_cast<std::uint32_t>(uops.size())).first;
      uops.insert(uops.end(), words.begin(), words.end());
    }
    const std::uint32_t at = stored->second, n = static_cast<std::uint32_t>(words.size());
    // resident, or loaded (the SRAM starting over when it has no room left)
    if (!resident_.count(at)) {
      if (next_ + n > depth_) {
        resident_.clear();
        next_ = 0;
        uop_load_ = -1;
      }
      // the micro-ops that follow the last LOAD UOP's in DRAM and in the SRAM: loaded by it
      const auto fits = [&](Field f, std::uint32_t v) {
        return v < (1U << layout_.form(rt::Form::Mem)[static_cast<std::size_t>(f)].width);
      };
      rt::InsnFields* last = uop_load_ >= 0 ? &insns[static_cast<std::size_t>(uop_load_)] : nullptr;
      if (last != nullptr && last->dram_base + last->x_size == at &&
          last->sram_base + last->x_size == next_ && fits(Field::x_size, last->x_size + n) &&
          fits(Field::x_stride, last->x_size + n)) {
        last->x_size += n;
        last->x_stride = last->x_size;
      } else {
        rt::InsnFields l = transfer(Opcode::Load, MemId::Uop, next_, at, 1, n, n);
        relocs.push_back(static_cast<std::uint32_t>(insns.size()));
        uop_load_ = static_cast<std::int64_t>(insns.size());
        append(l);
      }
      resident_[at] = next_;
      next_ += n;
    }
    rt::InsnFields f;
    f.opcode = op;
    f.reset_reg = gemm && reset;  // alu() has no reset
    f.uop_bgn = resident_[at];
    f.uop_end = resident_[at] + n;
    const rt::KernelLoop none{};
    const auto& outer = k.loops.size() > 0 ? k.loops[0] : none;
    const auto& inner = k.loops.size() > 1 ? k.loops[1] : none;
    f.iter_out = u32(outer.extent);
    f.iter_in = u32(inner.extent);
    f.dst_factor_out = u32(outer.dst);
    f.dst_factor_in = u32(inner.dst);
    f.src_factor_out = u32(outer.src);
    f.src_factor_in = u32(inner.src);
    if (gemm) {
      f.wgt_factor_out = u32(outer.wgt);
      f.wgt_factor_in = u32(inner.wgt);
    } else {
      f.alu_opcode = alu;
      f.use_imm = use_imm;
      f.imm = use_imm ? static_cast<std::int32_t>(imm) : 0;
    }
    append(f);
  }
  // a token for `to` after `from`'s last instruction (or a no-op of `from` carrying it)
  void dep_push(Queue from, Queue to) {
    commit(from);
    const bool next = from < to;
    if (!insns.empty() && last_ == from) {
      bool& flag = next ? insns.back().push_next_dep : insns.back().push_prev_dep;
      if (!flag) {
        flag = true;
        return;
      }
    }
    rt::InsnFields f = nop(from);
    (next ? f.push_next_dep : f.push_prev_dep) = true;
    append(f);
  }
  // `to`'s next instruction waits for a token from `from`
  void dep_pop(Queue from, Queue to) {
    bool* pending = from < to ? pop_prev_ : pop_next_;
    if (pending[q(to)]) commit(to);
    pending[q(to)] = true;
  }
  void set_push(std::size_t i, Queue to) {
    const Queue from = rt::queue_of(insns[i]);
    (from < to ? insns[i].push_next_dep : insns[i].push_prev_dep) = true;
  }
  void barrier() {
    dep_push(Queue::Store, Queue::Compute);
    dep_push(Queue::Load, Queue::Compute);
    dep_pop(Queue::Store, Queue::Compute);
    dep_pop(Queue::Load, Queue::Compute);
    commit(Queue::Compute);
    dep_push(Queue::Compute, Queue::Load);
    dep_pop(Queue::Compute, Queue::Load);
  }
  void finish() {
    dep_push(Queue::Store, Queue::Compute);
    dep_push(Queue::Load, Queue::Compute);
    dep_pop(Queue::Store, Queue::Compute);
    dep_pop(Queue::Load, Queue::Compute);
    commit(Queue::Compute);
    rt::InsnFields f;
    f.opcode = Opcode::Finish;
    append(f);
  }

 private:
  static std::uint32_t u32(i64 v) { return static_cast<std::uint32_t>(v); }
  static int q(Queue x) { return static_cast<int>(x) - 1; }
  static rt::InsnFields transfer(Opcode op, MemId m, i64 sram, i64 dram, i64 y, i64 x, i64 stride) {
    rt::InsnFields f;
    f.opcode = op;
    f.memory_type = m;
    f.sram_base = u32(sram);
    f.dram_base = u32(dram);
    f.y_size = u32(y);
    f.x_size = u32(x);
    f.x_stride = u32(stride == rt::kDenseStride ? x : stride);
    return f;
  }
  // a transfer of nothing (x_size 0) on module q
  static rt::InsnFields nop(Queue q) {
    rt::InsnFields f;
    f.opcode = q == Queue::Store ? Opcode::Store : Opcode::Load;
    f.memory_type = q == Queue::Load ? MemId::Inp : q == Queue::Store ? MemId::Out : MemId::Uop;
    return f;
  }
  void append(rt::InsnFields f) {
    const Queue m = rt::queue_of(f);
    if (pop_prev_[q(m)]) f.pop_prev_dep = true;
    if (pop_next_[q(m)]) f.pop_next_dep = true;
    pop_prev_[q(m)] = pop_next_[q(m)] = false;
    insns.push_back(f);
    last_ = m;
  }
  void commit(Queue m) {
    if (pop_prev_[q(m)] || pop_next_[q(m)]) append(nop(m));
  }

  rt::IsaLayout layout_;
  std::uint32_t depth_;
  bool pop_prev_[3] = {}, pop_next_[3] = {};
  Queue last_ = Queue::Compute;
  std::map<std::vector<std::uint32_t>, std::uint32_t> stored_;
  std::map<std::uint32_t, std::uint32_t> resident_;
  std::uint32_t next_ = 0;
  std::int64_t uop_load_ = -1;  // the last LOAD UOP since the SRAM started over
};

// ---- random actions ----------------------------------------------------------------------

struct Action {
  enum Kind { Load, Store, Gemm, Alu, Push, Pop, SetPush, Barrier, Finish, Again } kind = Load;
  MemId mem = MemId::Inp;
  i64 sram = 0, dram = 0, y = 0, x = 0, stride = 0, pad[4] = {};
  std::size_t kernel = 0;  // Gemm / Alu: the kernel; Again: the kernel action repeated
  bool reset = false, use_imm = false;
  rt::AluOp alu = rt::AluOp::Add;
  i64 imm = 0;
  Queue from = Queue::Load, to = Queue::Compute;
  std::size_t index = 0;
};

struct Setup {
  vta::Config config;
  rt::IsaLayout layout;
  std::uint32_t depth;
};

Setup setup(bool small) {
  vta::Config c;
  if (small) {
    c.log_uop_buff_size = 9;   // 128 micro-ops
    c.log_inp_buff_size = 13;  // 512 inputs
    c.log_wgt_buff_size = 16;  // 256 weights
    c.log_acc_buff_size = 15;  // 512 accumulators
  }
  return {c, c.layout(), c.uop_depth()};
}

constexpr rt::IsaLayout kSmallLayout = rt::IsaLayout::make(7, 9, 8, 9);
constexpr rt::IsaLayout kDefaultLayout = rt::IsaLayout::default_layout();

class Generator {
 public:
  Generator(const Setup& s, std::uint64_t seed) : s_(s), rng_(seed) {
    const int dst = s.layout.uop_dst.width, src = s.layout.uop_src.width,
              wgt = s.layout.uop_wgt.width;
    for (int k = 0; k < 8; ++k) {
      Kernel kn;
      const int nloops = static_cast<int>(rng_() % 3);
      for (int l = 0; l < nloops; ++l)
        kn.loops.push_back({1 + bits(14) % 16383, bits(s.layout.log_acc_depth),
                            bits(std::min(s.layout.log_acc_depth, s.layout.log_inp_depth)),
                            bits(s.layout.log_wgt_depth)});
      // sizes up to a third of the SRAM, and one larger kernel: the SRAM fills and starts over
      const i64 n =
          k == 7 ? s.depth * 2 / 3 : 1 + static_cast<i64>(rng_() % std::min(s.depth / 3, 60u));
      for (i64 i = 0; i < n; ++i) kn.ops.push_back({bits(dst), bits(src), bits(wgt)});
      kernels.push_back(kn);
    }
  }

  std::vector<Kernel> kernels;

  // The next action, applied to the model (which the generator reads for set_push).
  Action next(Model& m, const std::vector<Action>& actions,
              std::vector<std::size_t>& kernel_actions) {
    const std::size_t at = actions.size();
    Action a;
    const auto r = rng_() % 100;
    if (r < 25) {
      a.kind = Action::Load;
      const MemId mems[] = {MemId::Inp, MemId::Wgt, MemId::Acc, MemId::Acc8};
      a.mem = mems[rng_() % 4];
      transfer(a);
      for (auto& p : a.pad) p = bits(4);
      m.load(a.mem, a.sram, a.dram, a.y, a.x, a.stride, a.pad);
    } else if (r < 35) {
      a.kind = Action::Store;
      transfer(a);
      m.store(a.sram, a.dram, a.y, a.x, a.stride);
    } else if (r < 60) {
      a.kind = r < 48 ? Action::Gemm : Action::Alu;
      a.kernel = rng_() % kernels.size();
      a.reset = rng_() % 4 == 0;
      a.alu = static_cast<rt::AluOp>(rng_() % 5);
      a.use_imm = rng_() % 2 == 0;
      a.imm = static_cast<i64>(rng_() % 65536) - 32768;
      kernel(m, a);
      kernel_actions.push_back(at);
    } else if (r < 66 && !kernel_actions.empty()) {
      a.kind = Action::Again;
      a.kernel = rng_() % kernel_actions.size();
      a.index = kernel_actions[a.kernel];
      kernel(m, actions[a.index]);
    } else if (r < 90) {
      a.kind = r < 78 ? Action::Push : Action::Pop;
      pair(a);
      if (a.kind == Action::Push) m.dep_push(a.from, a.to);
      if (a.kind == Action::Pop) m.dep_pop(a.from, a.to);
    } else if (r < 96 && !m.insns.empty()) {
      a.kind = Action::SetPush;
      a.index = rng_() % m.insns.size();
      const Queue from = rt::queue_of(m.insns[a.index]);
      a.to = from != Queue::Compute ? Queue::Compute : rng_() % 2 ? Queue::Load : Queue::Store;
      m.set_push(a.index, a.to);
    } else if (r < 98) {
      a.kind = Action::Barrier;
      m.barrier();
    } else {
      a.kind = Action::Finish;
      m.finish();
    }
    return a;
  }
  void kernel(Model& m, const Action& a) const {
    m.kernel(a.kind == Action::Gemm ? Opcode::Gemm : Opcode::Alu, kernels[a.kernel], a.reset, a.alu,
             a.use_imm, a.imm);
  }

 private:
  i64 bits(int w) { return static_cast<i64>(rng_() & rt::low_mask(w)); }
  void transfer(Action& a) {
    a.sram = bits(16);
    a.dram = bits(32);
    a.y = bits(rng_() % 2 ? 16 : 3);
    a.x = bits(rng_() % 2 ? 16 : 3);
    a.stride = rng_() % 3 == 0 ? rt::kDenseStride : bits(16);
  }
  void pair(Action& a) {
    const std::pair<Queue, Queue> pairs[] = {{Queue::Load, Queue::Compute},
                                             {Queue::Compute, Queue::Load},
                                             {Queue::Compute, Queue::Store},
                                             {Queue::Store, Queue::Compute}};
    const auto p = pairs[rng_() % 4];
    a.from = p.first;
    a.to = p.second;
  }
  Setup s_;
  std::mt19937_64 rng_;
};

// Applies an action to a StreamWriter; `written` collects last_kernel() after each kernel.
template <class W>
bool apply(W& w, const Action& a, const std::vector<Kernel>& kernels,
           const std::vector<Action>& actions, std::vector<rt::WrittenKernel>& written,
           std::map<std::size_t, std::size_t>& written_at) {
  switch (a.kind) {
    case Action::Load:
      return w.load(a.mem, a.sram, a.dram, a.y, a.x, a.stride, a.pad[0], a.pad[1], a.pad[2],
                    a.pad[3]);
    case Action::Store:
      return w.store(a.sram, a.dram, a.y, a.x, a.stride);
    case Action::Gemm:
    case Action::Alu: {
      const Kernel& k = kernels[a.kernel];
      const bool ok = a.kind == Action::Gemm ? w.gemm(k.loops.data(), k.loops.size(), k.ops.data(),
                                                      k.ops.size(), a.reset)
                                             : w.alu(k.loops.data(), k.loops.size(), k.ops.data(),
                                                     k.ops.size(), a.alu, a.use_imm, a.imm);
      written_at[static_cast<std::size_t>(&a - actions.data())] = written.size();
      written.push_back(w.last_kernel());
      return ok;
    }
    case Action::Again:
      return w.again(written[written_at.at(a.index)]);
    case Action::Push:
      return w.dep_push(a.from, a.to);
    case Action::Pop:
      return w.dep_pop(a.from, a.to);
    case Action::SetPush:
      return w.set_push(a.index, a.to);
    case Action::Barrier:
      return w.barrier();
    case Action::Finish:
      return w.finish();
  }
  return false;
}

// The same on vta::Builder: a kernel written again is the same call again.
void apply(vta::Builder& b, const Action& a, const std::vector<Kernel>& kernels,
           const std::vector<Action>& actions) {
  switch (a.kind) {
    case Action::Load:
      b.load({a.mem, a.sram, a.dram, a.y, a.x, a.stride, a.pad[0], a.pad[1], a.pad[2], a.pad[3]});
      return;
    case Action::Store:
      b.store({a.sram, a.dram, a.y, a.x, a.stride});
      return;
    case Action::Gemm:
      b.gemm(builder_kernel(kernels[a.kernel]), a.reset);
      return;
    case Action::Alu:
      if (a.use_imm)
        b.alu_imm(builder_kernel(kernels[a.kernel]), a.alu, a.imm);
      else
        b.alu(builder_kernel(kernels[a.kernel]), a.alu);
      return;
    case Action::Again:
      apply(b, actions[a.index], kernels, actions);
      return;
    case Action::Push:
      b.dep_push(a.from, a.to);
      return;
    case Action::Pop:
      b.dep_pop(a.from, a.to);
      return;
    case Action::SetPush:
      b.set_push(a.index, a.to);
      return;
    case Action::Barrier:
      b.barrier();
      return;
    case Action::Finish:
      b.finish();
      return;
  }
}

using BigStorage = rt::FixedStorage<4096, 32768, 32>;

template <const rt::IsaLayout& L>
void compare_random_streams(bool small, int seeds, int length) {
  const Setup s = setup(small);
  REQUIRE(s.layout.log_uop_depth == L.log_uop_depth);
  REQUIRE(s.layout.log_inp_depth == L.log_inp_depth);
  REQUIRE(s.layout.log_wgt_depth == L.log_wgt_depth);
  REQUIRE(s.layout.log_acc_depth == L.log_acc_depth);
  int insns = 0, reloads = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    CAPTURE(seed);
    Generator gen(s, 1000 * (small ? 1 : 2) + static_cast<std::uint64_t>(seed));
    Model model(s.layout, s.depth);
    std::vector<Action> actions;
    std::vector<std::size_t> kernel_actions;
    actions.reserve(static_cast<std::size_t>(length) + 1);
    for (int i = 0; i < length; ++i) actions.push_back(gen.next(model, actions, kernel_actions));
    model.finish();
    const Model& ref = model;
    // the firmware writers, dynamic and static layout
    auto st = std::make_unique<BigStorage>();
    auto st2 = std::make_unique<BigStorage>();
    rt::StreamWriter<BigStorage> w(s.layout, s.depth, *st);
    rt::StreamWriter<BigStorage, rt::StaticLayout<L>> w2({}, s.depth, *st2);
    std::vector<rt::WrittenKernel> written, written2;
    std::map<std::size_t, std::size_t> at, at2;
    vta::Builder b(s.config);
    for (const auto& a : actions) {
      REQUIRE(apply(w, a, gen.kernels, actions, written, at));
      REQUIRE(apply(w2, a, gen.kernels, actions, written2, at2));
      apply(b, a, gen.kernels, actions);
    }
    REQUIRE(w.finish());
    REQUIRE(w2.finish());
    b.finish();
    // the model's words
    std::vector<rt::InsnWord> want;
    for (std::size_t i = 0; i < ref.insns.size(); ++i)
      want.push_back(vta::encode(s.layout, ref.insns[i], i));
    const std::vector<rt::InsnWord> got(st->insns(), st->insns() + st->insn_count());
    const std::vector<rt::InsnWord> got2(st2->insns(), st2->insns() + st2->insn_count());
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      if (got[i] != want[i])
        FAIL_CHECK(vta::disassemble(vta::decode(s.layout, got[i])), " vs the model's ",
                   vta::disassemble(ref.insns[i]));
    }
    CHECK(got2 == want);
    CHECK(b.stream().insns == want);
    const std::vector<std::uint32_t> uops(st->uops(), st->uops() + st->uop_count());
    CHECK(uops == ref.uops);
    CHECK(std::vector<std::uint32_t>(st2->uops(), st2->uops() + st2->uop_count()) == ref.uops);
    CHECK(b.stream().uops == ref.uops);
    const std::vector<std::uint32_t> relocs(st->relocs(), st->relocs() + st->reloc_count());
    CHECK(relocs == ref.relocs);
    CHECK(b.stream().uop_relocs == ref.relocs);
    insns += static_cast<int>(want.size());
    reloads += static_cast<int>(ref.relocs.size());
  }
  MESSAGE(insns, " instructions (", reloads,
          " micro-op loads) equal the model's and the Builder's");
}

TEST_CASE("runtime writer: random streams equal the model's and vta::Builder's, word for word") {
  const int seeds = DLAVM_TEST_SANITIZED ? 4 : 12;
  SUBCASE("default configuration") { compare_random_streams<kDefaultLayout>(false, seeds, 400); }
  SUBCASE("128-entry micro-op SRAM") { compare_random_streams<kSmallLayout>(true, seeds, 400); }
}

// SpanStorage's kernel tables against a map, over streams that reuse the same arrays (each
// starting with what the one before left in them, the first with random words): kernels of
// 1 to 3 words from a small alphabet (so that many are equal or share a prefix), looked up
// and added as StreamWriter does (added only when not found), made resident (in a table of
// half as many, or as many) and evicted.
TEST_CASE("runtime writer: SpanStorage's hashed kernel tables agree with a map, never cleared") {
  std::mt19937 rng(11);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::size_t found = 0, added = 0, full = 0, resident_found = 0, evictions = 0, resident_full = 0;
  for (const std::size_t capacity : {1, 2, 5, 16, 64}) {
    CAPTURE(capacity);
    const std::size_t resident_capacity = capacity > 2 ? capacity / 2 : capacity;
    std::vector<rt::KernelSlot> stored(capacity), resident(resident_capacity);
    std::vector<std::uint32_t> index(rt::KernelTables::index_size(capacity, resident_capacity));
    // garbage that looks like entries: slots and kernel numbers in range
    const auto any = [&](std::size_t n) { return static_cast<std::uint32_t>(rng() % n); };
    for (auto& k : stored) k = {any(4 * capacity), 1, any(2 * capacity)};
    for (auto& k : resident) k = {any(4 * capacity), 1, any(2 * capacity)};
    for (auto& i : index) i = any(capacity + 2);
    for (int stream = 0; stream < 30; ++stream) {
      CAPTURE(stream);
      std::vector<rt::InsnWord> insns(4);
      std::vector<std::uint32_t> uops(4 * capacity + 8), relocs(4);
      rt::SpanStorage st(
          insns.data(), insns.size(), uops.data(), uops.size(), relocs.data(),
          {stored.data(), resident.data(), index.data(), capacity, resident_capacity});
      std::map<std::vector<std::uint32_t>, std::uint32_t> model;  // words -> offset
      std::map<std::uint32_t, std::uint32_t> model_resident;      // offset -> SRAM entry
      for (int op = 0; op < 200; ++op) {
        std::vector<std::uint32_t> words(static_cast<std::size_t>(1 + pick(3)));
        for (auto& w : words) w = static_cast<std::uint32_t>(pick(4));
        std::uint32_t at = 0;
        const bool hit = st.find_kernel(words.data(), words.size(), at);
        const auto m = model.find(words);
        REQUIRE(hit == (m != model.end()));
        if (hit) {
          CHECK(at == m->second);
          ++found;
        } else {
          at = static_cast<std::uint32_t>(st.uop_count());
          if (!st.push_uops(words.data(), words.size())) break;
          const bool ok = st.add_kernel(at, words.size());
          REQUIRE(ok == (model.size() < capacity));
          if (!ok) {
            ++full;
            break;
          }
          model[words] = at;
          ++added;
        }
        std::uint32_t sram = 0;
        const bool in = st.find_resident(at, sram);
        const auto r = model_resident.find(at);
        REQUIRE(in == (r != model_resident.end()));
        if (in) {
          CHECK(sram == r->second);
          ++resident_found;
        } else if (st.add_resident(at, static_cast<std::uint32_t>(op))) {
          REQUIRE(model_resident.size() < resident_capacity);
          model_resident[at] = static_cast<std::uint32_t>(op);
        } else {
          REQUIRE(model_resident.size() == resident_capacity);
          ++resident_full;
          st.clear_resident();  // as the writer's micro-op SRAM starting over
          model_resident.clear();
        }
        if (pick(8) == 0) {
          st.clear_resident();
          model_resident.clear();
          ++evictions;
        }
      }
    }
  }
  MESSAGE(added, " kernels added, ", found, " found again, ", resident_found, " found resident, ",
          evictions, " evictions, ", full, " tables full, ", resident_full,
          " resident tables full");
  CHECK(found > 1000);
  CHECK(resident_found > 1000);
  CHECK(full > 0);
  CHECK(resident_full > 0);
}

TEST_CASE("runtime writer: a kernel written again is its words again, reloaded once evicted") {
  // hand-derived: a 2-op kernel K1 at SRAM 0..1, a 100-op K2 at 2..101, a 30-op K3 that does
  // not fit the 128 entries left (102 + 30 > 128): the SRAM starts over, K3 at 0..29, and
  // K1 is no longer resident
  const Setup s = setup(true);
  auto st = std::make_unique<BigStorage>();
  rt::StreamWriter<BigStorage> w(s.layout, s.depth, *st);
  const auto ops = [](int n) {
    std::vector<rt::UopOp> v;
    for (int i = 0; i < n; ++i) v.push_back({i, i + 1, i % 7});
    return v;
  };
  const auto k1 = ops(2), k2 = ops(100), k3 = ops(30);
  const rt::KernelLoop loop[] = {{5, 2, 3, 1}};
  REQUIRE(w.gemm(loop, 1, k1.data(), k1.size(), false));
  const rt::WrittenKernel first = w.last_kernel();
  CHECK(first.opcode == Opcode::Gemm);
  CHECK(first.dram == 0);
  CHECK(first.size == 2);
  REQUIRE(w.again(first));  // resident: the GEMM alone
  REQUIRE(st->insn_count() == 3);
  CHECK(st->insn(1) == st->insn(2));
  // K2 follows K1 in DRAM and in the SRAM: K1's LOAD loads it too
  REQUIRE(w.alu(nullptr, 0, k2.data(), k2.size(), rt::AluOp::Max, true, -3));
  REQUIRE(w.alu(nullptr, 0, k3.data(), k3.size(), rt::AluOp::Min, false, 0));
  REQUIRE(st->insn_count() == 6);  // ALU, LOAD UOP, ALU
  const auto f = [&](std::size_t i) { return vta::decode(s.layout, st->insn(i)); };
  CHECK(f(0).x_size == 102);
  CHECK(f(0).x_stride == 102);
  CHECK(f(3).uop_bgn == 2);
  CHECK(f(3).uop_end == 102);
  CHECK(f(4).sram_base == 0);  // K3 loaded at 0 by a LOAD of its own: the SRAM started over
  CHECK(f(4).dram_base == 102);
  CHECK(f(4).x_size == 30);
  CHECK(f(5).uop_bgn == 0);
  CHECK(f(5).uop_end == 30);
  // evicted: loaded again (at 30, by a LOAD of its own: K1 is not after K3 in DRAM), then the
  // GEMM
  REQUIRE(w.again(first));
  REQUIRE(st->insn_count() == 8);
  CHECK(f(6).opcode == Opcode::Load);
  CHECK(f(6).memory_type == MemId::Uop);
  CHECK(f(6).sram_base == 30);
  CHECK(f(6).dram_base == 0);
  CHECK(f(6).x_size == 2);
  CHECK(f(7).uop_bgn == 30);
  CHECK(f(7).uop_end == 32);
  CHECK(f(7).iter_out == 5);
  CHECK(f(7).dst_factor_out == 2);
  CHECK(f(7).wgt_factor_out == 1);
  // micro-ops stored once each: 2 + 100 + 30
  CHECK(st->uop_count() == 132);
  CHECK(std::vector<std::uint32_t>(st->relocs(), st->relocs() + st->reloc_count()) ==
        std::vector<std::uint32_t>{0, 4, 6});
}

// ---- errors ---------------------------------------------------------------------------

// Storage over arrays larger than the capacities it is given, the rest sentinels: a write past
// the capacity shows.
struct Guarded {
  static constexpr std::size_t kInsns = 6, kUops = 12, kKernels = 2, kSlack = 8;
  rt::InsnWord insns[kInsns + kSlack];
  std::uint32_t uops[kUops + kSlack], relocs[kInsns + kSlack];
  static constexpr std::size_t kIndex = rt::KernelTables::index_size(kKernels, kKernels);
  rt::KernelSlot kernels[kKernels + kSlack], resident[kKernels + kSlack];
  std::uint32_t index[kIndex + kSlack];
  rt::SpanStorage st{insns, kInsns, uops,
                     kUops, relocs, {kernels, resident, index, kKernels, kKernels}};
  Guarded() {
    for (auto& w : insns) w.word = {0xDEADBEEF, 0xDEADBEEF};
    for (auto& u : uops) u = 0xDEADBEEF;
    for (auto& r : relocs) r = 0xDEADBEEF;
    for (auto& k : kernels) k = {0xDEADBEEF, 0xDEADBEEF, 0xDEADBEEF};
    for (auto& k : resident) k = {0xDEADBEEF, 0xDEADBEEF, 0xDEADBEEF};
    for (auto& i : index) i = 0xDEADBEEF;
  }
  bool intact() const {
    for (std::size_t i = kInsns; i < kInsns + kSlack; ++i)
      if (insns[i].word[0] != 0xDEADBEEF || relocs[i] != 0xDEADBEEF) return false;
    for (std::size_t i = kUops; i < kUops + kSlack; ++i)
      if (uops[i] != 0xDEADBEEF) return false;
    for (std::size_t i = kKernels; i < kKernels + kSlack; ++i)
      if (kernels[i].at != 0xDEADBEEF || resident[i].at != 0xDEADBEEF) return false;
    for (std::size_t i = kIndex; i < kIndex + kSlack; ++i)
      if (index[i] != 0xDEADBEEF) return false;
    return true;
  }
};

// The writer's state that a failed call must leave as it was.
struct Counts {
  std::size_t insns, uops, relocs;
  friend bool operator==(const Counts&, const Counts&) = default;
};
Counts counts(const rt::SpanStorage& st) {
  return {st.insn_count(), st.uop_count(), st.reloc_count()};
}

void check_error(const rt::WriterError& e, Status status, std::uint64_t index, Opcode op,
                 Field field, i64 value) {
  CHECK(e.status == status);
  CHECK(e.index == index);
  CHECK(e.opcode == op);
  CHECK(e.field == field);
  CHECK(e.value == value);
}

// Every field out of its range fails naming itself and its value, with a writer whose layout
// is read at run time (DynamicLayout) or a constant of the code (StaticLayout: the specialized
// encoder's bounds).
template <class Layout>
void check_failing_fields(Layout source) {
  const auto l = rt::IsaLayout::default_layout();
  Guarded g;
  rt::StreamWriter<rt::SpanStorage, Layout> w(source, 8192, g.st);
  REQUIRE(w.load(MemId::Inp, 1, 2, 1, 1, 1, 0, 0, 0, 0));  // one instruction first
  const Counts before = counts(g.st);
  using W = rt::StreamWriter<rt::SpanStorage, Layout>;
  struct Case {
    const char* what;
    bool (*call)(W&);
    Opcode op;
    Field field;
    i64 value;
  };
  static const rt::UopOp kOp[] = {{1, 2, 3}};
  const Case cases[] = {
      {"sram 2^16", [](W& w) { return w.load(MemId::Inp, 1 << 16, 0, 1, 1, 1, 0, 0, 0, 0); },
       Opcode::Load, Field::sram_base, 1 << 16},
      {"negative sram", [](W& w) { return w.load(MemId::Acc, -1, 0, 1, 1, 1, 0, 0, 0, 0); },
       Opcode::Load, Field::sram_base, -1},
      {"dram 2^32", [](W& w) { return w.load(MemId::Wgt, 0, i64{1} << 32, 1, 1, 1, 0, 0, 0, 0); },
       Opcode::Load, Field::dram_base, i64{1} << 32},
      {"y 2^16", [](W& w) { return w.load(MemId::Inp, 0, 0, 1 << 16, 1, 1, 0, 0, 0, 0); },
       Opcode::Load, Field::y_size, 1 << 16},
      {"x 2^16 dense", [](W& w) { return w.store(0, 0, 1, 1 << 16, rt::kDenseStride); },
       Opcode::Store, Field::x_size, 1 << 16},
      {"stride 2^16", [](W& w) { return w.store(0, 0, 1, 1, 1 << 16); }, Opcode::Store,
       Field::x_stride, 1 << 16},
      {"negative stride", [](W& w) { return w.store(0, 0, 1, 1, -2); }, Opcode::Store,
       Field::x_stride, -2},
      {"y_pad_0 16", [](W& w) { return w.load(MemId::Inp, 0, 0, 1, 1, 1, 16, 0, 0, 0); },
       Opcode::Load, Field::y_pad_0, 16},
      {"x_pad_1 16", [](W& w) { return w.load(MemId::Inp, 0, 0, 1, 1, 1, 0, 0, 0, 16); },
       Opcode::Load, Field::x_pad_1, 16},
      {"iter_out 2^14",
       [](W& w) {
         const rt::KernelLoop loops[] = {{1 << 14, 0, 0, 0}};
         return w.gemm(loops, 1, kOp, 1, false);
       },
       Opcode::Gemm, Field::iter_out, 1 << 14},
      {"iter_in 0 fits, -1 does not",
       [](W& w) {
         const rt::KernelLoop loops[] = {{1, 0, 0, 0}, {-1, 0, 0, 0}};
         return w.gemm(loops, 2, kOp, 1, false);
       },
       Opcode::Gemm, Field::iter_in, -1},
      {"dst_factor_in 2^11",
       [](W& w) {
         const rt::KernelLoop loops[] = {{2, 0, 0, 0}, {2, 2048, 0, 0}};
         return w.alu(loops, 2, kOp, 1, rt::AluOp::Add, false, 0);
       },
       Opcode::Alu, Field::dst_factor_in, 2048},
      {"GEMM src_factor_out 2^11",
       [](W& w) {
         const rt::KernelLoop loops[] = {{2, 0, 2048, 0}};
         return w.gemm(loops, 1, kOp, 1, false);
       },
       Opcode::Gemm, Field::src_factor_out, 2048},
      {"GEMM wgt_factor_in 2^10",
       [](W& w) {
         const rt::KernelLoop loops[] = {{2, 0, 0, 0}, {2, 0, 0, 1024}};
         return w.gemm(loops, 2, kOp, 1, false);
       },
       Opcode::Gemm, Field::wgt_factor_in, 1024},
      {"imm 2^15", [](W& w) { return w.alu(nullptr, 0, kOp, 1, rt::AluOp::Add, true, 32768); },
       Opcode::Alu, Field::imm, 32768},
      {"imm -2^15 - 1",
       [](W& w) { return w.alu(nullptr, 0, kOp, 1, rt::AluOp::Add, true, -32769); }, Opcode::Alu,
       Field::imm, -32769},
      {"LOAD OUT", [](W& w) { return w.load(MemId::Out, 0, 0, 1, 1, 1, 0, 0, 0, 0); }, Opcode::Load,
       Field::memory_type, 4},
      {"LOAD UOP", [](W& w) { return w.load(MemId::Uop, 0, 0, 1, 1, 1, 0, 0, 0, 0); }, Opcode::Load,
       Field::memory_type, 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    CHECK_FALSE(c.call(w));
    CHECK_FALSE(w.ok());
    const Status want = c.field == Field::memory_type ? Status::BadMemory : Status::FieldRange;
    check_error(w.error(), want, before.insns, c.op, c.field, c.value);
    CHECK(counts(g.st) == before);
    w.clear_error();
    CHECK(w.ok());
  }
  // the limits themselves fit
  const rt::KernelLoop top[] = {{(1 << 14) - 1, 2047, 2047, 1023}, {0, 2047, 2047, 1023}};
  CHECK(w.gemm(top, 2, kOp, 1, true));
  CHECK(w.alu(nullptr, 0, kOp, 1, rt::AluOp::Add, true, -32768));
  const auto alu = vta::decode(l, g.st.insn(g.st.insn_count() - 1));
  CHECK(alu.imm == -32768);
  CHECK(alu.use_imm);
  CHECK(g.intact());
}

TEST_CASE("runtime writer: each failing field is named with its value; nothing is written") {
  SUBCASE("layout read at run time") { check_failing_fields(rt::DynamicLayout(kDefaultLayout)); }
  SUBCASE("layout a constant") { check_failing_fields(rt::StaticLayout<kDefaultLayout>{}); }
}

TEST_CASE("runtime writer: micro-op, kernel, token and instruction errors") {
  const auto l = rt::IsaLayout::default_layout();
  using W = rt::StreamWriter<rt::SpanStorage>;
  SUBCASE("a micro-op field out of range names the micro-op; nothing is loaded") {
    Guarded g;
    W w(l, 8192, g.st);
    // dst 11 bits, src 11 bits, wgt 10 bits
    const rt::UopOp ops[] = {{0, 0, 0}, {1, 1, 1}, {2, 2048, 2}};
    CHECK_FALSE(w.gemm(nullptr, 0, ops, 3, false));
    check_error(w.error(), Status::UopRange, 0, Opcode::Gemm, static_cast<Field>(1), 2048);
    CHECK(w.error().uop == 2);
    w.clear_error();
    const rt::UopOp wgt[] = {{3, 3, 1024}};
    CHECK_FALSE(w.gemm(nullptr, 0, wgt, 1, false));
    check_error(w.error(), Status::UopRange, 0, Opcode::Gemm, static_cast<Field>(2), 1024);
    CHECK(w.error().uop == 0);
    w.clear_error();
    const rt::UopOp neg[] = {{-1, 0, 0}};
    CHECK_FALSE(w.alu(nullptr, 0, neg, 1, rt::AluOp::Min, false, 0));
    check_error(w.error(), Status::UopRange, 0, Opcode::Alu, static_cast<Field>(0), -1);
    w.clear_error();
    // an ALU ignores the weight index: 1024 does not matter there
    CHECK(w.alu(nullptr, 0, wgt, 1, rt::AluOp::Min, false, 0));
    CHECK(counts(g.st) == (Counts{2, 1, 1}));
    CHECK(rt::unpack_uop(l, g.uops[0]) == rt::Uop{3, 3, 0});
    CHECK(g.intact());
  }
  SUBCASE("empty, too large and three-level kernels") {
    Guarded g;
    W w(l, 8, g.st);  // an 8-entry micro-op SRAM
    const rt::UopOp ops[9] = {};
    CHECK_FALSE(w.gemm(nullptr, 0, ops, 0, false));
    check_error(w.error(), Status::KernelEmpty, 0, Opcode::Gemm, Field::count, 0);
    w.clear_error();
    CHECK_FALSE(w.alu(nullptr, 0, ops, 9, rt::AluOp::Add, false, 0));
    check_error(w.error(), Status::KernelTooLarge, 0, Opcode::Alu, Field::count, 9);
    w.clear_error();
    const rt::KernelLoop loops[3] = {};
    CHECK_FALSE(w.gemm(loops, 3, ops, 1, false));
    check_error(w.error(), Status::LoopShape, 0, Opcode::Gemm, Field::count, 3);
    w.clear_error();
    CHECK(counts(g.st) == (Counts{0, 0, 0}));
    CHECK(w.gemm(loops, 2, ops, 8, false));  // the whole SRAM: fits
    CHECK(g.intact());
  }
  SUBCASE("tokens between modules that share no queue; set_push on a missing instruction") {
    Guarded g;
    W w(l, 8192, g.st);
    CHECK_FALSE(w.dep_push(Queue::Load, Queue::Store));
    CHECK(w.error().status == Status::NotNeighbours);
    CHECK(w.error().from == Queue::Load);
    CHECK(w.error().to == Queue::Store);
    w.clear_error();
    CHECK_FALSE(w.dep_pop(Queue::Store, Queue::Load));
    CHECK(w.error().status == Status::NotNeighbours);
    CHECK(w.error().from == Queue::Store);
    CHECK(w.error().to == Queue::Load);
    w.clear_error();
    CHECK_FALSE(w.dep_push(Queue::Compute, Queue::Compute));
    CHECK(w.error().status == Status::NotNeighbours);
    w.clear_error();
    CHECK_FALSE(w.dep_pop(static_cast<Queue>(0), Queue::Load));
    CHECK(w.error().status == Status::NotNeighbours);
    w.clear_error();
    REQUIRE(w.load(MemId::Wgt, 0, 0, 1, 1, 1, 0, 0, 0, 0));  // #0, load module
    CHECK_FALSE(w.set_push(0, Queue::Store));                // load -> store: no queue
    CHECK(w.error().status == Status::NotNeighbours);
    CHECK(w.error().from == Queue::Load);
    CHECK(w.error().to == Queue::Store);
    w.clear_error();
    CHECK_FALSE(w.set_push(1, Queue::Compute));
    check_error(w.error(), Status::NoInstruction, 1, Opcode::Finish, Field::count, 1);
    w.clear_error();
    CHECK(counts(g.st) == (Counts{1, 0, 0}));
    CHECK(vta::decode(l, g.st.insn(0)).push_next_dep == false);  // nothing set
    CHECK(w.set_push(0, Queue::Compute));
    CHECK(vta::decode(l, g.st.insn(0)).push_next_dep);
  }
}

TEST_CASE("runtime writer: full storage is a status, and the storage is not written past") {
  const auto l = rt::IsaLayout::default_layout();
  using W = rt::StreamWriter<rt::SpanStorage>;
  SUBCASE("instructions") {
    Guarded g;
    W w(l, 8192, g.st);
    for (int i = 0; i < 6; ++i) REQUIRE(w.store(i, i, 1, 1, 1));
    CHECK_FALSE(w.load(MemId::Inp, 0, 0, 1, 1, 1, 0, 0, 0, 0));
    check_error(w.error(), Status::InsnsFull, 6, Opcode::Load, Field::count, 0);
    // every later call fails at once, the first failure kept
    CHECK_FALSE(w.store(0, 0, 1, 1, 1));
    CHECK_FALSE(w.dep_push(Queue::Store, Queue::Compute));
    CHECK_FALSE(w.finish());
    CHECK(w.error().opcode == Opcode::Load);
    w.clear_error();
    // a kernel whose LOAD UOP does not fit: neither it nor its relocation is written
    const rt::UopOp ops[] = {{1, 1, 1}};
    CHECK_FALSE(w.gemm(nullptr, 0, ops, 1, false));
    check_error(w.error(), Status::InsnsFull, 6, Opcode::Load, Field::count, 0);
    CHECK(g.st.insn_count() == 6);
    CHECK(g.st.reloc_count() == 0);
    w.clear_error();
    // a push that needs a no-op instruction
    CHECK_FALSE(w.dep_push(Queue::Load, Queue::Compute));
    CHECK(w.error().status == Status::InsnsFull);
    CHECK(g.intact());
  }
  SUBCASE("micro-ops") {
    Guarded g;  // 12 micro-op words
    W w(l, 8192, g.st);
    std::vector<rt::UopOp> a(5), b(8);
    for (int i = 0; i < 5; ++i) a[static_cast<std::size_t>(i)] = {i, i, i};
    for (int i = 0; i < 8; ++i) b[static_cast<std::size_t>(i)] = {i + 100, i, i};
    REQUIRE(w.gemm(nullptr, 0, a.data(), a.size(), false));
    CHECK_FALSE(w.gemm(nullptr, 0, b.data(), b.size(), false));  // 5 + 8 > 12
    check_error(w.error(), Status::UopsFull, 2, Opcode::Gemm, Field::count, 0);
    CHECK(counts(g.st) == (Counts{2, 5, 1}));
    w.clear_error();
    // stored and resident: written again (encoding it needs room for its 5 words, 7 are left)
    REQUIRE(w.gemm(nullptr, 0, a.data(), a.size(), false));
    CHECK(counts(g.st) == (Counts{3, 5, 1}));
    CHECK(g.intact());
  }
  SUBCASE("kernels") {
    Guarded g;  // 2 kernels
    W w(l, 8192, g.st);
    const rt::UopOp k[3][1] = {{{1, 0, 0}}, {{2, 0, 0}}, {{3, 0, 0}}};
    REQUIRE(w.gemm(nullptr, 0, k[0], 1, false));
    REQUIRE(w.gemm(nullptr, 0, k[1], 1, false));  // loaded by k[0]'s LOAD UOP too
    CHECK_FALSE(w.gemm(nullptr, 0, k[2], 1, false));
    check_error(w.error(), Status::KernelsFull, 3, Opcode::Gemm, Field::count, 0);
    CHECK(g.st.insn_count() == 3);
    CHECK(g.st.reloc_count() == 1);
    w.clear_error();
    REQUIRE(w.gemm(nullptr, 0, k[0], 1, false));  // known: no new entry
    CHECK(g.st.insn_count() == 4);
    CHECK(g.intact());
  }
}

TEST_CASE("runtime writer: emit checks every field of an instruction's form") {
  const auto l = rt::IsaLayout::make(12, 9, 8, 10);  // acc 10 bits, inp 9, wgt 8, uop 12
  rt::FixedStorage<8, 8, 2> st;
  rt::StreamWriter<rt::FixedStorage<8, 8, 2>> w(l, 4096, st);
  rt::InsnFields g;
  g.opcode = Opcode::Gemm;
  g.uop_end = 8191;  // 13 bits: fits
  g.src_factor_in = 511;
  g.wgt_factor_out = 256;  // 9 bits: the first field that does not fit
  g.wgt_factor_in = 1000;
  CHECK_FALSE(w.emit(g));
  check_error(w.error(), Status::FieldRange, 0, Opcode::Gemm, Field::wgt_factor_out, 256);
  w.clear_error();
  rt::InsnFields a;
  a.opcode = Opcode::Alu;
  a.use_imm = true;
  a.imm = -40000;  // not a 16-bit value (a hand-filled InsnFields holds 32 bits)
  CHECK_FALSE(w.emit(a));
  check_error(w.error(), Status::FieldRange, 0, Opcode::Alu, Field::imm, -40000);
  w.clear_error();
  rt::InsnFields bad = a;
  bad.opcode = static_cast<Opcode>(6);
  CHECK_FALSE(w.emit(bad));
  check_error(w.error(), Status::FieldRange, 0, static_cast<Opcode>(6), Field::opcode, 6);
  w.clear_error();
  // an enum out of its range is named with its value
  rt::InsnFields m;
  m.opcode = Opcode::Store;
  m.memory_type = static_cast<MemId>(7);
  CHECK_FALSE(w.emit(m));
  check_error(w.error(), Status::FieldRange, 0, Opcode::Store, Field::memory_type, 7);
  w.clear_error();
  rt::InsnFields op = a;
  op.alu_opcode = static_cast<rt::AluOp>(9);
  CHECK_FALSE(w.emit(op));
  check_error(w.error(), Status::FieldRange, 0, Opcode::Alu, Field::alu_opcode, 9);
  w.clear_error();
  a.imm = -32768;
  a.alu_opcode = static_cast<rt::AluOp>(5);
  CHECK_FALSE(w.emit(a));
  w.clear_error();
  a.alu_opcode = rt::AluOp::Shr;
  REQUIRE(w.emit(a));
  g.wgt_factor_out = 255;
  g.wgt_factor_in = 255;
  REQUIRE(w.emit(g));
  REQUIRE(st.insn_count() == 2);
  CHECK(rt::unpack(l, st.insn(0)) == a);
  CHECK(rt::unpack(l, st.insn(1)) == g);
  // fail() from outside keeps the first failure
  rt::InsnFields none;
  CHECK_FALSE(w.fail(Status::Misaligned, none, Field::dram_base, 7));
  CHECK_FALSE(w.fail(Status::EmptyTransfer, none, Field::x_size, 0));
  check_error(w.error(), Status::Misaligned, 2, Opcode::Finish, Field::dram_base, 7);
}

TEST_CASE("runtime writer: dram_elem divides aligned byte addresses only") {
  using W = rt::StreamWriter<rt::SpanStorage>;
  i64 out = -1;
  CHECK(W::dram_elem(0x4000, 64, out));
  CHECK(out == 0x100);
  CHECK(W::dram_elem(48, 16, out));
  CHECK(out == 3);
  CHECK(W::dram_elem(3 * 48, 48, out));  // not a power of two
  CHECK(out == 3);
  out = -1;
  CHECK_FALSE(W::dram_elem(0x4010, 64, out));
  CHECK_FALSE(W::dram_elem(64, 0, out));
  CHECK(out == -1);
}

TEST_CASE("runtime writer: the lowest set bit, the compiler's and the portable one") {
  // DepTracker walks a region's overlaps by their lowest bits; the portable search stands in
  // where the compiler has no count of trailing zeros
  const auto naive = [](std::uint64_t m) {
    int n = 0;
    while ((m & 1) == 0) {
      m >>= 1;
      ++n;
    }
    return n;
  };
  static_assert(rt::lowest_bit_portable(std::uint64_t{1} << 63) == 63);
  static_assert(rt::lowest_bit(std::uint64_t{0x50}) == 4);
  for (int b = 0; b < 64; ++b) {
    CAPTURE(b);
    const std::uint64_t one = std::uint64_t{1} << b;
    CHECK(rt::lowest_bit_portable(one) == b);
    CHECK(rt::lowest_bit(one) == b);
    CHECK(rt::lowest_bit_portable(~std::uint64_t{0} << b) == b);
  }
  std::mt19937_64 rng(5);
  for (int k = 0; k < 10000; ++k) {
    const std::uint64_t m = rng() << (rng() % 64);  // its lowest bit anywhere
    if (m == 0) continue;
    CAPTURE(m);
    REQUIRE(rt::lowest_bit_portable(m) == naive(m));
    REQUIRE(rt::lowest_bit(m) == naive(m));
  }
}

// DepTracker::match against its definition, written out here pair by pair: over the regions in
// `only` (all where a region is past kMaskedRegions) touched then or now, each slot (a
// region's writer, its reader of each module) must be waited on by the same modules then and
// now, of those that reach its memory (load and compute INP and WGT, compute and store the
// accumulator, compute alone the micro-ops), an index x of module m waited on by module `to`
// where x is past covered[3m + to]; and the indices some module waits on, paired then with
// now, must be one instruction for one, in the same order among a module's. Random states,
// half of them a renaming of the earlier one with a slot or a covered index changed.
TEST_CASE("runtime writer: DepTracker::match is its definition, over random states") {
  struct Pair {
    i64 was, now;
    int module;
  };
  const MemId mems[] = {MemId::Inp, MemId::Wgt, MemId::Acc, MemId::Uop, MemId::Acc8};
  const auto reference = [&](const std::vector<rt::SramRegion>& regions,
                             const std::vector<rt::RegionState>& was, const i64* was_covered,
                             const std::vector<rt::RegionState>& now, const i64* now_covered,
                             std::uint64_t only, std::vector<Pair>& pairs) {
    pairs.clear();
    for (std::size_t r = 0; r < regions.size(); ++r) {
      if (r < rt::kMaskedRegions && ((only >> r) & 1U) == 0) continue;
      const rt::RegionState &a = was[r], &b = now[r];
      const i64 slots[2][4] = {{a.writer, a.reader[0], a.reader[1], a.reader[2]},
                               {b.writer, b.reader[0], b.reader[1], b.reader[2]}};
      const int modules[2][4] = {{static_cast<int>(a.writer_queue) - 1, 0, 1, 2},
                                 {static_cast<int>(b.writer_queue) - 1, 0, 1, 2}};
      bool touched = false;
      for (const auto& side : slots)
        for (const i64 x : side) touched = touched || x >= 0;
      if (!touched) continue;
      const MemId mem = regions[r].memory;
      const bool staged = mem == MemId::Inp || mem == MemId::Wgt;
      const bool reaches[3] = {staged, true, !staged && mem != MemId::Uop};
      for (int k = 0; k < 4; ++k) {
        bool any = false;
        for (int to = 0; to < 3; ++to) {
          if (!reaches[to]) continue;
          const auto waits = [&](int side, const i64* covered) {
            const i64 x = slots[side][k];
            const int m = modules[side][k];
            return x >= 0 && m != to && x > covered[(3 * m) + to];
          };
          const bool then = waits(0, was_covered), later = waits(1, now_covered);
          if (then != later) return false;
          any = any || then;
        }
        if (!any) continue;
        if (modules[0][k] != modules[1][k]) return false;
        pairs.push_back({slots[0][k], slots[1][k], modules[0][k]});
      }
    }
    for (const Pair& p : pairs)
      for (const Pair& q : pairs) {
        if ((p.was == q.was) != (p.now == q.now)) return false;
        if (p.module == q.module && (p.was < q.was) != (p.now < q.now)) return false;
      }
    return true;
  };
  std::mt19937_64 rng(11);
  const auto pick = [&](i64 lo, i64 hi) { return lo + static_cast<i64>(rng() % (hi - lo + 1)); };
  int same = 0, differ = 0;
  for (int k = 0; k < 20000; ++k) {
    CAPTURE(k);
    const std::size_t count = 1 + static_cast<std::size_t>(pick(0, 9)) + (k % 50 == 0 ? 64 : 0);
    std::vector<rt::SramRegion> regions(count);
    for (auto& reg : regions) reg.memory = mems[pick(0, 4)];
    const auto index = [&] { return rng() % 3 == 0 ? i64{-1} : pick(0, 11); };
    std::vector<rt::RegionState> was(count), now(count);
    rt::DepTracker deps(regions.data(), now.data(), count);  // (which resets `now`)
    for (auto& s : was) {
      s.writer = index();
      s.writer_queue = static_cast<Queue>(pick(1, 3));
      for (i64& x : s.reader) x = index();
    }
    i64 was_covered[9], now_covered[9];
    for (i64& c : was_covered) c = pick(-1, 11);
    // now: a renaming of then (each index moved by its module's shift), or states of its own
    const bool renamed = rng() % 2 == 0;
    const i64 shift[3] = {pick(0, 20), pick(0, 20), pick(0, 20)};
    const auto move = [&](i64 x, int m) { return x < 0 ? x : x + shift[m]; };
    for (std::size_t r = 0; r < count; ++r) {
      rt::RegionState& s = now[r];
      if (renamed) {
        s = was[r];
        s.writer = move(s.writer, static_cast<int>(s.writer_queue) - 1);
        for (int m = 0; m < 3; ++m) s.reader[m] = move(s.reader[m], m);
      } else {
        s.writer = index();
        s.writer_queue = static_cast<Queue>(pick(1, 3));
        for (i64& x : s.reader) x = index();
      }
    }
    for (int p = 0; p < 9; ++p)
      now_covered[p] = renamed ? move(was_covered[p], p / 3) : pick(-1, 11);
    if (renamed && rng() % 2 == 0) {  // one slot or covered index changed
      if (rng() % 3 == 0)
        now_covered[pick(0, 8)] = pick(-1, 30);
      else
        now[static_cast<std::size_t>(pick(0, static_cast<i64>(count) - 1))].reader[pick(0, 2)] =
            pick(-1, 30);
    }
    const std::uint64_t only = rng() % 4 == 0 ? ~std::uint64_t{0} : rng();
    for (std::size_t p = 0; p < 9; ++p) deps.set_covered(p, now_covered[p]);
    std::vector<i64> from(4 * count), to(4 * count);
    std::vector<std::uint8_t> module(4 * count);
    std::vector<std::uint32_t> where(4 * count);
    rt::IndexMap map{from.data(), to.data(), module.data(), where.data(), 4 * count, 0};
    std::vector<Pair> pairs;
    const bool expected = reference(regions, was, was_covered, now, now_covered, only, pairs);
    REQUIRE(deps.match(was.data(), was_covered, map, only) == expected);
    (expected ? same : differ) += 1;
    if (!expected) continue;
    // the renaming: each pair once, its slot holding the index now
    std::size_t distinct = 0;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      bool seen = false;
      for (std::size_t j = 0; j < i; ++j) seen = seen || pairs[j].was == pairs[i].was;
      distinct += seen ? 0 : 1;
      i64 y = -2;
      REQUIRE(map.find(pairs[i].was, y));
      CHECK(y == pairs[i].now);
    }
    REQUIRE(map.size == distinct);
    for (std::size_t i = 0; i < map.size; ++i) CHECK(deps.slot(where[i]) == to[i]);
  }
  MESSAGE(same, " states matched, ", differ, " did not");
  CHECK(same > 4000);
  CHECK(differ > 4000);
}

}  // namespace runtime_writer_test
