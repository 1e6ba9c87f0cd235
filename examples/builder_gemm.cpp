// A 16x16 GEMM with the command builder alone: C = int8(A x W^T) for int8 A (16 x 16) and
// W (16 x 16). A is 16 input elements (one row of BLOCK_IN each), W one weight tile; one GEMM
// instruction loops over the 16 rows with a single micro-op.
//   builder_gemm [--dump DIR] [--trace FILE] [--preset NAME]
#include <dlavm/vta.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vta = dlavm::vta;
using vta::MemId;
using vta::Queue;

int main(int argc, char** argv) try {
  std::string dump, trace;
  vta::Config config;  // --preset NAME: the design to simulate (vta::preset)
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string opt = argv[i];
    if (opt == "--dump") dump = argv[i + 1];
    if (opt == "--trace") trace = argv[i + 1];
    if (opt == "--preset") config = vta::preset(argv[i + 1]);
  }
  vta::SimDevice dev(config);
  dev.set_trace(!trace.empty());
  const int n = 16;
  std::vector<std::int8_t> a(n * n), w(n * n);
  for (int i = 0; i < n * n; ++i) {
    a[static_cast<std::size_t>(i)] = static_cast<std::int8_t>((i * 37) % 255 - 127);
    w[static_cast<std::size_t>(i)] = static_cast<std::int8_t>((i * 91) % 253 - 126);
  }
  const auto A = dev.alloc_for(std::span<const std::int8_t>(a));
  const auto W = dev.alloc_for(std::span<const std::int8_t>(w));
  const auto C = dev.alloc(n * n);

  vta::Builder b(config);
  b.load({.memory = MemId::Inp, .dram = b.dram_elem(A.phys, MemId::Inp), .x_size = n});
  b.load({.memory = MemId::Wgt, .dram = b.dram_elem(W.phys, MemId::Wgt), .x_size = 1});
  b.dep_push(Queue::Load, Queue::Compute);
  b.dep_pop(Queue::Load, Queue::Compute);
  vta::UopKernel reset;  // acc[i] = 0
  reset.loop_begin(n, 1, 0);
  reset.push(0, 0);
  reset.loop_end();
  b.gemm(reset, true);
  vta::UopKernel mm;  // acc[i] += inp[i] x wgt[0]^T
  mm.loop_begin(n, 1, 1, 0);
  mm.push(0, 0, 0);
  mm.loop_end();
  b.gemm(mm);
  b.dep_push(Queue::Compute, Queue::Store);
  b.dep_pop(Queue::Compute, Queue::Store);
  b.store({.dram = b.dram_elem(C.phys, MemId::Out), .x_size = n});
  b.finish();
  const vta::Stream stream = b.take();
  fmt::print("{}", vta::disassemble(config.layout(), stream));

  const auto r = dev.run(stream);
  std::vector<std::int8_t> c(n * n);
  dev.copy_out(C, std::span<std::int8_t>(c));
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    for (int o = 0; o < n; ++o) {
      std::int32_t s = 0;
      for (int k = 0; k < n; ++k)
        s += a[static_cast<std::size_t>(i * n + k)] * w[static_cast<std::size_t>(o * n + k)];
      if (c[static_cast<std::size_t>(i * n + o)] != static_cast<std::int8_t>(s & 0xFF)) ++wrong;
    }

  fmt::print("counters: {} ({} MACs)\n", r.counters, r.counters.gemm_macs(config));
  fmt::print("cycle model: {}\n", r.timing);
  if (!trace.empty()) r.timing.write_chrome_trace(trace);
  if (!dump.empty()) {
    const auto uop = dev.alloc(stream.uop_bytes());
    vta::dump_stream(dump, config, stream, uop.phys,
                     {vta::dump_buffer(dev, A, dump, "A", dlavm::DType::int8(), false),
                      vta::dump_buffer(dev, W, dump, "W", dlavm::DType::int8(), false),
                      vta::dump_buffer(dev, C, dump, "C", dlavm::DType::int8(), true)});
    fmt::print("wrote {}/manifest.json\n", dump);
  }
  if (wrong != 0 || !r.finished) {
    fmt::print("FAIL: {} of {} outputs differ from the reference\n", wrong, n * n);
    return 1;
  }
  fmt::print("PASS: 16x16 GEMM equals the reference\n");
  return 0;
} catch (const dlavm::Error& e) {
  // A user mistake (a bad path, a schedule that does not fit): the message, not an abort.
  fmt::print(stderr, "error: {}\n", e.what());
  return 1;
}
