// Dumps read back. A dump is what Program::run writes with RunOptions::dump_dir (and what
// dump_stream / dump_buffer write for a hand-built stream): manifest.json, the instruction and
// micro-op files, and one DRAM image per buffer. load_dump checks the files against the
// manifest (counts against file sizes, every DRAM transfer inside one of its buffers) and gives
// a runnable stream: the LOAD UOPs point into the micro-op buffer again relocatably, so any
// Device places it; replay runs a dump on a device wherever that device puts the buffers.
//
//   const auto dump = vta::load_dump("out/");     // <dlavm/vta/hw/read.hpp>
//   vta::SimDevice dev(dump.manifest.config);
//   const auto r = vta::replay(dev, dump);        // r.images[k]: buffer k after the run
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/device.hpp>
#include <dlavm/vta/hw/io.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::vta {

// One DRAM transfer of a dump's stream: instruction `insn` reads or writes buffer `buffer`
// (an index into Manifest::buffers).
struct DumpTransfer {
  std::uint32_t insn = 0;
  std::uint32_t buffer = 0;
  friend bool operator==(const DumpTransfer&, const DumpTransfer&) = default;
};

struct Dump {
  Manifest manifest;
  // The instructions as dumped, but with the LOAD UOPs that read the micro-op buffer relative
  // to `stream.uops` again and listed in uop_relocs (Device::run places the buffer itself).
  // Data transfers keep the dumped addresses: run as is, the buffers must be where they were.
  Stream stream;
  std::vector<std::vector<std::byte>> images;  // per manifest buffer; empty when it has no file
  // per manifest buffer: an output's initial image (ManifestBuffer::initial_file), else empty
  std::vector<std::vector<std::byte>> initial_images;
  std::vector<DumpTransfer> transfers;  // every LOAD/STORE that moves data of a buffer

  // The stream with buffer k moved to physical address phys[k]: every transfer's dram_base
  // rebased. ValueError when an address does not keep a transfer's elements aligned, or no
  // longer fits the 32-bit dram_base field.
  Stream stream_at(std::span<const std::uint64_t> phys) const;
};

// A dump in memory: "manifest.json" and every path the manifest names, mapped to their bytes.
using DumpFiles = std::map<std::string, std::span<const std::byte>, std::less<>>;

// A dump is read back by vta::load_dump (<dlavm/vta/hw/read.hpp>).

struct ReplayResult {
  RunResult result;
  std::vector<std::vector<std::byte>> images;  // every buffer after the run, in manifest order
};

// Allocates every buffer of the dump on `dev`, copies the input images in and the outputs'
// initial images (buffers without one start zeroed), runs the stream rebased to those buffers,
// copies every buffer out and frees them. ConfigError when the device's configuration is not the
// dump's.
ReplayResult replay(Device& dev, const Dump& dump);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/dump-inl.hpp>
#endif
