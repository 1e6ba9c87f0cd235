// Definitions for dlavm/vta/hw/dump.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/dump.hpp>
#include <dlavm/vta/hw/excerpt.hpp>
#include <dlavm/vta/hw/io.hpp>

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

namespace dlavm::vta::detail {

// The DRAM bytes [first, end) a LOAD or STORE moves, in elements of `elem_bytes`; nothing for
// an instruction that moves none (another opcode, x_size or y_size 0) or that every device
// rejects anyway (a LOAD of OUT, a STORE of another memory type).
struct DramSpan {
  std::uint64_t first = 0, end = 0, elem_bytes = 1;
};
inline std::optional<DramSpan> dram_span(const Config& c, const InsnFields& f) {
  std::uint64_t eb = 0;
  if (f.opcode == Opcode::Load && f.memory_type != MemId::Out) {
    eb = c.elem_bytes(f.memory_type);
  } else if (f.opcode == Opcode::Store && f.memory_type == MemId::Out) {
    eb = c.out_elem_bytes();
  } else {
    return std::nullopt;
  }
  if (f.x_size == 0 || f.y_size == 0) return std::nullopt;
  // Fields are at most 32 bits and elements at most 2^18 bytes: no overflow in 64 bits.
  const std::uint64_t last_end =
      std::uint64_t{f.dram_base} + std::uint64_t{f.y_size - 1} * f.x_stride + f.x_size;
  return DramSpan{std::uint64_t{f.dram_base} * eb, last_end * eb, eb};
}

// Rewrites the dram_base field of a LOAD/STORE word, leaving every other bit as it was.
inline void set_dram_base(InsnWord& w, std::uint64_t elem) {
  const auto pos = IsaLayout::default_layout().pos(Form::Mem, Field::dram_base);
  w.word[pos.offset / 64] &= ~(runtime::low_mask(pos.width) << (pos.offset % 64));
  runtime::put_field(w, pos, elem);
}

inline std::span<const std::byte> dump_file(const DumpFiles& files, const std::string& name,
                                            std::string_view source, std::string_view what) {
  const auto it = files.find(name);
  if (it == files.end())
    raise<ParseError>("{}: file \"{}\" ({}) is missing", source, excerpt(name), what);
  return it->second;
}

// Checks the files of a validated manifest and decodes the stream (see load_dump).
inline Dump load_dump(Manifest m, const DumpFiles& files, std::string_view source) {
  Dump d;
  const auto insn_bytes = dump_file(files, m.insn_file, source, "instructions");
  if (insn_bytes.size() != m.insn_count * 16)
    raise<ParseError>("{}: \"{}\" holds {} bytes; the manifest counts {} instructions ({} bytes)",
                      source, excerpt(m.insn_file), insn_bytes.size(), m.insn_count,
                      m.insn_count * 16);
  const auto uop_bytes = dump_file(files, m.uop_file, source, "uops");
  if (uop_bytes.size() != m.uop_count * 4)
    raise<ParseError>("{}: \"{}\" holds {} bytes; the manifest counts {} micro-ops ({} bytes)",
                      source, excerpt(m.uop_file), uop_bytes.size(), m.uop_count, m.uop_count * 4);
  d.stream.insns = read_insn_file(insn_bytes, excerpt(m.insn_file));
  d.stream.uops = read_uop_file(uop_bytes, excerpt(m.uop_file));
  const auto prog = read_program(insn_bytes, m.config.layout(), excerpt(m.insn_file));
  const auto image = [&](const ManifestBuffer& b, const std::string& file, std::string_view kind) {
    if (file.empty()) return std::vector<std::byte>{};
    const auto what = fmt::format("{} of buffer '{}'", kind, excerpt(b.name));
    return read_dram_image(dump_file(files, file, source, what), static_cast<std::int64_t>(b.bytes),
                           excerpt(file));
  };
  for (const auto& b : m.buffers) {
    d.images.push_back(image(b, b.file, "DRAM image"));
    d.initial_images.push_back(image(b, b.initial_file, "initial DRAM image"));
  }
  // Buffers by address (validate() made them disjoint), to find the one a transfer is in.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> by_phys;
  for (std::size_t k = 0; k < m.buffers.size(); ++k)
    by_phys.emplace_back(m.buffers[k].phys_addr, static_cast<std::uint32_t>(k));
  std::sort(by_phys.begin(), by_phys.end());
  const std::uint64_t uop_end = m.uop_phys + m.uop_count * 4;
  for (std::size_t i = 0; i < prog.size(); ++i) {
    const auto span = dram_span(m.config, prog[i]);
    if (!span) continue;
    const auto index = static_cast<std::uint32_t>(i);
    if (prog[i].opcode == Opcode::Load && prog[i].memory_type == MemId::Uop &&
        span->first >= m.uop_phys && span->end <= uop_end) {
      set_dram_base(d.stream.insns[i], prog[i].dram_base - m.uop_phys / 4);
      d.stream.uop_relocs.push_back(index);
      continue;
    }
    auto it = std::upper_bound(by_phys.begin(), by_phys.end(),
                               std::pair{span->first, std::uint32_t{0xFFFFFFFF}});
    const bool inside = it != by_phys.begin() && [&] {
      const auto& b = m.buffers[std::prev(it)->second];
      return span->end <= b.phys_addr + b.bytes;
    }();
    if (!inside)
      raise<ParseError>(
          "{}: instruction #{} ({}) moves DRAM bytes [0x{:x}, 0x{:x}), which lie in no buffer "
          "of the manifest{}",
          source, i, disassemble(prog[i]), span->first, span->end,
          prog[i].memory_type == MemId::Uop ? " nor in its micro-op buffer" : "");
    d.transfers.push_back({index, std::prev(it)->second});
  }
  d.manifest = std::move(m);
  return d;
}

}  // namespace dlavm::vta::detail

