// The fuzz targets' entry functions, shared by the libFuzzer binaries (fuzz/fuzz_target.cpp,
// built by `make fuzz` with clang) and by the corpus replay test (tests/fuzz_replay, built by
// `make test` with the normal compiler), both through run(). Each takes arbitrary bytes and
// either returns or raises a dlavm::Error whose message is bounded and printable (messages
// quote inputs); anything else (a foreign exception, a crash, a sanitizer report, or a
// PropertyViolation when a property below fails) is a bug.
//
//   config    vta_config.json text: vta::read_config; an accepted config round-trips through
//             to_json and can encode every instruction form with its largest indices.
//   dtype     a dtype name: DType::parse; an accepted one round-trips through str().
//   manifest  a dump in one input, its files separated by kFileSeparator: manifest.json,
//             insn.bin, uop.bin, then b0.bin, b1.bin, ... (the names the manifest should use):
//             load_dump; an accepted dump's manifest round-trips, and small dumps are replayed
//             on a SimDevice.
//   stream    byte 0: bit 0 skips the race check, bit 1 picks a small configuration instead of
//             the default; bytes 1-2: the micro-op count n (little endian); then n 4-byte
//             micro-ops and 16-byte instruction words. Decoded, disassembled, timed by the cycle
//             model (never faster than its roofline bound), and run on a SimDevice whose first
//             buffer, 64 KiB at 0x10000, holds data for the loads.
// Streams and dumps whose simulation would take more than kWorkBudget lane operations are only
// decoded and timed, not simulated. The ONNX importer's target, onnx (model bytes), is in
// fuzz/onnx_target.hpp: it needs the importer library, and this header stays free of protobuf.
#pragma once

#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw.hpp>
#include <dlavm/vta/hw/read.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm_fuzz {

namespace vta = dlavm::vta;

// A property of an accepted input failed: not a user error, a bug for the fuzzer to report.
struct PropertyViolation : std::logic_error {
  using std::logic_error::logic_error;
};

inline void require(bool ok, std::string_view what) {
  if (!ok) throw PropertyViolation(std::string(what));
}

inline std::string_view text_of(std::span<const std::uint8_t> data) {
  return {reinterpret_cast<const char*>(data.data()), data.size()};
}

inline constexpr std::uint64_t kWorkBudget = std::uint64_t{1} << 22;
inline constexpr std::string_view kFileSeparator = "\n#####\n";

inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

// The lane operations the simulator would perform for `prog` (GEMM multiply-accumulates, ALU
// lanes, bytes moved), saturating. A LOAD larger than its SRAM is cheap: it is rejected first.
inline std::uint64_t sim_work(const vta::Config& c, std::span<const vta::InsnFields> prog) {
  using vta::MemId;
  using vta::Opcode;
  std::uint64_t work = 0;
  const std::uint64_t gemm_lanes =
      std::uint64_t(c.batch()) * std::uint64_t(c.block_in()) * std::uint64_t(c.block_out());
  const std::uint64_t alu_lanes = std::uint64_t(c.batch()) * std::uint64_t(c.block_out());
  for (const auto& f : prog) {
    std::uint64_t w = 1;
    if (f.opcode == Opcode::Gemm || f.opcode == Opcode::Alu) {
      const std::uint64_t uops = f.uop_end > f.uop_bgn ? f.uop_end - f.uop_bgn : 0;
      w = std::uint64_t{f.iter_out} * f.iter_in * uops *
          (f.opcode == Opcode::Gemm ? gemm_lanes : alu_lanes);
    } else if (f.opcode == Opcode::Load && f.x_size != 0) {
      const std::uint64_t depth = f.memory_type == MemId::Uop   ? c.uop_depth()
                                  : f.memory_type == MemId::Inp ? c.inp_depth()
                                  : f.memory_type == MemId::Wgt ? c.wgt_depth()
                                                                : c.acc_depth();
      const std::uint64_t box = (std::uint64_t{f.y_pad_0} + f.y_size + f.y_pad_1) *
                                (std::uint64_t{f.x_pad_0} + f.x_size + f.x_pad_1);
      w = std::min(box, depth + 1) * c.elem_bytes(f.memory_type);
    } else if (f.opcode == Opcode::Store && f.x_size != 0) {
      w = std::min<std::uint64_t>(std::uint64_t{f.y_size} * f.x_size, c.acc_depth() + 1) *
          c.out_elem_bytes();
    }
    work = saturating_add(work, w);
  }
  return work;
}

