// DriverDevice: a Device over the public VTA driver C API (VTAMemAlloc ... VTADeviceRun), for
// boards and VTA's own simulators. A template over the API so that tests can supply one. Every
// stream is first checked against the configuration's design (vta::check_stream): give it the
// board's preset (vta::preset("pynq")).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/runtime/driver_api.hpp>
#include <dlavm/vta/hw/check_stream.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/cycle_model.hpp>
#include <dlavm/vta/hw/device.hpp>

#include <cstddef>
#include <cstdint>
#include <map>

namespace dlavm::vta {

// A device over the public VTA driver API. `Api` supplies the functions (see
// runtime::VtaDriverApi, which calls the C functions VTAMemAlloc ... VTADeviceRun).
template <class Api = runtime::VtaDriverApi>
class DriverDevice : public Device {
 public:
  explicit DriverDevice(const Config& config = Config{}, std::uint32_t wait_cycles = 100'000'000)
      : config_(config), model_(config), wait_cycles_(wait_cycles) {
    config_.validate();
    handle_ = Api::device_alloc();
    if (!handle_) raise<DeviceError>("VTADeviceAlloc failed");
  }
  DriverDevice(const DriverDevice&) = delete;
  DriverDevice& operator=(const DriverDevice&) = delete;
  ~DriverDevice() override {
    for (auto& [phys, m] : buffers_) Api::mem_free(m.virt);
    Api::device_free(handle_);
  }

  using Device::copy_in;
  using Device::copy_out;

  const Config& config() const override { return config_; }

  Buffer alloc(std::size_t bytes) override {
    void* v = Api::mem_alloc(bytes == 0 ? 1 : bytes, 1);
    if (!v) raise<DeviceError>("VTAMemAlloc of {} bytes failed", bytes);
    const std::uint64_t phys = Api::phy_addr(v);
    buffers_[phys] = {v, bytes};
    return {phys, bytes};
  }
  void free(Buffer b) override {
    Api::mem_free(lookup("free", b).virt);
    buffers_.erase(b.phys);
  }
  void copy_in(Buffer dst, std::size_t offset, const void* src, std::size_t bytes) override {
    check_range("copy_in", dst, offset, bytes);
    auto* v = static_cast<std::byte*>(lookup("copy_in", dst).virt) + offset;
    Api::copy_from_host(v, src, bytes);
    Api::flush(v, static_cast<vta_phy_addr_t>(dst.phys + offset), static_cast<int>(bytes));
  }
  void copy_out(Buffer src, std::size_t offset, void* dst, std::size_t bytes) override {
    check_range("copy_out", src, offset, bytes);
    auto* v = static_cast<std::byte*>(lookup("copy_out", src).virt) + offset;
    Api::invalidate(v, static_cast<vta_phy_addr_t>(src.phys + offset), static_cast<int>(bytes));
    Api::copy_to_host(dst, v, bytes);
  }

  using Device::run;
  RunResult run_at(const Stream& stream, const StreamPlacement& at) override {
    std::uint64_t insn_phys = 0;
    const auto words = place(stream, at, insn_phys);
    const auto decoded = decode_all(config_.layout(), words);
    // a stream the board's design would run wrong never reaches it
    check_stream(config_, decoded);
    const int rc = Api::device_run(handle_, static_cast<vta_phy_addr_t>(insn_phys),
                                   static_cast<std::uint32_t>(words.size()), wait_cycles_);
    if (rc != 0)
      raise<DeviceError>(
          "VTADeviceRun returned {} for {} instructions (timeout after {} cycles "
          "or device failure)",
          rc, words.size(), wait_cycles_);
    RunResult r;
    r.timing = model_.run(decoded, trace_);
    r.counters = r.timing.counters;
    r.finished = true;
    return r;
  }

 private:
  struct Mapping {
    void* virt = nullptr;
    std::size_t bytes = 0;
  };
  Mapping& lookup(const char* what, Buffer b) {
    const auto it = buffers_.find(b.phys);
    if (it == buffers_.end())
      raise<ValueError>("{}: 0x{:x} is not a buffer of this device", what, b.phys);
    return it->second;
  }

  Config config_;
  CycleModel model_;
  std::uint32_t wait_cycles_;
  VTADeviceHandle handle_ = nullptr;
  std::map<std::uint64_t, Mapping> buffers_;
};

}  // namespace dlavm::vta
