// Definitions for dlavm/vta/hw/sim_device.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/hazards.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <cstring>

namespace dlavm::vta {

DLAVM_INLINE void SimDevice::copy_in(Buffer dst, std::size_t offset, const void* src,
                                     std::size_t bytes) {
  check_range("copy_in", dst, offset, bytes);
  if (bytes) std::memcpy(sim_.dram().allocation(dst.phys).data() + offset, src, bytes);
}

DLAVM_INLINE void SimDevice::copy_out(Buffer src, std::size_t offset, void* dst,
                                      std::size_t bytes) {
  check_range("copy_out", src, offset, bytes);
  if (bytes) std::memcpy(dst, sim_.dram().allocation(src.phys).data() + offset, bytes);
}

DLAVM_INLINE RunResult SimDevice::run(const Stream& stream) {
  if (check_hazards_) check_hazards(sim_.config(), stream);
  struct Scoped {
    SimDevice& d;
    Buffer b;
    ~Scoped() { d.sim_.dram().free_noexcept(b.phys); }
  };
  Scoped uops{*this, alloc(stream.uop_bytes())};
  const auto words = relocate(stream, uops.b.phys);
  Scoped insns{*this, alloc(stream.insn_bytes())};
  const auto uop_bytes = to_bytes(std::span<const std::uint32_t>(stream.uops));
  const auto insn_bytes = to_bytes(std::span<const InsnWord>(words));
  copy_in(uops.b, 0, uop_bytes.data(), uop_bytes.size());
  copy_in(insns.b, 0, insn_bytes.data(), insn_bytes.size());
  RunResult r;
  const auto info = sim_.run(insns.b.phys, static_cast<std::uint32_t>(words.size()));
  r.counters = info.counters;
  r.finished = info.finished;
  r.timing = model_.run(decode_all(sim_.layout(), words), trace_);
  return r;
}

}  // namespace dlavm::vta
