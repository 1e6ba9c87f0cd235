// Blocked GEMM with double buffering through dependency tokens, with the builder alone.
// C (M x N) = int8(A (M x K) x W^T), M = 64 rows, K = 8 blocks of 16, N = 4 blocks of 16.
// For every K block the load module brings A's column block and W's tiles into one of two
// SRAM slots while the compute module multiplies the other slot: the load of block kb + 2
// waits for a token saying block kb's GEMM is done, and each GEMM waits for its loads.
// The same program with one slot serialises load and compute; the cycle model shows both.
//   builder_blocked_gemm [--dump DIR] [--trace FILE] [--preset NAME]
#include <dlavm/vta.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vta = dlavm::vta;
using vta::MemId;
using vta::Queue;

namespace {

constexpr std::int64_t M = 64, KB = 8, NB = 4, BLK = 16;

vta::Stream build(const vta::Config& config, std::int64_t a, std::int64_t w, std::int64_t c,
                  int slots) {
  vta::Builder b(config);
  vta::UopKernel reset;  // zero all M x NB accumulator tiles
  reset.loop_begin(M * NB, 1, 0);
  reset.push(0, 0);
  reset.loop_end();
  b.gemm(reset, true);
  for (std::int64_t kb = 0; kb < KB; ++kb) {
    const std::int64_t slot = kb % slots;
    if (kb >= slots) b.dep_pop(Queue::Compute, Queue::Load);  // slot free again
    // A[:, kb]: M rows, element m * KB + kb; W[:, kb]: NB tiles, element n * KB + kb.
    b.load({.memory = MemId::Inp,
            .sram = slot * M,
            .dram = a + kb,
            .y_size = M,
            .x_size = 1,
            .x_stride = KB});
    b.load({.memory = MemId::Wgt,
            .sram = slot * NB,
            .dram = w + kb,
            .y_size = NB,
            .x_size = 1,
            .x_stride = KB});
    b.dep_push(Queue::Load, Queue::Compute);
    b.dep_pop(Queue::Load, Queue::Compute);
    vta::UopKernel mm;  // acc[m * NB + n] += inp[slot * M + m] x wgt[slot * NB + n]^T
    mm.loop_begin(M, NB, 1, 0);
    mm.loop_begin(NB, 1, 0, 1);
    mm.push(0, slot * M, slot * NB);
    mm.loop_end();
    mm.loop_end();
    b.gemm(mm);
    if (kb + slots < KB) b.dep_push(Queue::Compute, Queue::Load);
  }
  b.dep_push(Queue::Compute, Queue::Store);
  b.dep_pop(Queue::Compute, Queue::Store);
  b.store({.sram = 0, .dram = c, .x_size = M * NB});
  b.finish();
  return b.take();
}

}  // namespace

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
  const std::size_t K = KB * BLK, N = NB * BLK;
  // DRAM layouts: A[m][kb][16] (row-major M x K), W[n][kb][16][16] (tiles of W, N x K
  // row-major regrouped), C[m][nb][16] (row-major M x N).
  std::vector<std::int8_t> a(M * K), wt(N * K), w_tiles(N * K);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::int8_t>((i * 29) % 255 - 127);
  for (std::size_t i = 0; i < wt.size(); ++i)
    wt[i] = static_cast<std::int8_t>((i * 53) % 251 - 125);
  for (std::size_t n = 0; n < N; ++n)  // W row n, column k -> tile (n / 16, k / 16)
    for (std::size_t k = 0; k < K; ++k)
      w_tiles[((n / BLK) * KB + k / BLK) * BLK * BLK + (n % BLK) * BLK + k % BLK] = wt[n * K + k];
  const auto A = dev.alloc_for(std::span<const std::int8_t>(a));
  const auto W = dev.alloc_for(std::span<const std::int8_t>(w_tiles));
  const auto C = dev.alloc(M * N);
  vta::Builder probe(config);
  const auto a0 = probe.dram_elem(A.phys, MemId::Inp), w0 = probe.dram_elem(W.phys, MemId::Wgt),
             c0 = probe.dram_elem(C.phys, MemId::Out);

  const auto single = dev.run(build(config, a0, w0, c0, 1));
  const vta::Stream stream = build(config, a0, w0, c0, 2);
  const auto r = dev.run(stream);
  std::vector<std::int8_t> c(M * N);
  dev.copy_out(C, std::span<std::int8_t>(c));
  std::size_t wrong = 0;
  for (std::size_t m = 0; m < M; ++m)
    for (std::size_t n = 0; n < N; ++n) {
      std::int32_t s = 0;
      for (std::size_t k = 0; k < K; ++k) s += a[m * K + k] * wt[n * K + k];
      if (c[m * N + n] != static_cast<std::int8_t>(s & 0xFF)) ++wrong;
    }

  fmt::print("{} instructions, {} micro-ops\n", stream.insns.size(), stream.uops.size());
  fmt::print("counters: {} ({} MACs)\n", r.counters, r.counters.gemm_macs(config));
  fmt::print("cycle model, double buffered: {}\n", r.timing);
  fmt::print("cycle model, single buffered: {}\n", single.timing);
  fmt::print("double buffering saves {:.1f}% of the cycles; {:.2f}x the roofline bound\n",
             100.0 * (1.0 - double(r.timing.total_cycles) / double(single.timing.total_cycles)),
             double(r.timing.total_cycles) / double(r.timing.roofline_cycles));
  if (!trace.empty()) r.timing.write_chrome_trace(trace);
  if (!dump.empty()) {
    const auto uop = dev.alloc(stream.uop_bytes());
    vta::dump_stream(dump, config, stream, uop.phys,
                     {vta::dump_buffer(dev, A, dump, "A", dlavm::DType::int8(), false),
                      vta::dump_buffer(dev, W, dump, "W", dlavm::DType::int8(), false),
                      vta::dump_buffer(dev, C, dump, "C", dlavm::DType::int8(), true)});
    fmt::print("wrote {}/manifest.json\n", dump);
  }
  if (wrong != 0 || !r.finished || r.timing.total_cycles >= single.timing.total_cycles) {
    fmt::print("FAIL: {} of {} outputs differ from the reference\n", wrong, M * N);
    return 1;
  }
  fmt::print("PASS: blocked GEMM equals the reference\n");
  return 0;
} catch (const dlavm::Error& e) {
  // A user mistake (a bad path, a schedule that does not fit): the message, not an abort.
  fmt::print(stderr, "error: {}\n", e.what());
  return 1;
}
