// The counters VTA's reference simulator keeps: bytes loaded per memory type, bytes stored,
// and GEMM / ALU micro-op executions (iter_out x iter_in x micro-ops; resetting GEMMs are not
// counted, as in the reference).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/vta/hw/config.hpp>

#include <fmt/format.h>

#include <cstdint>

namespace dlavm::vta {

struct Counters {
  std::uint64_t inp_load_bytes = 0;
  std::uint64_t wgt_load_bytes = 0;
  std::uint64_t acc_load_bytes = 0;  // ACC and ACC_8BIT loads (DRAM bytes read)
  std::uint64_t uop_load_bytes = 0;
  std::uint64_t out_store_bytes = 0;
  std::uint64_t gemm_uops = 0;
  std::uint64_t alu_uops = 0;

  std::uint64_t load_bytes() const;
  std::uint64_t memory_bytes() const { return load_bytes() + out_store_bytes; }
  // Multiply-accumulates the GEMM micro-ops performed: uops x BATCH x BLOCK_IN x BLOCK_OUT.
  std::uint64_t gemm_macs(const Config& c) const;
  Counters& operator+=(const Counters& o);
  friend bool operator==(const Counters&, const Counters&) = default;

  // Adds what one instruction contributes (counters are a function of the stream alone).
  void count(const Config& c, const InsnFields& f);
};

}  // namespace dlavm::vta

template <>
struct fmt::formatter<dlavm::vta::Counters> : fmt::formatter<std::string_view> {
  format_context::iterator format(const dlavm::vta::Counters& c, format_context& ctx) const;
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/counters-inl.hpp>
#endif
