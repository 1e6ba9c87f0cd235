// Definitions for dlavm/vta/hw/sim_device.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/hazards.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <cstring>
#include <utility>

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
// are the words the simulator would read back from DRAM. A stream proven before at the same
// micro-op base has the same words: it is not checked again, and its decode is kept with it
// where the decode is small enough. A stream with the tokens of one proven before (a decode
// step's after the step before) is checked at the entries its accesses add alone.
DLAVM_INLINE RunResult SimDevice::run_at(const Stream& stream, const StreamPlacement& at) {
  std::uint64_t insn_phys = 0;
  const auto words = place(stream, at, insn_phys);
  if (!check_hazards_) return run_decoded(decode_all(sim_.layout(), words));
  const std::uint64_t uop_base = (at.uops.phys + at.uop_offset) / Config::uop_elem_bytes();
  const auto found = proven_.find(stream, uop_base);
  if (found.decoded) return run_decoded(*found.decoded);
  auto prog = proven_.decode(sim_.layout(), words, stream, uop_base);
  if (found.proven) return run_decoded(prog);
  ++hazard_checks_;
  const DecodedStream decoded{prog, stream.uops, uop_base};
  detail::HazardProof proof;  // (kept where the decode is)
  const auto like = proven_.find_like(prog);
  if (detail::check_hazards_proving(sim_.config(), decoded, like ? &like->stream : nullptr,
                                    like ? like->proof : nullptr,
                                    proven_.keeps_decode(stream) ? &proof : nullptr)
          .added_alone)
    ++incremental_checks_;
  const RunResult r = run_decoded(prog);
  proven_.insert(stream, uop_base, std::move(prog), std::move(proof));
  return r;
}

DLAVM_INLINE RunResult SimDevice::run_decoded(std::span<const InsnFields> prog) {
  RunResult r;
  const auto info = sim_.run(prog);
  r.counters = info.counters;
  r.finished = info.finished;
  r.timing = model_.run(prog, trace_);
  return r;
}

}  // namespace dlavm::vta
