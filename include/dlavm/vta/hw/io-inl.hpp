// Definitions for dlavm/vta/hw/io.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/json_writer.hpp>
#include <dlavm/vta/hw/config-inl.hpp>
#include <dlavm/vta/hw/excerpt.hpp>
#include <dlavm/vta/hw/io.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

namespace dlavm::vta {

DLAVM_INLINE std::vector<std::byte> read_bytes(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    raise<ParseError>("cannot read '{}': it is a directory", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) raise<ParseError>("cannot open '{}'", path);
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(data.size());
  for (std::size_t i = 0; i < data.size(); ++i) out[i] = static_cast<std::byte>(data[i]);
  return out;
}

DLAVM_INLINE void write_bytes(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) raise<ParseError>("cannot write '{}'", path);
}

}  // namespace dlavm::vta

namespace dlavm::vta::detail {

DLAVM_INLINE std::uint64_t read_le(std::span<const std::byte> b, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= std::uint64_t(std::to_integer<std::uint8_t>(b[at + i])) << (8 * i);
  return v;
}

DLAVM_INLINE void write_le(std::vector<std::byte>& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
}

}  // namespace dlavm::vta::detail

namespace dlavm::vta {

DLAVM_INLINE void write_insn_file(const std::string& path, std::span<const InsnWord> words) {
  std::vector<std::byte> out;
  out.reserve(words.size() * 16);
  for (const auto& w : words) {
    detail::write_le(out, w.word[0], 8);
    detail::write_le(out, w.word[1], 8);
  }
  write_bytes(path, out);
}

DLAVM_INLINE std::vector<InsnWord> read_insn_file(std::span<const std::byte> b,
                                                  std::string_view source) {
  if (b.size() % 16 != 0)
    raise<ParseError>(
        "'{}': {} bytes is not a whole number of 16-byte instructions; the last "
        "instruction at byte offset {} is truncated",
        source, b.size(), b.size() / 16 * 16);
  std::vector<InsnWord> words(b.size() / 16);
  for (std::size_t i = 0; i < words.size(); ++i) {
    words[i].word[0] = detail::read_le(b, i * 16, 8);
    words[i].word[1] = detail::read_le(b, i * 16 + 8, 8);
  }
  return words;
}

DLAVM_INLINE std::vector<InsnWord> read_insn_file(const std::string& path) {
  return read_insn_file(read_bytes(path), path);
}

DLAVM_INLINE std::vector<InsnFields> read_program(std::span<const std::byte> bytes,
                                                  const IsaLayout& layout,
                                                  std::string_view source) {
  const auto words = read_insn_file(bytes, source);
  std::vector<InsnFields> out;
  out.reserve(words.size());
  for (std::size_t i = 0; i < words.size(); ++i) {
    try {
      out.push_back(decode(layout, words[i], i));
    } catch (const EncodingError& e) {
      raise<EncodingError>("'{}' at byte offset {}: {}", source, i * 16, e.what());
    }
  }
  return out;
}

DLAVM_INLINE std::vector<InsnFields> read_program(const std::string& path,
                                                  const IsaLayout& layout) {
  return read_program(read_bytes(path), layout, path);
}

DLAVM_INLINE void write_uop_file(const std::string& path, std::span<const std::uint32_t> uops) {
  std::vector<std::byte> out;
  out.reserve(uops.size() * 4);
  for (auto u : uops) detail::write_le(out, u, 4);
  write_bytes(path, out);
}

DLAVM_INLINE std::vector<std::uint32_t> read_uop_file(std::span<const std::byte> b,
                                                      std::string_view source) {
  if (b.size() % 4 != 0)
    raise<ParseError>(
        "'{}': {} bytes is not a whole number of 4-byte micro-ops; the last "
        "micro-op at byte offset {} is truncated",
        source, b.size(), b.size() / 4 * 4);
  std::vector<std::uint32_t> uops(b.size() / 4);
  for (std::size_t i = 0; i < uops.size(); ++i)
    uops[i] = static_cast<std::uint32_t>(detail::read_le(b, i * 4, 4));
  return uops;
}

DLAVM_INLINE std::vector<std::uint32_t> read_uop_file(const std::string& path) {
  return read_uop_file(read_bytes(path), path);
}

DLAVM_INLINE std::vector<std::byte> read_dram_image(std::span<const std::byte> b,
                                                    std::int64_t expected_bytes,
                                                    std::string_view source) {
  if (expected_bytes >= 0 && b.size() != static_cast<std::uint64_t>(expected_bytes))
    raise<ParseError>(
        "'{}': DRAM image is {} bytes, expected {} (truncated at byte offset {})", source, b.size(),
        expected_bytes,
        std::min<std::uint64_t>(b.size(), static_cast<std::uint64_t>(expected_bytes)));
  return {b.begin(), b.end()};
}

DLAVM_INLINE std::vector<std::byte> read_dram_image(const std::string& path,
                                                    std::int64_t expected_bytes) {
  return read_dram_image(read_bytes(path), expected_bytes, path);
}

DLAVM_INLINE void write_dram_image(const std::string& path, std::span<const std::byte> bytes) {
  write_bytes(path, bytes);
}

DLAVM_INLINE Manifest dump_stream(const std::string& dir, const Config& config,
                                  const Stream& stream, std::uint64_t uop_phys,
                                  std::vector<ManifestBuffer> buffers) {
  std::filesystem::create_directories(dir);
  std::vector<InsnWord> words(stream.insns.size());
  if (!stream.relocate(uop_phys / Config::uop_elem_bytes(), words.data()))
    raise<EncodingError>("dump: micro-op buffer at 0x{:x} does not fit dram_base", uop_phys);
  Manifest m;
  m.config = config;
  m.insn_count = words.size();
  m.uop_count = stream.uops.size();
  m.uop_phys = uop_phys;
  m.buffers = std::move(buffers);
  m.validate(dir);
  write_insn_file(dir + "/" + m.insn_file, words);
  write_uop_file(dir + "/" + m.uop_file, stream.uops);
  m.save(dir + "/manifest.json");
  return m;
}

DLAVM_INLINE ManifestBuffer dump_buffer(Device& dev, Buffer b, const std::string& dir,
                                        std::string name, DType dtype, bool output) {
  std::filesystem::create_directories(dir);
  std::vector<std::byte> bytes(b.bytes);
  dev.copy_out(b, std::span<std::byte>(bytes));
  ManifestBuffer m{std::move(name), b.phys, b.bytes, dtype, output, ""};
  m.file = m.name + ".bin";
  write_dram_image(dir + "/" + m.file, bytes);
  return m;
}

}  // namespace dlavm::vta

