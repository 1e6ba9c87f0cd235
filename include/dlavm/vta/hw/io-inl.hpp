// Definitions for dlavm/vta/hw/io.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/io.hpp>
#include <dlavm/vta/hw/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace dlavm::vta {

DLAVM_INLINE std::vector<std::byte> read_bytes(const std::string& path) {
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

DLAVM_INLINE std::vector<InsnWord> read_insn_file(const std::string& path) {
  const auto b = read_bytes(path);
  if (b.size() % 16 != 0)
    raise<ParseError>(
        "'{}': {} bytes is not a whole number of 16-byte instructions; the last "
        "instruction at byte offset {} is truncated",
        path, b.size(), b.size() / 16 * 16);
  std::vector<InsnWord> words(b.size() / 16);
  for (std::size_t i = 0; i < words.size(); ++i) {
    words[i].word[0] = detail::read_le(b, i * 16, 8);
    words[i].word[1] = detail::read_le(b, i * 16 + 8, 8);
  }
  return words;
}

DLAVM_INLINE std::vector<InsnFields> read_program(const std::string& path,
                                                  const IsaLayout& layout) {
  const auto words = read_insn_file(path);
  std::vector<InsnFields> out;
  out.reserve(words.size());
  for (std::size_t i = 0; i < words.size(); ++i) {
    try {
      out.push_back(decode(layout, words[i], i));
    } catch (const EncodingError& e) {
      raise<EncodingError>("'{}' at byte offset {}: {}", path, i * 16, e.what());
    }
  }
  return out;
}

DLAVM_INLINE void write_uop_file(const std::string& path, std::span<const std::uint32_t> uops) {
  std::vector<std::byte> out;
  out.reserve(uops.size() * 4);
  for (auto u : uops) detail::write_le(out, u, 4);
  write_bytes(path, out);
}

DLAVM_INLINE std::vector<std::uint32_t> read_uop_file(const std::string& path) {
  const auto b = read_bytes(path);
  if (b.size() % 4 != 0)
    raise<ParseError>(
        "'{}': {} bytes is not a whole number of 4-byte micro-ops; the last "
        "micro-op at byte offset {} is truncated",
        path, b.size(), b.size() / 4 * 4);
  std::vector<std::uint32_t> uops(b.size() / 4);
  for (std::size_t i = 0; i < uops.size(); ++i)
    uops[i] = static_cast<std::uint32_t>(detail::read_le(b, i * 4, 4));
  return uops;
}

DLAVM_INLINE std::vector<std::byte> read_dram_image(const std::string& path,
                                                    std::int64_t expected_bytes) {
  auto b = read_bytes(path);
  if (expected_bytes >= 0 && b.size() != static_cast<std::uint64_t>(expected_bytes))
    raise<ParseError>("'{}': DRAM image is {} bytes, expected {} (truncated at byte offset {})",
                      path, b.size(), expected_bytes,
                      std::min<std::uint64_t>(b.size(), expected_bytes));
  return b;
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
  m.buffers = std::move(buffers);
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

DLAVM_INLINE std::string Manifest::to_json() const {
  detail::Json j;
  j["config"] = detail::parse_json(config.to_json());
  j["instructions"] = {{"file", insn_file}, {"count", insn_count}};
  j["uops"] = {{"file", uop_file}, {"count", uop_count}};
  j["buffers"] = detail::Json::array();
  for (const auto& b : buffers)
    j["buffers"].push_back({{"name", b.name},
                            {"phys_addr", b.phys_addr},
                            {"bytes", b.bytes},
                            {"dtype", b.dtype.str()},
                            {"direction", b.output ? "output" : "input"},
                            {"file", b.file}});
  return j.dump(2) + "\n";
}

DLAVM_INLINE Manifest Manifest::from_json(std::string_view text, std::string_view source) {
  detail::Json j;
  try {
    j = detail::parse_json(text);
  } catch (const detail::Json::parse_error& e) {
    raise<ParseError>("{}: invalid JSON at byte {}: {}", source, e.byte, e.what());
  }
  auto member = [&](const detail::Json& o, const char* key,
                    const char* where) -> const detail::Json& {
    if (!o.is_object() || !o.contains(key))
      raise<ParseError>("{}: {} has no key '{}'", source, where, key);
    return o.at(key);
  };
  auto str = [&](const detail::Json& o, const char* key, const char* where) {
    const auto& v = member(o, key, where);
    if (!v.is_string())
      raise<ParseError>("{}: {}.{} must be a string, got {}", source, where, key, v.dump());
    return v.get<std::string>();
  };
  auto num = [&](const detail::Json& o, const char* key, const char* where) {
    const auto& v = member(o, key, where);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
      raise<ParseError>("{}: {}.{} must be a non-negative integer, got {}", source, where, key,
                        v.dump());
    return v.get<std::uint64_t>();
  };
  Manifest m;
  m.config = Config::from_json(member(j, "config", "manifest").dump(), source);
  const auto& insn = member(j, "instructions", "manifest");
  m.insn_file = str(insn, "file", "instructions");
  m.insn_count = num(insn, "count", "instructions");
  const auto& uops = member(j, "uops", "manifest");
  m.uop_file = str(uops, "file", "uops");
  m.uop_count = num(uops, "count", "uops");
  const auto& bufs = member(j, "buffers", "manifest");
  if (!bufs.is_array()) raise<ParseError>("{}: buffers must be an array", source);
  for (const auto& b : bufs) {
    ManifestBuffer mb;
    mb.name = str(b, "name", "buffer");
    mb.phys_addr = num(b, "phys_addr", "buffer");
    mb.bytes = num(b, "bytes", "buffer");
    try {
      mb.dtype = DType::parse(str(b, "dtype", "buffer"));
    } catch (const ParseError& e) {
      raise<ParseError>("{}: buffer '{}': {}", source, mb.name, e.what());
    }
    const auto dir = str(b, "direction", "buffer");
    if (dir != "input" && dir != "output")
      raise<ParseError>("{}: buffer '{}': direction '{}' is neither input nor output", source,
                        mb.name, dir);
    mb.output = dir == "output";
    mb.file = str(b, "file", "buffer");
    m.buffers.push_back(std::move(mb));
  }
  return m;
}

DLAVM_INLINE void Manifest::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  out << to_json();
  if (!out) raise<ParseError>("cannot write manifest '{}'", path);
}

DLAVM_INLINE Manifest Manifest::load(const std::string& path) {
  const auto b = read_bytes(path);
  return from_json(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()), path);
}

}  // namespace dlavm::vta
