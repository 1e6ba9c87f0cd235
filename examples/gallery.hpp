// Shared by the gallery programs: command-line options and the report each one prints.
#pragma once

#include <dlavm/vta.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace gallery {

struct Options {
  std::string dump;   // --dump DIR: raw instruction/micro-op files, DRAM images, manifest
  std::string trace;  // --trace FILE: Chrome/Perfetto timeline of the cycle model
  // --preset NAME: the VTA design to build for and simulate (vta::preset: sim, pynq, ultra96,
  // zcu104, de10nano, tsim)
  dlavm::vta::Config config;
};

inline Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--dump" || arg == "--trace") && i + 1 < argc) {
      (arg == "--dump" ? o.dump : o.trace) = argv[++i];
    } else if (arg == "--preset" && i + 1 < argc) {
      o.config = dlavm::vta::preset(argv[++i]);
    } else {
      fmt::print(stderr, "usage: {} [--dump DIR] [--trace FILE] [--preset NAME]\n", argv[0]);
      std::exit(2);
    }
  }
  return o;
}

// Prints the lowered program, stream sizes, simulator counters and cycle-model figures, and
// PASS or FAIL; returns the process exit code. `tiling_bytes` (when > 0) is the DRAM traffic
// the schedule's tiling needs, to compare with what the stream moved.
inline int report(const dlavm::vta::Program& prog, const dlavm::vta::ProgramRun& run, bool equal,
                  const Options& o, std::int64_t tiling_bytes = 0) {
  fmt::print("lowered TIR with VTA intrinsics:\n{}", dlavm::tir::to_string(prog.func()));
  fmt::print("stream: {} instructions, {} micro-ops\n", run.instructions, run.uops);
  const auto& c = run.result.counters;
  fmt::print("simulator: {}\n", c);
  const auto data_bytes =
      c.inp_load_bytes + c.wgt_load_bytes + c.acc_load_bytes + c.out_store_bytes;
  if (tiling_bytes > 0)
    fmt::print(
        "DRAM traffic: {} bytes of tensors (+ {} of micro-ops); the tiling needs {} ({:.2f}x)\n",
        data_bytes, c.uop_load_bytes, tiling_bytes,
        static_cast<double>(data_bytes) / static_cast<double>(tiling_bytes));
  const auto& t = run.result.timing;
  fmt::print("cycle model: {} cycles, roofline {} ({:.0f}% of the bound)\n", t.total_cycles,
             t.roofline_cycles,
             t.total_cycles ? 100.0 * static_cast<double>(t.roofline_cycles) /
                                  static_cast<double>(t.total_cycles)
                            : 0.0);
  if (!o.trace.empty()) {
    t.write_chrome_trace(o.trace);
    fmt::print("wrote trace {}\n", o.trace);
  }
  if (!o.dump.empty()) fmt::print("wrote {}/manifest.json\n", o.dump);
  if (!equal || !run.result.finished) {
    fmt::print("FAIL: {} differs from the reference\n", prog.name());
    return 1;
  }
  fmt::print("PASS: {} equals the reference\n", prog.name());
  return 0;
}

}  // namespace gallery
