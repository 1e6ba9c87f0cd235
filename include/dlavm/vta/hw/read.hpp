// Reading the VTA layer's files: vta_config.json, manifest.json and dumps. The only part of the
// layer that parses JSON (with nlohmann/json), so not included by <dlavm/vta.hpp>: a
// header-only unit that includes it compiles nlohmann's parser, about 1.6 s at -O2 on the
// reference machine. Writing the files needs none of it (Config::save, Manifest::save,
// dump_stream).
//
//   #include <dlavm/vta/hw/read.hpp>
//   const auto config = vta::load_config("vta_config.json");
//   const auto dump = vta::load_dump("out/");     // or load_dump(files) for bytes in memory
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/dump.hpp>
#include <dlavm/vta/hw/io.hpp>

#include <string>
#include <string_view>

namespace dlavm::vta {

// vta_config.json: keys TARGET, HW_VER, LOG_INP_WIDTH, LOG_WGT_WIDTH, LOG_ACC_WIDTH,
// LOG_BATCH, LOG_BLOCK, LOG_UOP_BUFF_SIZE, LOG_INP_BUFF_SIZE, LOG_WGT_BUFF_SIZE,
// LOG_ACC_BUFF_SIZE; optional LOG_BLOCK_IN / LOG_BLOCK_OUT (instead of, or equal to,
// LOG_BLOCK), LOG_OUT_WIDTH, LOG_BUS_WIDTH, and dlavm's variant keys (VARIANT: "tvm-sim", the
// default, "xilinx-hls" or "chisel"; then LOAD_ACC_8BIT, ALU_OPCODE_4 "MUL" / "SHL" / "NONE",
// SHR_AMOUNT "signed" / "signed_low" / "unsigned_low", UOP_LOAD_2D, WGT_LOAD_PADS,
// ACC_LOAD_PADS, STORE_READS_OUT_SRAM, INP_LOAD_LIMIT overriding the design's features;
// vta/hw/variant.hpp). Other keys are ignored. Raises ParseError for
// malformed JSON, a missing key or a value of the wrong type, ConfigError for values the
// hardware cannot realise. `source` names the text in messages.
Config read_config(std::string_view text, std::string_view source = "vta_config.json");
Config load_config(const std::string& path);

// manifest.json; raises ParseError naming `source` and the entry (see Manifest::validate).
Manifest read_manifest(std::string_view text, std::string_view source = "manifest.json");
Manifest load_manifest(const std::string& path);

// Raises ParseError naming the file for a manifest that does not validate, a file missing or
// of the wrong size (instruction and micro-op counts, buffer bytes), or a transfer that lies
// in no buffer; EncodingError for an instruction word that does not decode.
Dump load_dump(const DumpFiles& files, std::string_view source = "dump");
Dump load_dump(const std::string& dir);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/read-inl.hpp>
#endif