// Host bytes a Simulator for `c` allocates for its SRAMs.
inline std::uint64_t sram_bytes(const vta::Config& c) {
  return (std::uint64_t{1} << c.log_inp_buff_size) + (std::uint64_t{1} << c.log_wgt_buff_size) +
         (std::uint64_t{1} << c.log_acc_buff_size) * 4 + std::uint64_t{c.uop_depth()} * 12;
}

// The cycle model's properties on a decoded stream (it raises DeviceError for a deadlock).
inline void check_timing(const vta::Config& c, std::span<const vta::InsnFields> prog) {
  const auto r = vta::CycleModel(c).run(prog, true);
  require(r.total_cycles >= r.roofline_cycles,
          fmt::format("cycle model: {} cycles beat the roofline bound {}", r.total_cycles,
                      r.roofline_cycles));
  require(r.trace.size() == prog.size(), "cycle model: trace misses instructions");
}

inline void config(std::span<const std::uint8_t> data) {
  const auto c = vta::read_config(text_of(data), "fuzz config");
  require(vta::read_config(c.to_json()) == c, "config: to_json does not round-trip");
  // A configuration that validates encodes every form with its largest indices.
  try {
    vta::Builder b{c};
    const std::int64_t inp = c.inp_depth() - 1, wgt = c.wgt_depth() - 1, acc = c.acc_depth() - 1;
    vta::UopKernel g;
    g.loop_begin(2, acc, inp, wgt);
    g.push(acc, inp, wgt);
    g.loop_end();
    b.gemm(g);
    vta::UopKernel a;
    a.loop_begin(2, acc, acc);
    a.push(acc, acc);
    a.loop_end();
    b.alu_imm(a, vta::AluOp::Add, -1);
    b.load({.memory = vta::MemId::Inp, .sram = inp, .x_size = 1});
    b.store({.sram = acc, .x_size = 1});
    b.finish();
    for (const auto& w : b.stream().insns) vta::decode(c.layout(), w);
  } catch (const dlavm::Error& e) {
    throw PropertyViolation(fmt::format("config validated but cannot encode: {}", e.what()));
  }
}

inline void dtype(std::span<const std::uint8_t> data) {
  const auto t = dlavm::DType::parse(text_of(data));
  require(dlavm::DType::parse(t.str()) == t, "dtype: str() does not round-trip");
}

inline void manifest(std::span<const std::uint8_t> data) {
  const auto text = text_of(data);
  vta::DumpFiles files;
  std::size_t start = 0;
  for (int k = 0;; ++k) {
    const auto end = std::min(text.find(kFileSeparator, start), text.size());
    const auto name = k == 0   ? std::string("manifest.json")
                      : k == 1 ? std::string("insn.bin")
                      : k == 2 ? std::string("uop.bin")
                               : fmt::format("b{}.bin", k - 3);
    files[name] = std::as_bytes(data.subspan(start, end - start));
    if (end == text.size()) break;
    start = end + kFileSeparator.size();
  }
  const auto dump = vta::load_dump(files, "fuzz dump");
  const auto& m = dump.manifest;
  require(vta::read_manifest(m.to_json()) == m, "manifest: to_json does not round-trip");
  const auto prog = vta::decode_all(m.config.layout(), dump.stream.insns);
  check_timing(m.config, prog);
  std::uint64_t bytes = 0;
  for (const auto& b : m.buffers) bytes += b.bytes;
  if (bytes > (1u << 20) || sram_bytes(m.config) > (64u << 20) ||
      sim_work(m.config, prog) > kWorkBudget)
    return;
  vta::SimDevice dev(m.config);
  const auto r = vta::replay(dev, dump);
  require(r.images.size() == m.buffers.size(), "replay: an image per buffer");
  require(dev.simulator().dram().allocation_count() == 0, "replay: buffers left allocated");
}

