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

// The placed words are decoded once, for the race check, the run and the cycle model: they
// are the words the simulator would read back from DRAM.
DLAVM_INLINE RunResult SimDevice::run_at(const Stream& stream, const StreamPlacement& at) {
  std::uint64_t insn_phys = 0;
  const auto prog = decode_all(sim_.layout(), place(stream, at, insn_phys));
  const std::uint64_t uop_base = (at.uops.phys + at.uop_offset) / Config::uop_elem_bytes();
  if (check_hazards_ && !race_free_.contains(stream, uop_base)) {
    check_hazards(sim_.config(), prog, stream.uops, uop_base);
    race_free_.insert(stream, uop_base);
  }
  RunResult r;
  const auto info = sim_.run(prog);
  r.counters = info.counters;
  r.finished = info.finished;
  r.timing = model_.run(prog, trace_);
  return r;
}

}  // namespace dlavm::vta
