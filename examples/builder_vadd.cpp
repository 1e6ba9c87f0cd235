// Vector add with the command builder alone (no tensor expressions): C = int8(A + B) for
// int32 vectors of 64 x 16 elements, the computation of VTA's get-started tutorial. A and B
// are loaded into the accumulator, one ALU ADD micro-op loops over the 64 tiles, and the sum
// is stored truncated to int8.
//   builder_vadd [--dump DIR] [--trace FILE] [--preset NAME]
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
  const std::int64_t tiles = 64;
  const auto n = static_cast<std::size_t>(tiles * config.block_out());
  std::vector<std::int32_t> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<std::int32_t>(i * 7 % 251) - 125;
    b[i] = static_cast<std::int32_t>(i * 13 % 97) - 48;
  }
  const auto A = dev.alloc_for(std::span<const std::int32_t>(a));
  const auto B = dev.alloc_for(std::span<const std::int32_t>(b));
  const auto C = dev.alloc(n);

  vta::Builder bld(config);
  bld.load({.memory = MemId::Acc,
            .sram = 0,
            .dram = bld.dram_elem(A.phys, MemId::Acc),
            .x_size = tiles});
  bld.load({.memory = MemId::Acc,
            .sram = tiles,
            .dram = bld.dram_elem(B.phys, MemId::Acc),
            .x_size = tiles});
  vta::UopKernel add;  // acc[i] += acc[tiles + i] for i in 0..tiles
  add.loop_begin(tiles, 1, 1);
  add.push(0, tiles);
  add.loop_end();
  bld.alu(add, vta::AluOp::Add);
  bld.dep_push(Queue::Compute, Queue::Store);
  bld.dep_pop(Queue::Compute, Queue::Store);
  bld.store({.sram = 0, .dram = bld.dram_elem(C.phys, MemId::Out), .x_size = tiles});
  bld.finish();
  const vta::Stream stream = bld.take();
  fmt::print("{}", vta::disassemble(config.layout(), stream));

  const auto r = dev.run(stream);
  std::vector<std::int8_t> c(n);
  dev.copy_out(C, std::span<std::int8_t>(c));
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (c[i] != static_cast<std::int8_t>((a[i] + b[i]) & 0xFF)) ++wrong;

  fmt::print("counters: {}\n", r.counters);
  fmt::print("cycle model: {}\n", r.timing);
  if (!trace.empty()) r.timing.write_chrome_trace(trace);
  if (!dump.empty()) {
    const auto uop = dev.alloc(stream.uop_bytes());
    vta::dump_stream(dump, config, stream, uop.phys,
                     {vta::dump_buffer(dev, A, dump, "A", dlavm::DType::int32(), false),
                      vta::dump_buffer(dev, B, dump, "B", dlavm::DType::int32(), false),
                      vta::dump_buffer(dev, C, dump, "C", dlavm::DType::int8(), true)});
    fmt::print("wrote {}/manifest.json\n", dump);
  }
  if (wrong != 0 || !r.finished) {
    fmt::print("FAIL: {} of {} elements differ from the reference\n", wrong, n);
    return 1;
  }
  fmt::print("PASS: {} elements equal int8(A + B)\n", n);
  return 0;
} catch (const dlavm::Error& e) {
  // A user mistake (a bad path, a schedule that does not fit): the message, not an abort.
  fmt::print(stderr, "error: {}\n", e.what());
  return 1;
}
