// Devices: DRAM allocation with physical addresses, host copies, and running a stream.
// SimDevice runs on the functional simulator (plus the cycle model); DriverDevice runs on
// anything that implements the public VTA driver C API (a board, VTA's simulators, or
// tests/vta/sim_driver.cpp). Both place the stream in DRAM the way VTA's runtime does: the
// micro-op buffer and the instruction words in device memory, LOAD UOPs relocated to it.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/runtime/driver_api.hpp>
#include <dlavm/vta/config.hpp>
#include <dlavm/vta/counters.hpp>
#include <dlavm/vta/cycle_model.hpp>
#include <dlavm/vta/hazards.hpp>
#include <dlavm/vta/isa.hpp>
#include <dlavm/vta/simulator.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <vector>

namespace dlavm::vta {

// A DRAM buffer: its physical (byte) address and size.
struct Buffer {
  std::uint64_t phys = 0;
  std::size_t bytes = 0;
  friend bool operator==(const Buffer&, const Buffer&) = default;
};

struct RunResult {
  Counters counters;   // SimDevice: measured; DriverDevice: derived from the stream
  CycleReport timing;  // the cycle model's estimate for the stream
  bool finished = false;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const Config& config() const = 0;
  virtual Buffer alloc(std::size_t bytes) = 0;
  virtual void free(Buffer buffer) = 0;
  virtual void copy_in(Buffer dst, std::size_t offset, const void* src, std::size_t bytes) = 0;
  virtual void copy_out(Buffer src, std::size_t offset, void* dst, std::size_t bytes) = 0;
  // Runs a stream to completion; raises DeviceError on failure.
  virtual RunResult run(const Stream& stream) = 0;

  template <class T>
  void copy_in(Buffer dst, std::span<const T> data, std::size_t offset = 0) {
    copy_in(dst, offset, data.data(), data.size_bytes());
  }
  template <class T>
  void copy_out(Buffer src, std::span<T> data, std::size_t offset = 0) {
    copy_out(src, offset, data.data(), data.size_bytes());
  }
  // A buffer of `count` elements of type T, filled from `data` when given.
  template <class T>
  Buffer alloc_for(std::span<const T> data) {
    const Buffer b = alloc(data.size_bytes());
    copy_in(b, data);
    return b;
  }

  // Records a chrome trace (RunResult::timing.trace) on every run.
  void set_trace(bool on) { trace_ = on; }

 protected:
  static void check_range(const char* what, Buffer b, std::size_t offset, std::size_t bytes) {
    if (offset > b.bytes || bytes > b.bytes - offset)
      raise<ValueError>("{}: bytes [{}, {}) outside the {}-byte buffer at 0x{:x}", what, offset,
                        offset + bytes, b.bytes, b.phys);
  }

  // Places the micro-op buffer at `uop_phys` and returns the relocated instruction words.
  static std::vector<InsnWord> relocate(const Stream& s, std::uint64_t uop_phys) {
    std::vector<InsnWord> words(s.insns.size());
    if (!s.relocate(uop_phys / Config::uop_elem_bytes(), words.data()))
      raise<DeviceError>("stream relocation failed: a LOAD UOP address does not fit dram_base");
    return words;
  }
  static std::vector<std::byte> to_bytes(std::span<const InsnWord> words) {
    std::vector<std::byte> out(words.size() * 16);
    for (std::size_t i = 0; i < words.size(); ++i)
      for (int h = 0; h < 2; ++h)
        for (int b = 0; b < 8; ++b)
          out[i * 16 + h * 8 + b] = static_cast<std::byte>((words[i].word[h] >> (8 * b)) & 0xFF);
    return out;
  }
  static std::vector<std::byte> to_bytes(std::span<const std::uint32_t> uops) {
    std::vector<std::byte> out(uops.size() * 4);
    for (std::size_t i = 0; i < uops.size(); ++i)
      for (int b = 0; b < 4; ++b)
        out[i * 4 + b] = static_cast<std::byte>((uops[i] >> (8 * b)) & 0xFF);
    return out;
  }

  bool trace_ = false;
};

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

  Buffer alloc(std::size_t bytes) override { return {sim_.dram().alloc(bytes), bytes}; }
  void free(Buffer b) override { sim_.dram().free(b.phys); }
  void copy_in(Buffer dst, std::size_t offset, const void* src, std::size_t bytes) override {
    check_range("copy_in", dst, offset, bytes);
    if (bytes) std::memcpy(sim_.dram().allocation(dst.phys).data() + offset, src, bytes);
  }
  void copy_out(Buffer src, std::size_t offset, void* dst, std::size_t bytes) override {
    check_range("copy_out", src, offset, bytes);
    if (bytes) std::memcpy(dst, sim_.dram().allocation(src.phys).data() + offset, bytes);
  }

  // Whether run() first proves the stream free of races (check_hazards); on by default.
  void set_check_hazards(bool on) { check_hazards_ = on; }

  RunResult run(const Stream& stream) override {
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

 private:
  Simulator sim_;
  CycleModel model_;
  bool check_hazards_ = true;
};

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

  RunResult run(const Stream& stream) override {
    struct Scoped {
      DriverDevice& d;
      Buffer b;
      ~Scoped() {
        const auto it = d.buffers_.find(b.phys);
        if (it == d.buffers_.end()) return;
        Api::mem_free(it->second.virt);
        d.buffers_.erase(it);
      }
    };
    Scoped uops{*this, alloc(stream.uop_bytes())};
    const auto words = relocate(stream, uops.b.phys);
    Scoped insns{*this, alloc(stream.insn_bytes())};
    const auto uop_bytes = to_bytes(std::span<const std::uint32_t>(stream.uops));
    const auto insn_bytes = to_bytes(std::span<const InsnWord>(words));
    copy_in(uops.b, 0, uop_bytes.data(), uop_bytes.size());
    copy_in(insns.b, 0, insn_bytes.data(), insn_bytes.size());
    const auto decoded = decode_all(config_.layout(), words);
    const int rc = Api::device_run(handle_, static_cast<vta_phy_addr_t>(insns.b.phys),
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
