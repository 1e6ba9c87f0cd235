// A race detector for instruction streams: proves that the dependency tokens order every pair
// of conflicting on-chip accesses (one of them a write) made by different modules the way the
// stream's order does. The simulator and the boards run the three modules concurrently, so a
// missing token is a race that may or may not show in one run's results; this check does not
// depend on timing.
//
// Happens-before comes from the modules' program order and the token queues (the k-th pop of
// a queue takes the k-th push), computed as vector clocks. Accesses are the entries each
// instruction touches: LOAD the padded box it writes, STORE the accumulator rows it reads,
// GEMM and ALU the range spanned by their micro-ops and loop factors (an over-approximation
// for kernels with gaps, which only makes the check stricter).
//
//   vta::check_hazards(config, stream);   // raises DeviceError naming both instructions
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dlavm::vta {

namespace detail {

struct Access {
  int memory;  // 0 inp, 1 wgt, 2 acc, 3 uop
  std::int64_t begin, end;
  bool write;
};

inline const char* hazard_mem_name(int m) {
  constexpr const char* names[] = {"input", "weight", "accumulator", "micro-op"};
  return names[m];
}

}  // namespace detail

void check_hazards(const Config& config, const Stream& stream);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/hazards-inl.hpp>
#endif
