// Raw binary files in the formats VTA's tools exchange, plus a JSON manifest:
//   instructions  N x 16 bytes, each instruction two little-endian 64-bit words (bits 0-63
//                 first);
//   micro-ops     N x 4 bytes, little endian;
//   DRAM images   the raw bytes of one buffer;
//   manifest      {"config": {vta_config.json}, "instructions": {"file", "count"},
//                  "uops": {"file", "count", "phys_addr"}, "buffers": [{"name", "phys_addr",
//                  "bytes", "dtype", "direction": "input"|"output", "file"}]}.
// Every reader takes a path or the bytes themselves (a span, with a name for messages).
// Truncated or corrupted files raise ParseError naming the file and the byte offset; words
// that do not decode raise EncodingError naming the instruction and its byte offset; a
// manifest is checked whole when read (Manifest::validate; reading it is in vta/hw/read.hpp,
// the one header that parses JSON). vta/hw/dump.hpp turns a dump folder back into a runnable
// stream.
//
//   const auto m = vta::load_manifest("out/manifest.json");     // <dlavm/vta/hw/read.hpp>
//   const auto words = vta::read_insn_file(bytes, "insn.bin");   // bytes already in memory
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/device.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::vta {

std::vector<std::byte> read_bytes(const std::string& path);

void write_bytes(const std::string& path, std::span<const std::byte> bytes);

namespace detail {
std::uint64_t read_le(std::span<const std::byte> b, std::size_t at, int n);
void write_le(std::vector<std::byte>& out, std::uint64_t v, int n);
}  // namespace detail

// VTA's physical addresses are 32 bits (vta_phy_addr_t): every buffer of a manifest lies below.
inline constexpr std::uint64_t kPhysSpace = std::uint64_t{1} << 32;

void write_insn_file(const std::string& path, std::span<const InsnWord> words);

std::vector<InsnWord> read_insn_file(const std::string& path);
std::vector<InsnWord> read_insn_file(std::span<const std::byte> bytes, std::string_view source);

// Reads and decodes an instruction file; EncodingError names the instruction and byte offset.
std::vector<InsnFields> read_program(const std::string& path, const IsaLayout& layout);
std::vector<InsnFields> read_program(std::span<const std::byte> bytes, const IsaLayout& layout,
                                     std::string_view source);

void write_uop_file(const std::string& path, std::span<const std::uint32_t> uops);

std::vector<std::uint32_t> read_uop_file(const std::string& path);
std::vector<std::uint32_t> read_uop_file(std::span<const std::byte> bytes, std::string_view source);

// A DRAM image; with `expected_bytes` given, a file of another size is a ParseError.
std::vector<std::byte> read_dram_image(const std::string& path, std::int64_t expected_bytes = -1);
std::vector<std::byte> read_dram_image(std::span<const std::byte> bytes,
                                       std::int64_t expected_bytes, std::string_view source);
void write_dram_image(const std::string& path, std::span<const std::byte> bytes);

struct ManifestBuffer {
  std::string name;
  std::uint64_t phys_addr = 0;
  std::uint64_t bytes = 0;
  DType dtype = DType::int8();
  bool output = false;
  std::string file;  // DRAM image, relative to the manifest's folder ("" if none)
  // An output's contents before the run, relative as `file` ("": zeros). A stream need not
  // write every byte of its outputs: replayed from this, the bytes it leaves are the same.
  std::string initial_file = {};
  friend bool operator==(const ManifestBuffer&, const ManifestBuffer&) = default;
};

struct Manifest {
  Config config;
  std::string insn_file = "insn.bin";
  std::uint64_t insn_count = 0;
  std::string uop_file = "uop.bin";
  std::uint64_t uop_count = 0;
  std::uint64_t uop_phys = 0;  // where the micro-op buffer was: the LOAD UOPs point there
  std::vector<ManifestBuffer> buffers;
  friend bool operator==(const Manifest&, const Manifest&) = default;

  // Raises ParseError, naming `source` and the entry, unless the manifest describes a dump
  // that can be replayed: file paths relative and inside the dump's folder (no "..", not
  // absolute, each file named once), buffer names unique and non-empty, every buffer and the
  // micro-op buffer inside the 32-bit physical space and disjoint, the micro-op buffer 4-byte
  // aligned, sizes whole elements of their dtype, and at most 2^32 - 1 instructions.
  void validate(std::string_view source = "manifest") const;

  // manifest.json (read back by vta::read_manifest / load_manifest, <dlavm/vta/hw/read.hpp>).
  std::string to_json() const;
  void save(const std::string& path) const;
};

// Writes insn.bin, uop.bin and manifest.json into `dir` (created if needed). The uop buffer is
// written as is; instructions are written with their LOAD UOPs relocated to `uop_phys`, which
// the manifest records.
Manifest dump_stream(const std::string& dir, const Config& config, const Stream& stream,
                     std::uint64_t uop_phys, std::vector<ManifestBuffer> buffers = {});

// Writes the current contents of a device buffer to `dir`/`name`.bin and describes it.
ManifestBuffer dump_buffer(Device& dev, Buffer b, const std::string& dir, std::string name,
                           DType dtype, bool output);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/io-inl.hpp>
#endif
