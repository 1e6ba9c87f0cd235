// SimDevice: a Device on the functional simulator. Streams run bit-exact (vta/hw/simulator.hpp),
// are first proven free of races between the modules (vta/hw/hazards.hpp; once per stream: the
// device keeps the streams it has proven, decoded where small, detail::DecodedStreams), and are
// timed by
// the cycle model (vta/hw/cycle_model.hpp). Like DriverDevice's wait_cycles, a work budget per
// run (Simulator::kDefaultWorkBudget units unless set) stops a stream that would run for
// minutes with a DeviceError naming the instruction; configurations whose SRAMs exceed
// Simulator::kMaxSramBytes are refused by the constructor.
//
//   vta::SimDevice dev(env.config);
//   dev.set_work_budget(std::uint64_t{1} << 30);   // for a very long stream
//   auto result = dev.run(stream);   // result.counters, result.timing.total_cycles
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/cycle_model.hpp>
#include <dlavm/vta/hw/decoded_streams.hpp>
#include <dlavm/vta/hw/device.hpp>
#include <dlavm/vta/hw/simulator.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace dlavm::vta {

class SimDevice : public Device {
 public:
  explicit SimDevice(const Config& config = Config{}) : sim_(config), model_(config) {}
  SimDevice(const Config& config, const CycleParams& params)
      : sim_(config), model_(config, params) {}

  using Device::copy_in;
  using Device::copy_out;

  const Config& config() const override { return sim_.config(); }
  Simulator& simulator() { return sim_; }
  const CycleModel& cycle_model() const { return model_; }

  // The virtual functions defined in sim_device-inl.hpp are declared DLAVM_INLINE: header-only,
  // the class then has no key function and its vtable (with the simulator behind it) is
  // emitted only where a SimDevice is constructed, not in every file that includes this one.
  Buffer alloc(std::size_t bytes) override { return {sim_.dram().alloc(bytes), bytes}; }
  void free(Buffer b) override { sim_.dram().free(b.phys); }
  DLAVM_INLINE void copy_in(Buffer dst, std::size_t offset, const void* src,
                            std::size_t bytes) override;
  DLAVM_INLINE void copy_out(Buffer src, std::size_t offset, void* dst, std::size_t bytes) override;

  // Whether run() first proves the stream free of races (check_hazards); on by default. A
  // stream proven once is not checked again at the same placement, nor decoded again where its
  // decode was small enough to keep (detail::DecodedStreams): proven_streams() are kept, and
  // hazard_checks() counts the checks that ran. Of those, incremental_checks() checked only the
  // entries a stream's accesses add to those of a kept one with the same tokens
  // (check_hazards_like).
  void set_check_hazards(bool on) { check_hazards_ = on; }
  std::size_t proven_streams() const { return proven_.size(); }
  std::size_t hazard_checks() const { return hazard_checks_; }
  std::size_t incremental_checks() const { return incremental_checks_; }

  // Work units (GEMM and ALU micro-op executions, SRAM elements loaded or stored) one run may
  // use; an instruction that would exceed them raises DeviceError before it runs.
  void set_work_budget(std::uint64_t units) { sim_.set_work_budget(units); }
  std::uint64_t work_budget() const { return sim_.work_budget(); }

  using Device::run;
  DLAVM_INLINE RunResult run_at(const Stream& stream, const StreamPlacement& at) override;

 private:
  Simulator sim_;
  CycleModel model_;
  bool check_hazards_ = true;
  std::size_t hazard_checks_ = 0, incremental_checks_ = 0;
  // streams proven free of races, by content and micro-op base, with their decoded words
  detail::DecodedStreams proven_;
  DLAVM_INLINE RunResult run_decoded(std::span<const InsnFields> prog);
};

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/sim_device-inl.hpp>
#endif
