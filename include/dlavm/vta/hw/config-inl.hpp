// Definitions for vta/hw/config.hpp: validation and the vta_config.json writer (the reader is
// in vta/hw/read-inl.hpp).
#pragma once

#include <dlavm/core/json_writer.hpp>
#include <dlavm/vta/hw/config.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace dlavm::vta {

namespace detail {

inline void check_range(std::string_view key, int value, int lo, int hi, std::string_view why) {
  if (value < lo || value > hi)
    raise<ConfigError>("{} = {} is out of range {}..{}: {}", key, value, lo, hi, why);
}

// The buffer whose depth sets the width of a GEMM / ALU field: its configuration key, name,
// log2 size in bytes and log2 depth in elements.
struct FieldDepth {
  const char* key;
  const char* buffer;
  int log_size, log_depth;
};
inline FieldDepth depth_of_field(const Config& c, Form form, Field f) {
  switch (f) {
    case Field::uop_bgn:
    case Field::uop_end:
      return {"LOG_UOP_BUFF_SIZE", "micro-op", c.log_uop_buff_size, c.log_uop_depth()};
    case Field::src_factor_out:
    case Field::src_factor_in:
      if (form == Form::Gemm)
        return {"LOG_INP_BUFF_SIZE", "input", c.log_inp_buff_size, c.log_inp_depth()};
      break;
    case Field::wgt_factor_out:
    case Field::wgt_factor_in:
      return {"LOG_WGT_BUFF_SIZE", "weight", c.log_wgt_buff_size, c.log_wgt_depth()};
    default:
      break;
  }
  return {"LOG_ACC_BUFF_SIZE", "accumulator", c.log_acc_buff_size, c.log_acc_depth()};
}

// Every field of the GEMM and ALU forms is written by the builder (loop factors even when 0,
// uop_bgn for every kernel), so each needs at least one bit: a buffer of one element would
// make its index fields 0 bits wide, which no encoding can hold (nor a C bit-field of VTA's
// hardware source declare). Fixed-width fields are never 0 bits; a field of LOG_*_DEPTH bits
// holds every index of its buffer, and uop_end's extra bit the end of the micro-op buffer.
inline void check_field_widths(const Config& c, const IsaLayout& l) {
  for (Form form : {Form::Gemm, Form::Alu}) {
    runtime::for_each_field(form, [&](Field f) {
      if (l.pos(form, f).width != 0) return;
      const auto d = depth_of_field(c, form, f);
      raise<ConfigError>(
          "{} = {}: the {} buffer holds 2^{} = {} element(s), so {} field {} would be 0 bits "
          "wide; every buffer needs at least 2 elements (raise {})",
          d.key, d.log_size, d.buffer, d.log_depth, std::uint64_t{1} << d.log_depth,
          form == Form::Gemm ? "GEMM" : "ALU", runtime::field_name(f), d.key);
    });
  }
}

}  // namespace detail

