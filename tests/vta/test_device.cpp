#include <dlavm/vta.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace vta = dlavm::vta;
using vta::MemId;
using vta::Queue;

dlavm::vta::Simulator& dlavm_sim_driver_simulator();
const std::string& dlavm_sim_driver_last_error();
int dlavm_sim_driver_open_devices();

namespace {

// C = A x B^T for A: m x 16, B: 16 x 16 (int8), on any device; returns C (int8).
std::vector<std::int8_t> gemm_on(vta::Device& dev, const std::vector<std::int8_t>& a,
                                 const std::vector<std::int8_t>& w, vta::RunResult* result) {
  const auto m = static_cast<std::int64_t>(a.size() / 16);
  const auto A = dev.alloc_for(std::span<const std::int8_t>(a));
  const auto W = dev.alloc_for(std::span<const std::int8_t>(w));
  const auto C = dev.alloc(a.size());
  vta::Builder b{dev.config()};
  b.load({.memory = MemId::Inp, .dram = b.dram_elem(A.phys, MemId::Inp), .x_size = m});
  b.load({.memory = MemId::Wgt, .dram = b.dram_elem(W.phys, MemId::Wgt), .x_size = 1});
  b.dep_push(Queue::Load, Queue::Compute);
  b.dep_pop(Queue::Load, Queue::Compute);
  vta::UopKernel reset;
  reset.loop_begin(m, 1, 0);
  reset.push(0, 0);
  reset.loop_end();
  b.gemm(reset, true);
  vta::UopKernel k;
  k.loop_begin(m, 1, 1, 0);
  k.push(0, 0, 0);
  k.loop_end();
  b.gemm(k);
  b.dep_push(Queue::Compute, Queue::Store);
  b.dep_pop(Queue::Compute, Queue::Store);
  b.store({.dram = b.dram_elem(C.phys, MemId::Out), .x_size = m});
  b.finish();
  *result = dev.run(b.take());
  std::vector<std::int8_t> c(a.size());
  dev.copy_out(C, std::span<std::int8_t>(c));
  for (auto buf : {A, W, C}) dev.free(buf);
  return c;
}

}  // namespace

TEST_CASE("vta devices: SimDevice and DriverDevice over the C driver API agree") {
  std::vector<std::int8_t> a(8 * 16), w(16 * 16);
  std::mt19937 rng(5);
  for (auto& v : a) v = static_cast<std::int8_t>(rng());
  for (auto& v : w) v = static_cast<std::int8_t>(rng());
  std::vector<std::int8_t> expect(a.size());
  for (int i = 0; i < 8; ++i)
    for (int o = 0; o < 16; ++o) {
      std::int32_t s = 0;
      for (int k = 0; k < 16; ++k)
        s += a[static_cast<std::size_t>(i * 16 + k)] * w[static_cast<std::size_t>(o * 16 + k)];
      expect[static_cast<std::size_t>(i * 16 + o)] = static_cast<std::int8_t>(s & 0xFF);
    }
  vta::SimDevice sim;
  vta::RunResult rs;
  CHECK(gemm_on(sim, a, w, &rs) == expect);
  CHECK(sim.simulator().dram().allocation_count() == 0);  // run() frees its stream buffers
  const auto before = dlavm_sim_driver_simulator().counters();
  {
    vta::DriverDevice<> drv;
    CHECK(dlavm_sim_driver_open_devices() == 1);
    vta::RunResult rd;
    CHECK(gemm_on(drv, a, w, &rd) == expect);
    auto measured = dlavm_sim_driver_simulator().counters();
    measured.inp_load_bytes -= before.inp_load_bytes;
    measured.wgt_load_bytes -= before.wgt_load_bytes;
    measured.uop_load_bytes -= before.uop_load_bytes;
    measured.out_store_bytes -= before.out_store_bytes;
    measured.gemm_uops -= before.gemm_uops;
    measured.alu_uops -= before.alu_uops;
    measured.acc_load_bytes -= before.acc_load_bytes;
    CHECK(measured == rs.counters);
    CHECK(rd.counters == rs.counters);
    CHECK(rd.timing.total_cycles == rs.timing.total_cycles);
  }
  CHECK(dlavm_sim_driver_open_devices() == 0);
  CHECK(dlavm_sim_driver_simulator().dram().allocation_count() == 0);
}

