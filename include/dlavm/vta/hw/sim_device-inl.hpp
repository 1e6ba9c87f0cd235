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

DLAVM_INLINE RunResult SimDevice::run_at(const Stream& stream, const StreamPlacement& at) {
  if (check_hazards_) check_hazards(sim_.config(), stream);
  std::uint64_t insn_phys = 0;
  const auto words = place(stream, at, insn_phys);
  RunResult r;
  const auto info = sim_.run(insn_phys, static_cast<std::uint32_t>(words.size()));
  r.counters = info.counters;
  r.finished = info.finished;
  r.timing = model_.run(decode_all(sim_.layout(), words), trace_);
  return r;
}

}  // namespace dlavm::vta
