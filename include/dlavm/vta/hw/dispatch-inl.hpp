// Definitions for dlavm/vta/hw/dispatch.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/dispatch.hpp>

#include <algorithm>

namespace dlavm::vta::detail {

DLAVM_INLINE void check_dep_flags(const InsnFields& f, std::size_t i) {
  const auto q = runtime::queue_of(f);
  if (q == Queue::Load && (f.pop_prev_dep || f.push_prev_dep))
    raise<DeviceError>(
        "{} #{} runs on the load module, which has no previous module: "
        "pop_prev_dep / push_prev_dep must be 0",
        insn_name(f), i);
  if (q == Queue::Store && (f.pop_next_dep || f.push_next_dep))
    raise<DeviceError>(
        "{} #{} runs on the store module, which has no next module: "
        "pop_next_dep / push_next_dep must be 0",
        insn_name(f), i);
}

}  // namespace dlavm::vta::detail