namespace dlavm::vta {

namespace detail {

// Why `path` cannot name a file inside a dump's folder, or "" when it can: relative, no ".."
// component, no NUL byte, no backslash or drive letter another system would read as a path.
inline std::string bad_dump_path(std::string_view path) {
  if (path.empty()) return "is empty";
  if (path.front() == '/') return "is absolute";
  if (path.size() >= 2 && path[1] == ':') return "starts with a drive letter";
  if (path.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (path.find('\\') != std::string_view::npos) return "contains a backslash";
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto end = std::min(path.find('/', start), path.size());
    if (path.substr(start, end - start) == "..") return "leaves the dump's folder with \"..\"";
    start = end + 1;
  }
  return "";
}

}  // namespace detail

DLAVM_INLINE void Manifest::validate(std::string_view source) const {
  using detail::excerpt;
  std::set<std::string, std::less<>> files;
  auto check_file = [&](const std::string& path, std::string_view what) {
    if (const auto why = detail::bad_dump_path(path); !why.empty())
      raise<ParseError>("{}: {} file \"{}\" {}; files are paths relative to the dump's folder",
                        source, what, excerpt(path), why);
    if (!files.insert(path).second)
      raise<ParseError>("{}: {} file \"{}\" is named twice", source, what, excerpt(path));
  };
  check_file(insn_file, "instructions");
  check_file(uop_file, "uops");
  if (insn_count > std::uint64_t{0xFFFFFFFF})
    raise<ParseError>("{}: {} instructions; VTADeviceRun takes at most 2^32 - 1", source,
                      insn_count);
  // [begin, end) and name of every DRAM range (micro-op buffer, buffers), to find overlaps.
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>> ranges;
  auto check_range = [&](std::string_view what, std::uint64_t phys, std::uint64_t bytes) {
    if (phys > kPhysSpace || bytes > kPhysSpace - phys)
      raise<ParseError>(
          "{}: {} at 0x{:x} of {} bytes ends past the 32-bit physical address space (0x{:x})",
          source, what, phys, bytes, kPhysSpace);
  };
  if (uop_count > kPhysSpace / 4)
    raise<ParseError>("{}: {} micro-ops do not fit the 32-bit physical address space", source,
                      uop_count);
  check_range("the micro-op buffer", uop_phys, uop_count * 4);
  if (uop_phys % 4 != 0)
    raise<ParseError>("{}: the micro-op buffer at 0x{:x} is not 4-byte aligned", source, uop_phys);
  if (uop_count != 0)
    ranges.emplace_back(uop_phys, uop_phys + uop_count * 4, "the micro-op buffer");
  std::set<std::string, std::less<>> names;
  for (const auto& b : buffers) {
    const auto what = fmt::format("buffer '{}'", excerpt(b.name));
    if (b.name.empty()) raise<ParseError>("{}: a buffer has an empty name", source);
    if (!names.insert(b.name).second)
      raise<ParseError>("{}: {} is named twice; buffer names are unique", source, what);
    check_range(what, b.phys_addr, b.bytes);
    if (b.bytes % static_cast<std::uint64_t>(b.dtype.bytes()) != 0)
      raise<ParseError>("{}: {} holds {} bytes, not a whole number of {} elements ({} bytes)",
                        source, what, b.bytes, b.dtype, b.dtype.bytes());
    if (!b.file.empty()) check_file(b.file, what);
    if (!b.initial_file.empty()) {
      if (!b.output)
        raise<ParseError>("{}: {} is an input with an initial image; only outputs have one", source,
                          what);
      check_file(b.initial_file, what);
    }
    if (b.bytes != 0) ranges.emplace_back(b.phys_addr, b.phys_addr + b.bytes, what);
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t k = 1; k < ranges.size(); ++k)
    if (std::get<0>(ranges[k]) < std::get<1>(ranges[k - 1]))
      raise<ParseError>("{}: {} [0x{:x}, 0x{:x}) overlaps {} [0x{:x}, 0x{:x})", source,
                        std::get<2>(ranges[k]), std::get<0>(ranges[k]), std::get<1>(ranges[k]),
                        std::get<2>(ranges[k - 1]), std::get<0>(ranges[k - 1]),
                        std::get<1>(ranges[k - 1]));
}

DLAVM_INLINE std::string Manifest::to_json() const {
  dlavm::detail::JsonWriter w(2);
  w.begin_object();
  w.key("config");
  detail::write_config(w, config);
  w.key("instructions");
  w.begin_object();
  w.field("file", insn_file);
  w.field("count", insn_count);
  w.end_object();
  w.key("uops");
  w.begin_object();
  w.field("file", uop_file);
  w.field("count", uop_count);
  w.field("phys_addr", uop_phys);
  w.end_object();
  w.key("buffers");
  w.begin_array();
  for (const auto& b : buffers) {
    w.begin_object();
    w.field("name", b.name);
    w.field("phys_addr", b.phys_addr);
    w.field("bytes", b.bytes);
    w.field("dtype", b.dtype.str());
    w.field("direction", b.output ? "output" : "input");
    w.field("file", b.file);
    if (!b.initial_file.empty()) w.field("initial", b.initial_file);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return std::move(w).str() + "\n";
}

DLAVM_INLINE void Manifest::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  out << to_json();
  if (!out) raise<ParseError>("cannot write manifest '{}'", path);
}

}  // namespace dlavm::vta
