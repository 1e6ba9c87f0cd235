// The C interface of the public VTA driver (vta/driver.h in TVM): memory allocation with
// physical addresses, host copies, cache maintenance and running an instruction stream that
// sits in DRAM. Only declared here; a board support package, VTA's simulators, or an in-repo
// implementation (tests/vta/sim_driver.cpp) defines them. vta::DriverDevice calls them.
// Define USE_VTA64 for 64-bit physical addresses, as VTA does.
#pragma once

#include <cstddef>
#include <cstdint>

#ifndef VTA_DRIVER_H_
extern "C" {

typedef void* VTADeviceHandle;
#ifdef USE_VTA64
typedef std::uint64_t vta_phy_addr_t;
#else
typedef std::uint32_t vta_phy_addr_t;
#endif

VTADeviceHandle VTADeviceAlloc();
void VTADeviceFree(VTADeviceHandle handle);
// Returns 0 when the stream finished, 1 on timeout (wait_cycles exhausted).
int VTADeviceRun(VTADeviceHandle device, vta_phy_addr_t insn_phy_addr, std::uint32_t insn_count,
                 std::uint32_t wait_cycles);
void* VTAMemAlloc(std::size_t size, int cached);
void VTAMemFree(void* buf);
vta_phy_addr_t VTAMemGetPhyAddr(void* buf);
void VTAMemCopyFromHost(void* dst, const void* src, std::size_t size);
void VTAMemCopyToHost(void* dst, const void* src, std::size_t size);
void VTAFlushCache(void* vir_addr, vta_phy_addr_t phy_addr, int size);
void VTAInvalidateCache(void* vir_addr, vta_phy_addr_t phy_addr, int size);

}  // extern "C"
#endif

namespace dlavm::runtime {

// The driver API as a policy: vta::DriverDevice<Api> calls only these, so tests or a board
// support package may substitute their own functions.
struct VtaDriverApi {
  static VTADeviceHandle device_alloc() { return ::VTADeviceAlloc(); }
  static void device_free(VTADeviceHandle h) { ::VTADeviceFree(h); }
  static int device_run(VTADeviceHandle h, vta_phy_addr_t insn, std::uint32_t count,
                        std::uint32_t wait) {
    return ::VTADeviceRun(h, insn, count, wait);
  }
  static void* mem_alloc(std::size_t size, int cached) { return ::VTAMemAlloc(size, cached); }
  static void mem_free(void* p) { ::VTAMemFree(p); }
  static vta_phy_addr_t phy_addr(void* p) { return ::VTAMemGetPhyAddr(p); }
  static void copy_from_host(void* dst, const void* src, std::size_t n) {
    ::VTAMemCopyFromHost(dst, src, n);
  }
  static void copy_to_host(void* dst, const void* src, std::size_t n) {
    ::VTAMemCopyToHost(dst, src, n);
  }
  static void flush(void* v, vta_phy_addr_t p, int n) { ::VTAFlushCache(v, p, n); }
  static void invalidate(void* v, vta_phy_addr_t p, int n) { ::VTAInvalidateCache(v, p, n); }
};

}  // namespace dlavm::runtime