namespace dlavm::vta {

DLAVM_INLINE Stream Dump::stream_at(std::span<const std::uint64_t> phys) const {
  if (phys.size() != manifest.buffers.size())
    raise<ValueError>("dump: {} addresses given for {} buffers", phys.size(),
                      manifest.buffers.size());
  Stream s = stream;
  const auto layout = manifest.config.layout();
  for (const auto& t : transfers) {
    const auto f = runtime::unpack(layout, s.insns[t.insn]);
    const auto span = detail::dram_span(manifest.config, f);
    const auto& b = manifest.buffers[t.buffer];
    if (!span || span->first < b.phys_addr)
      raise<ValueError>("internal: dump transfer #{} is not inside buffer '{}', please report",
                        t.insn, detail::excerpt(b.name));
    const std::uint64_t to = phys[t.buffer] + (span->first - b.phys_addr);
    if (to % span->elem_bytes != 0 || to / span->elem_bytes > runtime::low_mask(32))
      raise<ValueError>(
          "dump: buffer '{}' at 0x{:x}: instruction #{} ({}) would address byte 0x{:x}, which "
          "is not a {}-byte element address that dram_base holds; align the buffer to {} bytes",
          detail::excerpt(b.name), phys[t.buffer], t.insn, disassemble(f), to, span->elem_bytes,
          span->elem_bytes);
    detail::set_dram_base(s.insns[t.insn], to / span->elem_bytes);
  }
  return s;
}

DLAVM_INLINE ReplayResult replay(Device& dev, const Dump& dump) {
  const auto& m = dump.manifest;
  if (dev.config() != m.config)
    raise<ConfigError>("replay: the device is configured as {}, the dump as {}", dev.config(),
                       m.config);
  std::vector<Buffer> buffers;
  struct Release {
    Device& dev;
    std::vector<Buffer>& buffers;
    ~Release() {
      for (const auto& b : buffers) dev.free(b);
    }
  } release{dev, buffers};
  std::vector<std::uint64_t> phys;
  for (std::size_t k = 0; k < m.buffers.size(); ++k) {
    const auto& b = m.buffers[k];
    const auto bytes = static_cast<std::size_t>(b.bytes);
    buffers.push_back(dev.alloc(std::max<std::size_t>(bytes, 1)));
    phys.push_back(buffers.back().phys);
    // an input's image, an output's initial image, or zeros
    const auto& in = b.output ? dump.initial_images[k] : dump.images[k];
    const std::vector<std::byte> zeros(in.empty() ? bytes : 0);
    dev.copy_in(buffers.back(), 0, in.empty() ? zeros.data() : in.data(), bytes);
  }
  ReplayResult r;
  r.result = dev.run(dump.stream_at(phys));
  for (std::size_t k = 0; k < buffers.size(); ++k) {
    r.images.emplace_back(static_cast<std::size_t>(m.buffers[k].bytes));
    dev.copy_out(buffers[k], 0, r.images.back().data(), r.images.back().size());
  }
  return r;
}

}  // namespace dlavm::vta