DLAVM_INLINE void Config::validate() const {
  using detail::check_range;
  check_range("LOG_INP_WIDTH", log_inp_width, 0, 5, "element widths are 1..32 bits");
  check_range("LOG_WGT_WIDTH", log_wgt_width, 0, 5, "element widths are 1..32 bits");
  check_range("LOG_ACC_WIDTH", log_acc_width, 3, 5, "accumulators are 8..32 bits");
  check_range("LOG_OUT_WIDTH", log_out_width, 0, log_acc_width,
              "outputs are truncated accumulators, at most LOG_ACC_WIDTH");
  check_range("LOG_BATCH", log_batch, 0, 8, "at most 256 rows per tile");
  check_range("LOG_BLOCK_IN", log_block_in, 0, 8, "at most 256 columns per tile");
  check_range("LOG_BLOCK_OUT", log_block_out, 0, 8, "at most 256 columns per tile");
  check_range("LOG_UOP_BUFF_SIZE", log_uop_buff_size, 2, 30, "buffers are 4 B..1 GiB");
  check_range("LOG_INP_BUFF_SIZE", log_inp_buff_size, 0, 30, "buffers are 1 B..1 GiB");
  check_range("LOG_WGT_BUFF_SIZE", log_wgt_buff_size, 0, 30, "buffers are 1 B..1 GiB");
  check_range("LOG_ACC_BUFF_SIZE", log_acc_buff_size, 0, 30, "buffers are 1 B..1 GiB");
  check_range("LOG_BUS_WIDTH", log_bus_width, 3, 12, "the memory bus is 8..4096 bits");
  auto check_elem = [](std::string_view what, std::string_view keys, int log_bits) {
    if (log_bits < 3)
      raise<ConfigError>("{} element of {} bits ({}) is not a whole byte", what, 1 << log_bits,
                         keys);
  };
  check_elem("input", "LOG_BATCH + LOG_BLOCK_IN + LOG_INP_WIDTH", log_inp_elem_bits());
  check_elem("weight", "LOG_BLOCK_OUT + LOG_BLOCK_IN + LOG_WGT_WIDTH", log_wgt_elem_bits());
  check_elem("output", "LOG_BATCH + LOG_BLOCK_OUT + LOG_OUT_WIDTH", log_out_elem_bits());
  auto check_depth = [](std::string_view key, int log_size, int log_depth, int log_elem_bits) {
    if (log_depth < 0)
      raise<ConfigError>("{} = {}: a {}-byte buffer cannot hold one {}-byte element", key, log_size,
                         std::uint64_t{1} << log_size, std::uint64_t{1} << (log_elem_bits - 3));
    if (log_depth > runtime::kSramBaseBits)
      raise<ConfigError>(
          "{} = {}: depth 2^{} elements cannot be addressed by the {}-bit sram_base field", key,
          log_size, log_depth, runtime::kSramBaseBits);
  };
  check_depth("LOG_UOP_BUFF_SIZE", log_uop_buff_size, log_uop_depth(), 5);
  check_depth("LOG_INP_BUFF_SIZE", log_inp_buff_size, log_inp_depth(), log_inp_elem_bits());
  check_depth("LOG_WGT_BUFF_SIZE", log_wgt_buff_size, log_wgt_depth(), log_wgt_elem_bits());
  check_depth("LOG_ACC_BUFF_SIZE", log_acc_buff_size, log_acc_depth(), log_acc_elem_bits());
  const auto l = layout();
  if (!l.ok) {
    const char* form = l.bad_form == Form::Mem    ? "LOAD/STORE"
                       : l.bad_form == Form::Gemm ? "GEMM"
                                                  : "ALU";
    raise<ConfigError>(
        "{} field {} no longer fits in the 128-bit instruction (depths: uop 2^{}, inp 2^{}, "
        "wgt 2^{}, acc 2^{}); reduce the buffer sizes",
        form, runtime::field_name(l.bad_field), log_uop_depth(), log_inp_depth(), log_wgt_depth(),
        log_acc_depth());
  }
  detail::check_field_widths(*this, l);
  if (!l.uop_ok) {
    const int src = std::max(log_acc_depth(), log_inp_depth());
    raise<ConfigError>(
        "micro-op fields need dst {} + src {} + wgt {} = {} bits, more than 32 "
        "(LOG_ACC_BUFF_SIZE, LOG_INP_BUFF_SIZE or LOG_WGT_BUFF_SIZE too deep)",
        log_acc_depth(), src, log_wgt_depth(), log_acc_depth() + src + log_wgt_depth());
  }
}

namespace detail {

// The variant's keys, which TVM's files do not have: none for TVM's simulator; VARIANT names
// the design, and a feature is written only where it differs from that design's.
inline Variant design_variant(Design design) {
  if (design == Design::XilinxHls) return Variant::xilinx_hls();
  if (design == Design::Chisel) return Variant::chisel();
  return Variant::tvm_sim();
}
inline std::string_view opcode4_name(AluOpcode4 op) {
  return op == AluOpcode4::Mul ? "MUL" : op == AluOpcode4::Shl ? "SHL" : "NONE";
}
inline std::string_view shr_amount_name(ShrAmount a) {
  return a == ShrAmount::Signed      ? "signed"
         : a == ShrAmount::SignedLow ? "signed_low"
                                     : "unsigned_low";
}
inline void write_variant(dlavm::detail::JsonWriter& w, const Variant& v) {
  if (v == Variant::tvm_sim()) return;
  const Variant d = design_variant(v.design);
  w.field("VARIANT", std::string(v.name()));
  if (v.load_acc8 != d.load_acc8) w.field("LOAD_ACC_8BIT", v.load_acc8);
  if (v.alu_opcode4 != d.alu_opcode4)
    w.field("ALU_OPCODE_4", std::string(opcode4_name(v.alu_opcode4)));
  if (v.shr_amount != d.shr_amount)
    w.field("SHR_AMOUNT", std::string(shr_amount_name(v.shr_amount)));
  if (v.uop_load_2d != d.uop_load_2d) w.field("UOP_LOAD_2D", v.uop_load_2d);
  if (v.wgt_load_pads != d.wgt_load_pads) w.field("WGT_LOAD_PADS", v.wgt_load_pads);
  if (v.acc_load_pads != d.acc_load_pads) w.field("ACC_LOAD_PADS", v.acc_load_pads);
  if (v.store_reads_out_sram != d.store_reads_out_sram)
    w.field("STORE_READS_OUT_SRAM", v.store_reads_out_sram);
  if (v.inp_load_limit != d.inp_load_limit) w.field("INP_LOAD_LIMIT", v.inp_load_limit);
}

// Writes vta_config.json's object: LOG_BLOCK when the blocks agree, the optional keys only
// when they differ from their defaults (the public file's form).
inline void write_config(dlavm::detail::JsonWriter& w, const Config& c) {
  w.begin_object();
  w.field("TARGET", c.target);
  w.field("HW_VER", c.hw_ver);
  w.field("LOG_INP_WIDTH", c.log_inp_width);
  w.field("LOG_WGT_WIDTH", c.log_wgt_width);
  w.field("LOG_ACC_WIDTH", c.log_acc_width);
  w.field("LOG_BATCH", c.log_batch);
  if (c.log_block_in == c.log_block_out) {
    w.field("LOG_BLOCK", c.log_block_in);
  } else {
    w.field("LOG_BLOCK_IN", c.log_block_in);
    w.field("LOG_BLOCK_OUT", c.log_block_out);
  }
  w.field("LOG_UOP_BUFF_SIZE", c.log_uop_buff_size);
  w.field("LOG_INP_BUFF_SIZE", c.log_inp_buff_size);
  w.field("LOG_WGT_BUFF_SIZE", c.log_wgt_buff_size);
  w.field("LOG_ACC_BUFF_SIZE", c.log_acc_buff_size);
  if (c.log_out_width != c.log_inp_width) w.field("LOG_OUT_WIDTH", c.log_out_width);
  if (c.log_bus_width != 6) w.field("LOG_BUS_WIDTH", c.log_bus_width);
  write_variant(w, c.variant);
  w.end_object();
}

}  // namespace detail