inline void stream(std::span<const std::uint8_t> data) {
  if (data.size() < 3)
    dlavm::raise<dlavm::ParseError>("fuzz stream: {} bytes, at least 3", data.size());
  vta::Config c;
  if ((data[0] & 2) != 0) {
    c.log_batch = 1;
    c.log_block_in = c.log_block_out = 3;
    c.log_uop_buff_size = 10;
    c.log_inp_buff_size = 10;
    c.log_wgt_buff_size = 12;
    c.log_acc_buff_size = 12;
  }
  const std::size_t n = data[1] | (std::size_t{data[2]} << 8);
  const auto rest = data.subspan(3);
  if (rest.size() < n * 4)
    dlavm::raise<dlavm::ParseError>("fuzz stream: {} micro-ops need {} bytes, {} left", n, n * 4,
                                    rest.size());
  vta::Stream s;
  s.uops = vta::read_uop_file(std::as_bytes(rest.first(n * 4)), "fuzz uops");
  s.insns = vta::read_insn_file(std::as_bytes(rest.subspan(n * 4)), "fuzz insns");
  const auto layout = c.layout();
  const auto prog = vta::decode_all(layout, s.insns);
  for (std::size_t i = 0; i < prog.size(); ++i)
    if (prog[i].opcode == vta::Opcode::Load && prog[i].memory_type == vta::MemId::Uop)
      s.uop_relocs.push_back(static_cast<std::uint32_t>(i));
  require(!vta::disassemble(layout, s).empty() || s.insns.empty(), "disassembly is empty");
  check_timing(c, prog);
  if (sim_work(c, prog) > kWorkBudget) return;
  vta::SimDevice dev(c);
  dev.set_check_hazards((data[0] & 1) == 0);
  const auto buf = dev.alloc(64 * 1024);
  std::vector<std::uint8_t> fill(buf.bytes);
  for (std::size_t i = 0; i < fill.size(); ++i)
    fill[i] = static_cast<std::uint8_t>(i * 131 +
                                        (data.size() > 3 ? data[3 + i % (data.size() - 3)] : 0));
  dev.copy_in(buf, std::span<const std::uint8_t>(fill));
  const auto r = dev.run(s);
  require(r.counters == r.timing.counters, "simulator and cycle model count differently");
}

using Entry = void (*)(std::span<const std::uint8_t>);

inline constexpr std::size_t kMaxMessage = 1024;

// Runs one input: true when `entry` accepted it, false when it raised a dlavm::Error (whose
// message is checked: printable, at most `max_message` bytes); PropertyViolation and foreign
// exceptions pass through.
inline bool run(Entry entry, std::span<const std::uint8_t> data,
                std::size_t max_message = kMaxMessage) {
  try {
    entry(data);
    return true;
  } catch (const dlavm::Error& e) {
    const std::string_view m = e.what();
    require(m.size() <= max_message,
            fmt::format("a message of {} bytes: {}...", m.size(), m.substr(0, 200)));
    require(std::none_of(m.begin(), m.end(),
                         [](char c) {
                           const auto u = static_cast<unsigned char>(c);
                           return (u < 0x20 && c != '\n') || u == 0x7F;
                         }),
            fmt::format("a message with control characters: {}", m.substr(0, 200)));
    return false;
  }
}

}  // namespace dlavm_fuzz
