// Definitions for dlavm/vta/hw/builder.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/builder.hpp>

namespace dlavm::vta {

DLAVM_INLINE void UopKernel::loop_begin(std::int64_t extent, std::int64_t dst_factor,
                                        std::int64_t src_factor, std::int64_t wgt_factor) {
  if (loops_.size() == 2) raise<ValueError>("micro-op kernel: at most two loop levels");
  if (!ops_.empty())
    raise<ValueError>("micro-op kernel: loop_begin after push; loops must enclose every op");
  if (extent < 1) raise<ValueError>("micro-op kernel: loop extent {} must be positive", extent);
  loops_.push_back({extent, dst_factor, src_factor, wgt_factor});
  ++open_;
}

DLAVM_INLINE void UopKernel::loop_end() {
  if (open_ == 0) raise<ValueError>("micro-op kernel: loop_end without loop_begin");
  --open_;
}

DLAVM_INLINE void UopKernel::push(std::int64_t dst, std::int64_t src, std::int64_t wgt) {
  if (open_ != loops_.size())
    raise<ValueError>("micro-op kernel: push after loop_end; loops must enclose every op");
  ops_.push_back({dst, src, wgt});
}

DLAVM_INLINE std::int64_t Builder::dram_elem(std::uint64_t phys, MemId m,
                                             std::int64_t offset) const {
  const auto bytes = config_.elem_bytes(m);
  if (phys % bytes != 0)
    raise<ValueError>("DRAM address 0x{:x} is not aligned to the {}-byte {} element", phys, bytes,
                      runtime::mem_name(m));
  return static_cast<std::int64_t>(phys / bytes) + offset;
}

DLAVM_INLINE void Builder::load(const Load2D& a) {
  if (a.memory == MemId::Out)
    raise<ValueError>("LOAD #{}: memory type OUT cannot be loaded", size());
  if (a.memory == MemId::Uop)
    raise<ValueError>("LOAD #{}: micro-ops are loaded by the builder itself", size());
  InsnFields f;
  f.opcode = Opcode::Load;
  f.memory_type = a.memory;
  set_mem(f, a.sram, a.dram, a.y_size, a.x_size, a.x_stride);
  set(f, Field::y_pad_0, a.y_pad_0);
  set(f, Field::y_pad_1, a.y_pad_1);
  set(f, Field::x_pad_0, a.x_pad_0);
  set(f, Field::x_pad_1, a.x_pad_1);
  append(f);
}

DLAVM_INLINE void Builder::store(const Store2D& a) {
  InsnFields f;
  f.opcode = Opcode::Store;
  f.memory_type = MemId::Out;
  set_mem(f, a.sram, a.dram, a.y_size, a.x_size, a.x_stride);
  append(f);
}

DLAVM_INLINE void Builder::gemm(const UopKernel& k, bool reset) {
  InsnFields f;
  f.opcode = Opcode::Gemm;
  f.reset_reg = reset;
  push_kernel(f, k, true);
}

DLAVM_INLINE void Builder::alu(const UopKernel& k, AluOp op) {
  InsnFields f;
  f.opcode = Opcode::Alu;
  f.alu_opcode = op;
  push_kernel(f, k, false);
}

DLAVM_INLINE void Builder::alu_imm(const UopKernel& k, AluOp op, std::int64_t imm) {
  InsnFields f;
  f.opcode = Opcode::Alu;
  f.alu_opcode = op;
  f.use_imm = true;
  runtime::InsnFields probe = f;
  check_field(layout_, probe, Field::imm, imm, size());
  f.imm = static_cast<std::int32_t>(imm);
  push_kernel(f, k, false);
}

DLAVM_INLINE void Builder::dep_push(Queue from, Queue to) {
  check_neighbours("dep_push", from, to);
  commit_pending_pop(from);
  const bool next = from < to;
  if (!stream_.insns.empty() && runtime::queue_of(last_) == from) {
    bool& flag = next ? last_.push_next_dep : last_.push_prev_dep;
    if (!flag) {
      flag = true;
      stream_.insns.back() = runtime::pack(layout_, last_);
      return;
    }
  }
  InsnFields nop = make_nop(from);
  (next ? nop.push_next_dep : nop.push_prev_dep) = true;
  append(nop);
}

DLAVM_INLINE void Builder::set_push(std::size_t index, Queue to) {
  if (index >= stream_.insns.size())
    raise<ValueError>("set_push: instruction #{} does not exist ({} emitted)", index, size());
  // Only the header is needed: the module (opcode, memory type) and the flag's bit.
  auto& word = stream_.insns[index];
  InsnFields head;
  head.opcode =
      static_cast<Opcode>(runtime::get_field(word, layout_.pos(Form::Mem, Field::opcode)));
  head.memory_type =
      static_cast<MemId>(runtime::get_field(word, layout_.pos(Form::Mem, Field::memory_type)));
  const Queue from = runtime::queue_of(head);
  check_neighbours("set_push", from, to);
  const Field flag = from < to ? Field::push_next_dep : Field::push_prev_dep;
  runtime::put_field(word, layout_.pos(Form::Mem, flag), 1);
  if (index + 1 == stream_.insns.size()) last_.set(flag, 1);
}

DLAVM_INLINE void Builder::dep_pop(Queue from, Queue to) {
  check_neighbours("dep_pop", from, to);
  auto& pending = from < to ? pending_pop_prev_ : pending_pop_next_;
  if (pending[index(to)]) commit_pending_pop(to);
  pending[index(to)] = true;
}

DLAVM_INLINE void Builder::finish() {
  dep_push(Queue::Store, Queue::Compute);
  dep_push(Queue::Load, Queue::Compute);
  dep_pop(Queue::Store, Queue::Compute);
  dep_pop(Queue::Load, Queue::Compute);
  commit_pending_pop(Queue::Compute);
  InsnFields f;
  f.opcode = Opcode::Finish;
  append(f);
}

DLAVM_INLINE void Builder::emit(InsnFields f) {
  encode(layout_, f, size());  // raises on a field that does not fit
  append(f);
}

DLAVM_INLINE void Builder::append(InsnFields f) {
  check_enums(f, size());
  const auto q = runtime::queue_of(f);
  if (pending_pop_prev_[index(q)]) f.pop_prev_dep = true;
  if (pending_pop_next_[index(q)]) f.pop_next_dep = true;
  stream_.insns.push_back(runtime::pack(layout_, f));
  pending_pop_prev_[index(q)] = pending_pop_next_[index(q)] = false;
  last_ = f;
}

DLAVM_INLINE void Builder::check_neighbours(const char* what, Queue from, Queue to) {
  const int a = static_cast<int>(from), b = static_cast<int>(to);
  if (a < 1 || a > 3 || b < 1 || b > 3 || (a - b != 1 && b - a != 1))
    raise<ValueError>(
        "{}({}, {}): tokens only flow between neighbouring modules "
        "(load<->compute, compute<->store)",
        what, runtime::queue_name(from), runtime::queue_name(to));
}

DLAVM_INLINE InsnFields Builder::make_nop(Queue q) {
  InsnFields f;
  f.opcode = q == Queue::Store ? Opcode::Store : Opcode::Load;
  f.memory_type = q == Queue::Load ? MemId::Inp : q == Queue::Store ? MemId::Out : MemId::Uop;
  return f;
}

DLAVM_INLINE void Builder::commit_pending_pop(Queue q) {
  if (pending_pop_prev_[index(q)] || pending_pop_next_[index(q)]) append(make_nop(q));
}

DLAVM_INLINE void Builder::set(InsnFields& f, Field field, std::int64_t v) const {
  check_field(layout_, f, field, v, size());
  f.set(field, static_cast<std::uint64_t>(v));
}

DLAVM_INLINE void Builder::set_mem(InsnFields& f, std::int64_t sram, std::int64_t dram,
                                   std::int64_t y, std::int64_t x, std::int64_t stride) const {
  set(f, Field::sram_base, sram);
  set(f, Field::dram_base, dram);
  set(f, Field::y_size, y);
  set(f, Field::x_size, x);
  set(f, Field::x_stride, stride == kDenseStride ? x : stride);
}

DLAVM_INLINE void Builder::push_kernel(InsnFields f, const UopKernel& k, bool gemm) {
  const char* what = gemm ? "GEMM" : "ALU";
  if (!k.closed()) raise<ValueError>("{} #{}: micro-op kernel has an open loop", what, size());
  if (k.ops().empty()) raise<ValueError>("{} #{}: micro-op kernel is empty", what, size());
  std::vector<std::uint32_t> words;
  words.reserve(k.ops().size());
  for (std::size_t i = 0; i < k.ops().size(); ++i) {
    const auto& op = k.ops()[i];
    auto narrow = [&](const char* name, std::int64_t v) {
      if (v < 0 || v > 0xFFFFFFFF)
        raise<EncodingError>("micro-op #{} of {} #{} field {} = {} is out of range", i, what,
                             size(), name, v);
      return static_cast<std::uint32_t>(v);
    };
    const Uop u{narrow("dst_idx", op.dst), narrow("src_idx", op.src),
                gemm ? narrow("wgt_idx", op.wgt) : 0u};
    words.push_back(encode_uop(layout_, u, i));
  }
  const UopKernel::Loop none{};
  const auto& outer = k.loops().size() > 0 ? k.loops()[0] : none;
  const auto& inner = k.loops().size() > 1 ? k.loops()[1] : none;
  set(f, Field::iter_out, outer.extent);
  set(f, Field::iter_in, inner.extent);
  set(f, Field::dst_factor_out, outer.dst_factor);
  set(f, Field::dst_factor_in, inner.dst_factor);
  set(f, Field::src_factor_out, outer.src_factor);
  set(f, Field::src_factor_in, inner.src_factor);
  if (gemm) {
    set(f, Field::wgt_factor_out, outer.wgt_factor);
    set(f, Field::wgt_factor_in, inner.wgt_factor);
  }
  // Every loop field is checked before the kernel may emit its LOAD UOP.
  const auto sram = place_kernel(std::move(words));
  set(f, Field::uop_bgn, sram.first);
  set(f, Field::uop_end, sram.second);
  append(f);
}

DLAVM_INLINE std::pair<std::int64_t, std::int64_t> Builder::place_kernel(
    std::vector<std::uint32_t> words) {
  const auto n = static_cast<std::uint32_t>(words.size());
  if (n > config_.uop_depth())
    raise<CapacityError>("micro-op kernel of {} ops does not fit the {}-entry micro-op buffer", n,
                         config_.uop_depth());
  auto [it, inserted] =
      kernels_.try_emplace(std::move(words), static_cast<std::uint32_t>(stream_.uops.size()));
  if (inserted) stream_.uops.insert(stream_.uops.end(), it->first.begin(), it->first.end());
  const std::uint32_t dram = it->second;
  if (auto r = resident_.find(dram); r != resident_.end()) return {r->second, r->second + n};
  if (uop_next_ + n > config_.uop_depth()) {
    resident_.clear();
    uop_next_ = 0;
  }
  InsnFields f;
  f.opcode = Opcode::Load;
  f.memory_type = MemId::Uop;
  set_mem(f, uop_next_, dram, 1, n, n);
  stream_.uop_relocs.push_back(static_cast<std::uint32_t>(size()));
  append(f);
  resident_[dram] = uop_next_;
  uop_next_ += n;
  return {resident_[dram], resident_[dram] + n};
}

}  // namespace dlavm::vta
