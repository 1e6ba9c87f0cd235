// An implementation of the public VTA driver C API (vta/driver.h) backed by dlavm's
// functional simulator: the "board" of the firmware example and of vta::DriverDevice's tests.
// Like VTA's own simulator drivers, VTAMemAlloc hands out host memory that the simulated DRAM
// uses. It needs only the simulator (which builds for 32-bit ARM too, without Highway: define
// DLAVM_SIM_NO_SIMD, and FMT_HEADER_ONLY where no libfmt is installed for the target).
#include <dlavm/runtime/driver_api.hpp>
#include <dlavm/vta/hw/simulator.hpp>

#include <cstring>
#include <map>
#include <memory>
#include <string>

namespace {

struct SimDriver {
  dlavm::vta::Simulator sim{dlavm::vta::Config{}};
  std::map<const void*, std::uint64_t> phys;
  std::string last_error;
  int devices = 0;
};

// Never destroyed: a session with static storage may free its memory after main returns.
SimDriver& driver() {
  static SimDriver* d = new SimDriver;
  return *d;
}

}  // namespace

// For tests: the simulator behind the driver, and the message of the last failed run.
dlavm::vta::Simulator& dlavm_sim_driver_simulator() { return driver().sim; }
const std::string& dlavm_sim_driver_last_error() { return driver().last_error; }
int dlavm_sim_driver_open_devices() { return driver().devices; }

extern "C" {

VTADeviceHandle VTADeviceAlloc() {
  ++driver().devices;
  return &driver();
}
void VTADeviceFree(VTADeviceHandle) { --driver().devices; }

int VTADeviceRun(VTADeviceHandle handle, vta_phy_addr_t insn_phy_addr, std::uint32_t insn_count,
                 std::uint32_t) {
  auto& d = *static_cast<SimDriver*>(handle);
  try {
    const auto info = d.sim.run(insn_phy_addr, insn_count);
    return info.finished ? 0 : 1;
  } catch (const dlavm::Error& e) {
    d.last_error = e.what();
    return 2;
  }
}

void* VTAMemAlloc(std::size_t size, int) {
  auto& d = driver();
  try {
    const auto phys = d.sim.dram().alloc(size);
    void* p = d.sim.dram().allocation(phys).data();
    d.phys[p] = phys;
    return p;
  } catch (const dlavm::Error& e) {
    d.last_error = e.what();
    return nullptr;
  }
}
void VTAMemFree(void* buf) {
  auto& d = driver();
  const auto it = d.phys.find(buf);
  if (it == d.phys.end()) return;
  d.sim.dram().free(it->second);
  d.phys.erase(it);
}
vta_phy_addr_t VTAMemGetPhyAddr(void* buf) {
  const auto it = driver().phys.find(buf);
  return it == driver().phys.end() ? 0 : static_cast<vta_phy_addr_t>(it->second);
}
void VTAMemCopyFromHost(void* dst, const void* src, std::size_t size) {
  if (size) std::memcpy(dst, src, size);
}
void VTAMemCopyToHost(void* dst, const void* src, std::size_t size) {
  if (size) std::memcpy(dst, src, size);
}
void VTAFlushCache(void*, vta_phy_addr_t, int) {}
void VTAInvalidateCache(void*, vta_phy_addr_t, int) {}

}  // extern "C"