DLAVM_INLINE std::string Config::to_json() const {
  dlavm::detail::JsonWriter w(2);
  detail::write_config(w, *this);
  return std::move(w).str() + "\n";
}

DLAVM_INLINE void Config::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  out << to_json();
  if (!out) raise<ParseError>("cannot write VTA configuration '{}'", path);
}

DLAVM_INLINE std::pair<std::int64_t, std::int64_t> alu_imm_range(runtime::AluOp op,
                                                                 const Config& c) {
  const auto signed_range = [](int bits) {
    return std::pair{-(std::int64_t{1} << (bits - 1)), (std::int64_t{1} << (bits - 1)) - 1};
  };
  const std::int64_t low_mask = (std::int64_t{1} << c.log_acc_width) - 1;
  switch (op) {
    case runtime::AluOp::Mul:
      switch (c.variant.alu_opcode4) {
        case AluOpcode4::Mul:
          return signed_range(8);  // VTA_MUL_ARG_BIT_WIDTH
        case AluOpcode4::Shl:
          return {-low_mask, 0};
        case AluOpcode4::None:
          return {0, -1};
      }
      return {0, -1};
    case runtime::AluOp::Shr:
      if (c.variant.shr_amount == ShrAmount::UnsignedLow) return {0, low_mask};
      return signed_range(c.log_acc_width);  // VTA_SHR_ARG_BIT_WIDTH
    default:
      return signed_range(16);  // VTA_ALUOP_IMM_BIT_WIDTH
  }
}

DLAVM_INLINE const std::vector<std::string_view>& preset_names() {
  static const std::vector<std::string_view> names{"sim",    "pynq",     "ultra96",
                                                   "zcu104", "de10nano", "tsim"};
  return names;
}

DLAVM_INLINE Config preset(std::string_view name) {
  Config c;
  c.target = std::string(name);
  if (name == "sim") return c;
  if (name == "pynq" || name == "ultra96" || name == "zcu104") {
    c.variant = Variant::xilinx_hls();
    if (name != "pynq") c.log_bus_width = 7;
    return c;
  }
  if (name == "de10nano" || name == "tsim") {
    c.variant = Variant::chisel();
    c.log_uop_buff_size = 13;
    return c;
  }
  raise<ConfigError>("no VTA preset named '{}'; the presets are {}", name,
                     fmt::join(preset_names(), ", "));
}

}  // namespace dlavm::vta

DLAVM_INLINE fmt::format_context::iterator fmt::formatter<dlavm::vta::Config>::format(
    const dlavm::vta::Config& c, format_context& ctx) const {
  return fmt::formatter<std::string_view>::format(
      fmt::format(
          "vta::Config({} {}: inp {} wgt {} acc {} out {}, tile {}x{}x{}, depths uop {} inp {} "
          "wgt {} acc {}, bus {} bits{})",
          c.target, c.hw_ver, c.inp_dtype(), c.wgt_dtype(), c.acc_dtype(), c.out_dtype(), c.batch(),
          c.block_in(), c.block_out(), c.uop_depth(), c.inp_depth(), c.wgt_depth(), c.acc_depth(),
          1 << c.log_bus_width,
          c.variant == dlavm::vta::Variant::tvm_sim()
              ? std::string()
              : fmt::format(", {} design", c.variant.name())),
      ctx);
}
