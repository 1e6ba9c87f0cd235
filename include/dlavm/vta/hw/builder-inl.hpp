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

namespace detail {
inline const Config& validated(const Config& c) {
  c.validate();
  return c;
}
}  // namespace detail

DLAVM_INLINE Builder::Builder(const Config& config)
    : config_(detail::validated(config)),
      writer_(config_.layout(), config_.uop_depth(), storage_) {}

DLAVM_INLINE std::int64_t Builder::dram_elem(std::uint64_t phys, MemId m,
                                             std::int64_t offset) const {
  const auto bytes = config_.elem_bytes(m);
  if (phys % bytes != 0)
    raise<ValueError>("DRAM address 0x{:x} is not aligned to the {}-byte {} element", phys, bytes,
                      runtime::mem_name(m));
  return static_cast<std::int64_t>(phys / bytes) + offset;
}

// The writer's failure as the error a host caller gets: the messages name the instruction,
// the field and the numbers, as vta::encode's checks do. `what`: the method of a token error.
DLAVM_INLINE void Builder::check(const char* what) {
  if (writer_.ok()) return;
  const runtime::WriterError e = writer_.error();
  writer_.clear_error();
  const std::size_t index = e.index;
  InsnFields f;
  f.opcode = e.opcode;
  const char* kind = e.opcode == Opcode::Gemm ? "GEMM" : "ALU";
  using runtime::Status;
  switch (e.status) {
    case Status::Ok:
      return;
    case Status::FieldRange:
      check_field(layout(), f, e.field, e.value, index);  // raises with the field's message
      break;
    case Status::BadMemory:
      if (static_cast<MemId>(e.value) == MemId::Out)
        raise<ValueError>("LOAD #{}: memory type OUT cannot be loaded", index);
      raise<ValueError>("LOAD #{}: micro-ops are loaded by the builder itself", index);
    case Status::KernelEmpty:
      raise<ValueError>("{} #{}: micro-op kernel is empty", kind, index);
    case Status::KernelTooLarge:
      raise<CapacityError>("micro-op kernel of {} ops does not fit the {}-entry micro-op buffer",
                           e.value, config_.uop_depth());
    case Status::UopRange: {
      static constexpr const char* names[] = {"dst_idx", "src_idx", "wgt_idx"};
      const auto k = static_cast<std::size_t>(e.field);
      if (e.value < 0 || e.value > 0xFFFFFFFF)
        raise<EncodingError>("micro-op #{} of {} #{} field {} = {} is out of range", e.uop, kind,
                             index, names[k], e.value);
      runtime::Uop u;
      (k == 0 ? u.dst : k == 1 ? u.src : u.wgt) = static_cast<std::uint32_t>(e.value);
      encode_uop(layout(), u, e.uop);  // raises with the field's message
      break;
    }
    case Status::NotNeighbours:
      raise<ValueError>(
          "{}({}, {}): tokens only flow between neighbouring modules "
          "(load<->compute, compute<->store)",
          what, runtime::queue_name(e.from), runtime::queue_name(e.to));
    case Status::NoInstruction:
      raise<ValueError>("set_push: instruction #{} does not exist ({} emitted)", e.value, index);
    case Status::LoopShape:
      raise<ValueError>("micro-op kernel: at most two loop levels");
    case Status::Misaligned:
    case Status::EmptyTransfer:
    case Status::InsnsFull:
    case Status::UopsFull:
    case Status::KernelsFull:
      break;
    case Status::LoopDiverged:
      raise<ValueError>(
          "internal: a copied loop iteration diverged from the one recorded, at its call #{} "
          "(vta::Program::write with copy_loops = false writes every call), please report",
          e.value);
  }
  raise<ValueError>(
      "internal: stream writer failed with status {} at instruction #{}, please "
      "report",
      static_cast<int>(e.status), index);
}

DLAVM_INLINE void Builder::load(const Load2D& a) {
  writer_.load(a.memory, a.sram, a.dram, a.y_size, a.x_size, a.x_stride, a.y_pad_0, a.y_pad_1,
               a.x_pad_0, a.x_pad_1);
  check();
}

DLAVM_INLINE void Builder::store(const Store2D& a) {
  writer_.store(a.sram, a.dram, a.y_size, a.x_size, a.x_stride);
  check();
}

DLAVM_INLINE void Builder::kernel_parts(const UopKernel& k, std::vector<runtime::KernelLoop>& loops,
                                        std::vector<runtime::UopOp>& ops) {
  for (const auto& l : k.loops())
    loops.push_back({l.extent, l.dst_factor, l.src_factor, l.wgt_factor});
  for (const auto& o : k.ops()) ops.push_back({o.dst, o.src, o.wgt});
}

DLAVM_INLINE void Builder::check_kernel(const UopKernel& k, const char* what) const {
  if (!k.closed()) raise<ValueError>("{} #{}: micro-op kernel has an open loop", what, size());
}

DLAVM_INLINE void Builder::gemm(const UopKernel& k, bool reset) {
  check_kernel(k, "GEMM");
  std::vector<runtime::KernelLoop> loops;
  std::vector<runtime::UopOp> ops;
  kernel_parts(k, loops, ops);
  writer_.gemm(loops.data(), loops.size(), ops.data(), ops.size(), reset);
  check();
}

DLAVM_INLINE void Builder::alu(const UopKernel& k, AluOp op) {
  check_kernel(k, "ALU");
  std::vector<runtime::KernelLoop> loops;
  std::vector<runtime::UopOp> ops;
  kernel_parts(k, loops, ops);
  writer_.alu(loops.data(), loops.size(), ops.data(), ops.size(), op, false, 0);
  check();
}

DLAVM_INLINE void Builder::alu_imm(const UopKernel& k, AluOp op, std::int64_t imm) {
  check_kernel(k, "ALU");
  std::vector<runtime::KernelLoop> loops;
  std::vector<runtime::UopOp> ops;
  kernel_parts(k, loops, ops);
  writer_.alu(loops.data(), loops.size(), ops.data(), ops.size(), op, true, imm);
  check();
}

DLAVM_INLINE void Builder::dep_push(Queue from, Queue to) {
  writer_.dep_push(from, to);
  check("dep_push");
}

DLAVM_INLINE void Builder::set_push(std::size_t index, Queue to) {
  writer_.set_push(index, to);
  check("set_push");
}

DLAVM_INLINE void Builder::dep_pop(Queue from, Queue to) {
  writer_.dep_pop(from, to);
  check("dep_pop");
}

DLAVM_INLINE void Builder::barrier() {
  writer_.barrier();
  check("barrier");
}

DLAVM_INLINE void Builder::finish() {
  writer_.finish();
  check("finish");
}

DLAVM_INLINE void Builder::emit(InsnFields f) {
  encode(layout(), f, size());  // raises on a field that does not fit, with its message
  writer_.emit(f);
  check();
}

}  // namespace dlavm::vta
