// Definitions for dlavm/vta/hw/read.hpp (see core/api.hpp): the readers of vta_config.json,
// manifest.json and dumps, the only code of the VTA layer that parses JSON.
#pragma once

#include <dlavm/vta/hw/config-inl.hpp>
#include <dlavm/vta/hw/dump-inl.hpp>
#include <dlavm/vta/hw/io-inl.hpp>
#include <dlavm/vta/hw/json.hpp>
#include <dlavm/vta/hw/read.hpp>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::vta {

namespace detail {

// One log2 value of vta_config.json. Non-negative numbers arrive as unsigned: they are compared
// as written, so 18446744073709551615 is reported as that, not as -1.
inline int config_log2(const Json& j, std::string_view source, const char* key, bool required,
                       int fallback) {
  const auto it = j.find(key);
  if (it == j.end()) {
    if (required) raise<ParseError>("{}: missing key '{}'", source, key);
    return fallback;
  }
  if (!it->is_number_integer())
    raise<ParseError>("{}: key '{}' must be an integer, got {}", source, key, describe(*it));
  constexpr std::int64_t kPlausible = 1000;
  if (it->is_number_unsigned()) {
    const auto v = it->get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(kPlausible))
      raise<ConfigError>("{}: {} = {} is not a plausible log2 value", source, key, v);
    return static_cast<int>(v);
  }
  const auto v = it->get<std::int64_t>();
  if (v < -kPlausible || v > kPlausible)
    raise<ConfigError>("{}: {} = {} is not a plausible log2 value", source, key, v);
  return static_cast<int>(v);
}

inline std::string config_string(const Json& j, std::string_view source, const char* key,
                                 std::string fallback) {
  const auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (!it->is_string())
    raise<ParseError>("{}: key '{}' must be a string, got {}", source, key, describe(*it));
  // Names such as "pynq" and "0.0.2": printed with the configuration, so kept printable.
  const auto& v = it->get_ref<const Json::string_t&>();
  constexpr std::size_t kMaxName = 64;
  const bool printable = std::all_of(v.begin(), v.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && c != 0x7F;
  });
  if (v.size() > kMaxName || !printable)
    raise<ParseError>("{}: key '{}' must be a name of at most {} printable characters, got {}",
                      source, key, kMaxName, describe(*it));
  return v;
}

// The variant keys (written by vta::detail::write_variant): VARIANT names the design, whose
// features the other keys override.
inline Variant variant_from_json(const Json& j, std::string_view source) {
  const auto name = config_string(j, source, "VARIANT", "tvm-sim");
  std::optional<Design> design;
  for (const Design d : {Design::TvmSim, Design::XilinxHls, Design::Chisel})
    if (name == design_name(d)) design = d;
  if (!design)
    raise<ConfigError>("{}: VARIANT = '{}' is not a VTA design: tvm-sim, xilinx-hls or chisel",
                       source, name);
  Variant v = design_variant(*design);
  const auto flag = [&](const char* key, bool& out) {
    const auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_boolean())
      raise<ParseError>("{}: key '{}' must be true or false, got {}", source, key, describe(*it));
    out = it->get<bool>();
  };
  const auto choice = [&](const char* key, auto& out, auto name_of, auto... options) {
    const auto it = j.find(key);
    if (it == j.end()) return;
    const auto name = config_string(j, source, key, "");
    bool found = false;
    ((name == name_of(options) ? (out = options, found = true) : false), ...);
    if (!found)
      raise<ConfigError>("{}: {} = '{}' is not one of {}", source, key, name,
                         fmt::join(std::vector<std::string_view>{name_of(options)...}, ", "));
  };
  flag("LOAD_ACC_8BIT", v.load_acc8);
  choice("ALU_OPCODE_4", v.alu_opcode4, opcode4_name, AluOpcode4::Mul, AluOpcode4::Shl,
         AluOpcode4::None);
  choice("SHR_AMOUNT", v.shr_amount, shr_amount_name, ShrAmount::Signed, ShrAmount::SignedLow,
         ShrAmount::UnsignedLow);
  flag("UOP_LOAD_2D", v.uop_load_2d);
  flag("WGT_LOAD_PADS", v.wgt_load_pads);
  flag("ACC_LOAD_PADS", v.acc_load_pads);
  flag("STORE_READS_OUT_SRAM", v.store_reads_out_sram);
  if (const auto it = j.find("INP_LOAD_LIMIT"); it != j.end()) {
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() > 0xFFFFFFFFu)
      raise<ParseError>("{}: key 'INP_LOAD_LIMIT' must be an integer in 0..4294967295, got {}",
                        source, describe(*it));
    v.inp_load_limit = static_cast<std::uint32_t>(it->get<std::uint64_t>());
  }
  return v;
}

