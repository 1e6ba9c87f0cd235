// The device interface: DRAM allocation with physical addresses, host copies, and running a
// stream. Implementations: SimDevice (vta/hw/sim_device.hpp) runs on the functional simulator
// plus the cycle model; DriverDevice (vta/hw/driver_device.hpp) runs on anything that
// implements the public VTA driver C API (a board, VTA's simulators, or
// tests/vta/sim_driver.cpp). Both place the stream in DRAM the way VTA's runtime does: the
// micro-op buffer and the instruction words in device memory, LOAD UOPs relocated to it.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/counters.hpp>
#include <dlavm/vta/hw/cycle_model.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace dlavm::vta {

// A DRAM buffer: its physical (byte) address and size.
struct Buffer {
  std::uint64_t phys = 0;
  std::size_t bytes = 0;
  friend bool operator==(const Buffer&, const Buffer&) = default;
};

// Where a stream goes in device memory: a buffer and byte offset for its instructions, and
// for its micro-ops.
struct StreamPlacement {
  Buffer insns;
  std::size_t insn_offset = 0;
  Buffer uops;
  std::size_t uop_offset = 0;
};

struct RunResult {
  Counters counters;   // SimDevice: measured; DriverDevice: derived from the stream
  CycleReport timing;  // the cycle model's estimate for the stream
  bool finished = false;
};

class Device {
 public:
  Device() = default;
  // A copy is another device: it gets its own liveness flag.
  Device(const Device& other) : trace_(other.trace_) {}
  Device& operator=(const Device& other) {
    trace_ = other.trace_;
    return *this;
  }
  virtual ~Device() { *alive_ = false; }

  // True while this device exists. Whoever keeps buffers of the device across calls (a
  // graph::Module keeping its weights resident) holds the flag and frees them only while it
  // is true; its address identifies the device.
  std::shared_ptr<const bool> alive() const { return alive_; }

  virtual const Config& config() const = 0;
  virtual Buffer alloc(std::size_t bytes) = 0;
  virtual void free(Buffer buffer) = 0;
  virtual void copy_in(Buffer dst, std::size_t offset, const void* src, std::size_t bytes) = 0;
  virtual void copy_out(Buffer src, std::size_t offset, void* dst, std::size_t bytes) = 0;
  // Runs a stream to completion, placed in buffers allocated for the run and freed after it;
  // raises DeviceError on failure.
  RunResult run(const Stream& stream);
  // Runs a stream placed where the caller says: its instructions at `insns`, its micro-ops at
  // `uops`, in buffers the caller owns (a graph::Module's insts and uop regions). ValueError
  // when the stream does not fit them.
  virtual RunResult run_at(const Stream& stream, const StreamPlacement& at) = 0;

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
  static void check_range(const char* what, Buffer b, std::size_t offset, std::size_t bytes);

  // Places the micro-op buffer at `uop_phys` and returns the relocated instruction words.
  static std::vector<InsnWord> relocate(const Stream& s, std::uint64_t uop_phys);
  // Copies the stream to its placement (checked) and returns the relocated instruction words
  // and the instructions' physical address.
  std::vector<InsnWord> place(const Stream& s, const StreamPlacement& at, std::uint64_t& insn_phys);
  static std::vector<std::byte> to_bytes(std::span<const InsnWord> words);
  static std::vector<std::byte> to_bytes(std::span<const std::uint32_t> uops);

  bool trace_ = false;

 private:
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/device-inl.hpp>
#endif