TEST_CASE("vta devices: failures are DeviceErrors; copies are range-checked") {
  vta::DriverDevice<> drv;
  vta::Builder b{drv.config()};
  b.dep_pop(Queue::Store, Queue::Compute);  // never pushed
  b.finish();
  try {
    drv.run(b.stream());
    FAIL("no error");
  } catch (const dlavm::DeviceError& e) {
    CHECK(std::string(e.what()).find("VTADeviceRun returned 2") == 0);
    CHECK(dlavm_sim_driver_last_error().find("deadlock on dependency tokens") == 0);
  }
  vta::SimDevice sim;
  const auto buf = sim.alloc(8);
  std::vector<std::int8_t> big(16);
  CHECK_THROWS_AS(sim.copy_in(buf, std::span<const std::int8_t>(big)), dlavm::ValueError);
  CHECK_THROWS_AS(sim.free(vta::Buffer{buf.phys + 1, 1}), dlavm::DeviceError);
}

TEST_CASE("dram: a new allocation reads as zeros, a freed one's bytes included") {
  vta::Dram dram;
  const std::uint64_t a = dram.alloc(1000);
  const auto first = dram.allocation(a);
  REQUIRE(first.size() == 1000);
  for (const auto byte : first) CHECK(byte == std::byte{0});
  std::fill(first.begin(), first.end(), std::byte{0xab});
  dram.free(a);
  // the same address and size again: the host allocator may hand back the same block
  const std::uint64_t b = dram.alloc(1000);
  CHECK(b == a);
  const auto again = dram.allocation(b);
  CHECK(std::count(again.begin(), again.end(), std::byte{0}) == 1000);
  CHECK(dram.find(b + 999, 1) == again.data() + 999);
  CHECK(dram.find(b + 999, 2) == nullptr);
  CHECK(dram.in_use() == 1000);
}

// A memory plan is sized at the maxima of its symbolic dims (a 2,048-token LLM layer's runtime
// region and KV cache): an allocation takes host pages only where a run touches them. (Counted
// in the normal build: the sanitizers replace the allocator.)
TEST_CASE("dram: an allocation touches no host page until used" *
          doctest::skip(DLAVM_TEST_SANITIZED != 0)) {
  const auto minor_faults = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
  };
  vta::Dram dram;
  constexpr std::size_t kBytes = std::size_t{256} << 20;  // 65,536 pages of 4 KiB
  const long before = minor_faults();
  const std::uint64_t a = dram.alloc(kBytes);
  const long taken = minor_faults() - before;
  CHECK_MESSAGE(taken < 1024, "a 256 MiB allocation took ", taken, " page faults");
  const auto bytes = dram.allocation(a);
  CHECK(bytes[kBytes / 2] == std::byte{0});
  CHECK(bytes[kBytes - 1] == std::byte{0});
  dram.free(a);
}

// A host that cannot hold an allocation's copy: a DeviceError naming the bytes, not
// std::bad_alloc (checked in a child process whose address space is capped at 1 GiB; not under
// the sanitizers, which reserve more address space than that).
TEST_CASE("dram: an allocation the host cannot hold is a DeviceError" *
          doctest::skip(DLAVM_TEST_SANITIZED != 0)) {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const rlimit cap{std::size_t{1} << 30, std::size_t{1} << 30};
    setrlimit(RLIMIT_AS, &cap);
    vta::Dram dram;
    int code = 1;
    try {
      dram.alloc(std::size_t{3} << 30);
    } catch (const dlavm::DeviceError& e) {
      code = std::string(e.what()) ==
                     "DRAM allocation of 3221225472 bytes: the host has no memory for its copy"
                 ? 0
                 : 2;
    } catch (...) {
      code = 3;
    }
    _exit(code);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // 1: no error, 2: another message, 3: another exception
}