// The configuration a parsed vta_config.json object describes (the manifest reader passes its
// "config" member here rather than re-serializing it).
inline Config config_from_json(const Json& j, std::string_view source) {
  if (!j.is_object()) raise<ParseError>("{}: expected a JSON object, got {}", source, describe(j));
  Config c;
  c.target = config_string(j, source, "TARGET", c.target);
  c.hw_ver = config_string(j, source, "HW_VER", c.hw_ver);
  c.log_inp_width = config_log2(j, source, "LOG_INP_WIDTH", true, 0);
  c.log_wgt_width = config_log2(j, source, "LOG_WGT_WIDTH", true, 0);
  c.log_acc_width = config_log2(j, source, "LOG_ACC_WIDTH", true, 0);
  c.log_out_width = config_log2(j, source, "LOG_OUT_WIDTH", false, c.log_inp_width);
  c.log_batch = config_log2(j, source, "LOG_BATCH", true, 0);
  const bool has_in = j.contains("LOG_BLOCK_IN"), has_out = j.contains("LOG_BLOCK_OUT");
  const int block = config_log2(j, source, "LOG_BLOCK", !(has_in && has_out), 0);
  c.log_block_in = config_log2(j, source, "LOG_BLOCK_IN", false, block);
  c.log_block_out = config_log2(j, source, "LOG_BLOCK_OUT", false, block);
  if (j.contains("LOG_BLOCK") && (c.log_block_in != block || c.log_block_out != block))
    raise<ConfigError>("{}: LOG_BLOCK = {} contradicts LOG_BLOCK_IN = {} / LOG_BLOCK_OUT = {}",
                       source, block, c.log_block_in, c.log_block_out);
  c.log_uop_buff_size = config_log2(j, source, "LOG_UOP_BUFF_SIZE", true, 0);
  c.log_inp_buff_size = config_log2(j, source, "LOG_INP_BUFF_SIZE", true, 0);
  c.log_wgt_buff_size = config_log2(j, source, "LOG_WGT_BUFF_SIZE", true, 0);
  c.log_acc_buff_size = config_log2(j, source, "LOG_ACC_BUFF_SIZE", true, 0);
  c.log_bus_width = config_log2(j, source, "LOG_BUS_WIDTH", false, 6);
  c.variant = variant_from_json(j, source);
  try {
    c.validate();
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", source, e.what()));
  }
  return c;
}

}  // namespace detail

DLAVM_INLINE Config read_config(std::string_view text, std::string_view source) {
  return detail::config_from_json(detail::parse_json(text, source), source);
}

DLAVM_INLINE Config load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) raise<ParseError>("cannot open VTA configuration '{}'", path);
  std::ostringstream text;
  text << in.rdbuf();
  return read_config(text.str(), path);
}

DLAVM_INLINE Manifest read_manifest(std::string_view text, std::string_view source) {
  using detail::describe;
  using detail::excerpt;
  using detail::Json;
  const Json j = detail::parse_json(text, source);
  auto member = [&](const Json& o, const char* key, std::string_view where) -> const Json& {
    if (!o.is_object())
      raise<ParseError>("{}: {} must be an object, got {}", source, where, describe(o));
    const auto it = o.find(key);
    if (it == o.end()) raise<ParseError>("{}: {} has no key '{}'", source, where, key);
    return *it;
  };
  auto str = [&](const Json& o, const char* key, std::string_view where) {
    const auto& v = member(o, key, where);
    if (!v.is_string())
      raise<ParseError>("{}: {}.{} must be a string, got {}", source, where, key, describe(v));
    return v.get<std::string>();
  };
  // Non-negative integers arrive as unsigned; a negative one, a fraction or 1e20 are errors.
  auto num = [&](const Json& o, const char* key, std::string_view where) {
    const auto& v = member(o, key, where);
    if (!v.is_number_unsigned())
      raise<ParseError>("{}: {}.{} must be a non-negative integer, got {}", source, where, key,
                        describe(v));
    return v.get<std::uint64_t>();
  };
  Manifest m;
  m.config = detail::config_from_json(member(j, "config", "manifest"), source);
  const auto& insn = member(j, "instructions", "manifest");
  m.insn_file = str(insn, "file", "instructions");
  m.insn_count = num(insn, "count", "instructions");
  const auto& uops = member(j, "uops", "manifest");
  m.uop_file = str(uops, "file", "uops");
  m.uop_count = num(uops, "count", "uops");
  m.uop_phys = num(uops, "phys_addr", "uops");
  const auto& bufs = member(j, "buffers", "manifest");
  if (!bufs.is_array())
    raise<ParseError>("{}: buffers must be an array, got {}", source, describe(bufs));
  for (const auto& b : bufs) {
    ManifestBuffer mb;
    mb.name = str(b, "name", "buffer");
    const auto where = fmt::format("buffer '{}'", excerpt(mb.name));
    mb.phys_addr = num(b, "phys_addr", where);
    mb.bytes = num(b, "bytes", where);
    const auto dtype = str(b, "dtype", where);
    try {
      mb.dtype = DType::parse(excerpt(dtype, 32));
    } catch (const ParseError& e) {
      raise<ParseError>("{}: {}: {}", source, where, e.what());
    }
    const auto dir = str(b, "direction", where);
    if (dir != "input" && dir != "output")
      raise<ParseError>("{}: {}: direction \"{}\" is neither input nor output", source, where,
                        excerpt(dir));
    mb.output = dir == "output";
    mb.file = str(b, "file", where);
    if (b.contains("initial")) mb.initial_file = str(b, "initial", where);
    m.buffers.push_back(std::move(mb));
  }
  m.validate(source);
  return m;
}

DLAVM_INLINE Manifest load_manifest(const std::string& path) {
  const auto b = read_bytes(path);
  return read_manifest(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()), path);
}

DLAVM_INLINE Dump load_dump(const DumpFiles& files, std::string_view source) {
  const auto manifest = detail::dump_file(files, "manifest.json", source, "the manifest");
  const std::string_view text(reinterpret_cast<const char*>(manifest.data()), manifest.size());
  const auto where = fmt::format("{}/manifest.json", source);
  return detail::load_dump(read_manifest(text, where), files, source);
}

DLAVM_INLINE Dump load_dump(const std::string& dir) {
  auto m = load_manifest(dir + "/manifest.json");
  std::vector<std::vector<std::byte>> storage;
  std::vector<std::string> names{m.insn_file, m.uop_file};
  for (const auto& b : m.buffers)
    for (const auto* f : {&b.file, &b.initial_file})
      if (!f->empty()) names.push_back(*f);
  DumpFiles files;
  storage.reserve(names.size());
  for (const auto& name : names) {
    storage.push_back(read_bytes(dir + "/" + name));
    files[name] = storage.back();
  }
  return detail::load_dump(std::move(m), files, dir);
}

}  // namespace dlavm::vta
