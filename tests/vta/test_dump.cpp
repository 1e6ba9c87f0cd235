// Dumps read back: manifests are checked whole, load_dump gives the stream that was dumped
// (micro-op loads relocatable again), and replay runs it on a fresh device wherever that
// device puts the buffers.
#include <dlavm/vta.hpp>
#include <dlavm/vta/hw/read.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include "what_of.hpp"
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace vta = dlavm::vta;
namespace fs = std::filesystem;
using dlavm_test::what_of;
using vta::MemId;
using vta::Queue;

using dlavm_test::TempDir;

namespace {

// C = int8(A + B) over n tiles of int32, built by hand, run on `dev` and dumped into `dir`.
struct Vadd {
  static constexpr std::int64_t n = 6;
  std::vector<std::int32_t> a, b;
  vta::Stream stream;
  vta::Buffer A, B, C;
  explicit Vadd(vta::SimDevice& dev, std::uint64_t seed) : a(n * 16), b(n * 16) {
    std::mt19937 rng(static_cast<std::uint32_t>(seed));
    for (auto& v : a) v = static_cast<std::int32_t>(rng() % 100000) - 50000;
    for (auto& v : b) v = static_cast<std::int32_t>(rng() % 1000) - 500;
    A = dev.alloc_for(std::span<const std::int32_t>(a));
    B = dev.alloc_for(std::span<const std::int32_t>(b));
    C = dev.alloc(n * 16);
    vta::Builder bld{dev.config()};
    bld.load({.memory = MemId::Acc, .dram = bld.dram_elem(A.phys, MemId::Acc), .x_size = n});
    bld.load(
        {.memory = MemId::Acc, .sram = n, .dram = bld.dram_elem(B.phys, MemId::Acc), .x_size = n});
    vta::UopKernel k;
    k.loop_begin(n, 1, 1);
    k.push(0, n);
    k.loop_end();
    bld.alu(k, vta::AluOp::Add);
    bld.dep_push(Queue::Compute, Queue::Store);
    bld.dep_pop(Queue::Compute, Queue::Store);
    bld.store({.dram = bld.dram_elem(C.phys, MemId::Out), .x_size = n});
    bld.finish();
    stream = bld.take();
  }
  std::vector<std::byte> expected() const {
    std::vector<std::byte> c(a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      c[i] = static_cast<std::byte>(static_cast<std::uint32_t>(a[i] + b[i]) & 0xFF);
    return c;
  }
  vta::Manifest dump(vta::SimDevice& dev, const std::string& dir) const {
    const auto uop = dev.alloc(stream.uop_bytes());
    return vta::dump_stream(dir, dev.config(), stream, uop.phys,
                            {vta::dump_buffer(dev, A, dir, "A", dlavm::DType::int32(), false),
                             vta::dump_buffer(dev, B, dir, "B", dlavm::DType::int32(), false),
                             vta::dump_buffer(dev, C, dir, "C", dlavm::DType::int8(), true)});
  }
};

// Every file of a dump folder, in memory.
struct Files {
  std::vector<std::vector<std::byte>> storage;
  vta::DumpFiles files;
  explicit Files(const std::string& dir) {
    std::vector<fs::path> paths(fs::directory_iterator(dir), fs::directory_iterator{});
    for (const auto& p : paths) storage.push_back(vta::read_bytes(p.string()));
    for (std::size_t k = 0; k < paths.size(); ++k) files[paths[k].filename().string()] = storage[k];
  }
};

std::string manifest_with(const vta::Manifest& m, auto&& edit) {
  auto j = nlohmann::json::parse(m.to_json());
  edit(j);
  return j.dump();
}

}  // namespace

TEST_CASE("dump: load_dump gives back the stream that was dumped, and replays anywhere") {
  TempDir dir("dlavm_test_dump_vadd");
  vta::SimDevice dev;
  const Vadd v(dev, 1);
  const auto r = dev.run(v.stream);
  REQUIRE(r.finished);
  const auto m = v.dump(dev, dir.str());
  CHECK(m.uop_phys != 0);
  CHECK(nlohmann::json::parse(m.to_json())["uops"]["phys_addr"] == m.uop_phys);

  const auto d = vta::load_dump(dir.str());
  CHECK(d.manifest == m);
  // The dumped words had their LOAD UOP relocated to uop_phys; loaded, it is relative again.
  CHECK(d.stream.insns == v.stream.insns);
  CHECK(d.stream.uops == v.stream.uops);
  CHECK(d.stream.uop_relocs == v.stream.uop_relocs);
  REQUIRE(d.transfers.size() == 3);
  CHECK(d.transfers[0] == vta::DumpTransfer{0, 0});
  CHECK(d.transfers[1] == vta::DumpTransfer{1, 1});
  CHECK(d.transfers[2].buffer == 2);
  CHECK(d.images[2] == v.expected());
  // At the dumped addresses the stream is the one that ran.
  CHECK(d.stream_at(std::vector<std::uint64_t>{v.A.phys, v.B.phys, v.C.phys}).insns ==
        v.stream.insns);

  // A fresh device with something else allocated first: the buffers land elsewhere.
  vta::SimDevice fresh;
  const auto other = fresh.alloc(3 * 4096 + 5);
  const auto replayed = vta::replay(fresh, d);
  CHECK(replayed.result.finished);
  CHECK(replayed.result.counters == r.counters);
  CHECK(replayed.images[2] == v.expected());
  CHECK(replayed.images[0] == d.images[0]);
  fresh.free(other);
  CHECK(fresh.simulator().dram().allocation_count() == 0);  // replay frees what it allocated

  // The same dump from memory.
  const Files files(dir.str());
  const auto from_memory = vta::load_dump(files.files, "mem");
  CHECK(from_memory.stream.insns == d.stream.insns);
  CHECK(from_memory.images == d.images);
  vta::SimDevice third;
  CHECK(vta::replay(third, from_memory).images[2] == v.expected());
}

TEST_CASE("dump: manifests are validated whole") {
  vta::SimDevice dev;
  const Vadd v(dev, 2);
  TempDir dir("dlavm_test_dump_manifest");
  const auto m = v.dump(dev, dir.str());
  auto error = [&](auto&& edit) {
    return what_of([&] { vta::read_manifest(manifest_with(m, edit), "m.json"); });
  };
  using J = nlohmann::json;
  CHECK(error([](J& j) { j["buffers"][0]["file"] = "../A.bin"; }) ==
        "m.json: buffer 'A' file \"../A.bin\" leaves the dump's folder with \"..\"; files are "
        "paths relative to the dump's folder");
  CHECK(error([](J& j) {
          j["buffers"][1]["file"] = "x/../../B.bin";
        }).find("leaves the dump's folder") != std::string::npos);
  CHECK(error([](J& j) { j["instructions"]["file"] = "/etc/passwd"; }) ==
        "m.json: instructions file \"/etc/passwd\" is absolute; files are paths relative to the "
        "dump's folder");
  CHECK(error([](J& j) { j["uops"]["file"] = "C:uop.bin"; }).find("drive letter") !=
        std::string::npos);
  CHECK(error([](J& j) { j["uops"]["file"] = "a\\b"; }).find("backslash") != std::string::npos);
  CHECK(error([](J& j) { j["uops"]["file"] = std::string("u\0p", 3); }).find("NUL byte") !=
        std::string::npos);
  CHECK(error([](J& j) { j["instructions"] = 5; }) ==
        "m.json: instructions must be an object, got 5");
  CHECK(error([](J& j) { j["uops"]["file"] = ""; }) ==
        "m.json: uops file \"\" is empty; files are paths relative to the dump's folder");
  CHECK(error([](J& j) { j["buffers"][1]["file"] = "A.bin"; }) ==
        "m.json: buffer 'B' file \"A.bin\" is named twice");
  CHECK(error([](J& j) { j["buffers"][1]["name"] = "A"; }) ==
        "m.json: buffer 'A' is named twice; buffer names are unique");
  CHECK(error([](J& j) { j["buffers"][1]["name"] = ""; }) == "m.json: a buffer has an empty name");
  CHECK(error([](J& j) { j["buffers"][0]["phys_addr"] = 18446744073709550000u; }) ==
        "m.json: buffer 'A' at 0xfffffffffffff9b0 of 384 bytes ends past the 32-bit physical "
        "address space (0x100000000)");
  CHECK(error([](J& j) {
          j["buffers"][0]["phys_addr"] = 0xFFFFFF00u;
        }).find("ends past the 32-bit") != std::string::npos);
  CHECK(error([](J& j) {
          j["buffers"][0]["bytes"] = 18446744073709551615u;
        }).find("of 18446744073709551615 bytes ends past") != std::string::npos);
  CHECK(error([&](J& j) { j["buffers"][1]["phys_addr"] = v.A.phys + 64; }) ==
        fmt::format("m.json: buffer 'B' [0x{:x}, 0x{:x}) overlaps buffer 'A' [0x{:x}, 0x{:x})",
                    v.A.phys + 64, v.A.phys + 64 + 384, v.A.phys, v.A.phys + 384));
  CHECK(error([&](J& j) { j["uops"]["phys_addr"] = v.C.phys; }).find("overlaps") !=
        std::string::npos);
  CHECK(error([](J& j) { j["uops"]["phys_addr"] = 0x20002; }) ==
        "m.json: the micro-op buffer at 0x20002 is not 4-byte aligned");
  CHECK(error([](J& j) {
          j["uops"]["count"] = 1ull << 40;
        }).find("micro-ops do not fit the 32-bit physical address space") != std::string::npos);
  CHECK(error([](J& j) { j["buffers"][0]["bytes"] = 383; }) ==
        "m.json: buffer 'A' holds 383 bytes, not a whole number of int32 elements (4 bytes)");
  CHECK(error([](J& j) { j["instructions"]["count"] = 1ull << 32; }) ==
        "m.json: 4294967296 instructions; VTADeviceRun takes at most 2^32 - 1");
  CHECK(error([](J& j) { j["uops"].erase("phys_addr"); }) == "m.json: uops has no key 'phys_addr'");
  CHECK(error([](J& j) {
          j["buffers"][0]["dtype"] = std::string(1000, 'i');
        }).find("m.json: buffer 'A': dtype 'iiiiiiiii") == 0);
  CHECK(error([](J& j) { j["buffers"][0]["dtype"] = std::string(1000, 'i'); }).size() < 300);
  CHECK(error([](J& j) { j["buffers"] = J::object(); }) ==
        "m.json: buffers must be an array, got an object of 0 keys");
  CHECK(error([](J& j) { j["buffers"][0]["direction"] = "sideways"; }) ==
        "m.json: buffer 'A': direction \"sideways\" is neither input nor output");
  // Numbers that overflow a double and documents nested too deep are ParseErrors too.
  auto text = m.to_json();
  text.replace(text.find("\"count\": "), 9, "\"count\": 1e400, \"x\": ");
  CHECK_THROWS_WITH_AS(vta::read_manifest(text, "m.json"),
                       doctest::Contains("number overflow parsing '1e400'"), dlavm::ParseError);
  const auto deep = "{\"config\": " + std::string(20000, '[') + std::string(20000, ']') + "}";
  CHECK_THROWS_WITH_AS(vta::read_manifest(deep, "m.json"),
                       "m.json: invalid JSON at byte 74: nested deeper than 64 levels",
                       dlavm::ParseError);
  // What the writer would write is checked as well.
  CHECK_THROWS_AS(vta::dump_stream(dir.str(), dev.config(), v.stream, 0x20002), dlavm::ParseError);
}

TEST_CASE("dump: files that do not match the manifest") {
  vta::SimDevice dev;
  const Vadd v(dev, 3);
  TempDir dir("dlavm_test_dump_files");
  const auto m = v.dump(dev, dir.str());
  Files f(dir.str());
  auto load = [&](const vta::DumpFiles& files) {
    return what_of([&] { vta::load_dump(files, "d"); });
  };
  auto files = f.files;
  const auto insn = files["insn.bin"];
  files["insn.bin"] = insn.first(insn.size() - 16);
  CHECK(load(files) == fmt::format("d: \"insn.bin\" holds {} bytes; the manifest counts {} "
                                   "instructions ({} bytes)",
                                   insn.size() - 16, m.insn_count, m.insn_count * 16));
  files = f.files;
  files["uop.bin"] = files["uop.bin"].first(0);
  CHECK(load(files).find("d: \"uop.bin\" holds 0 bytes; the manifest counts 1 micro-ops") == 0);
  files = f.files;
  files["B.bin"] = files["B.bin"].first(100);
  CHECK(load(files) ==
        "'B.bin': DRAM image is 100 bytes, expected 384 (truncated at byte "
        "offset 100)");
  files = f.files;
  files.erase("C.bin");
  CHECK(load(files) == "d: file \"C.bin\" (DRAM image of buffer 'C') is missing");
  files = f.files;
  files.erase("manifest.json");
  CHECK(load(files) == "d: file \"manifest.json\" (the manifest) is missing");

  // A buffer shrunk under its transfer: the instruction is named.
  const auto small = manifest_with(m, [](nlohmann::json& j) {
    j["buffers"][1]["bytes"] = 64;
    j["buffers"][1]["file"] = "";
  });
  files = f.files;
  const auto small_bytes = std::as_bytes(std::span(small.data(), small.size()));
  files["manifest.json"] = small_bytes;
  CHECK(load(files) == fmt::format("d: instruction #1 (LOAD ACC sram=0x0006 dram=0x{:08x} y=1 "
                                   "x=6 stride=6) moves DRAM bytes [0x{:x}, 0x{:x}), which lie "
                                   "in no buffer of the manifest",
                                   v.B.phys / 64, v.B.phys, v.B.phys + 384));
  // A word that does not decode.
  std::vector<std::byte> bad(f.files["insn.bin"].begin(), f.files["insn.bin"].end());
  bad[16] = std::byte{7};
  files = f.files;
  files["insn.bin"] = bad;
  CHECK_THROWS_WITH_AS(
      vta::load_dump(files, "d"),
      doctest::Contains("'insn.bin' at byte offset 16: instruction #1: unknown opcode 7"),
      dlavm::EncodingError);
  // A directory where a file should be.
  fs::create_directories(dir / "sub.bin");
  CHECK(what_of([&] { vta::read_bytes(dir / "sub.bin"); }) ==
        fmt::format("cannot read '{}': it is a directory", dir / "sub.bin"));
  // From a folder: the paths are read relative to it.
  fs::remove(dir / "A.bin");
  CHECK(what_of([&] { vta::load_dump(dir.str()); }) ==
        fmt::format("cannot open '{}'", dir / "A.bin"));
}

TEST_CASE("dump: replaying needs the dump's configuration and aligned buffers") {
  vta::SimDevice dev;
  const Vadd v(dev, 4);
  TempDir dir("dlavm_test_dump_replay");
  v.dump(dev, dir.str());
  const auto d = vta::load_dump(dir.str());
  vta::Config other;
  other.log_acc_buff_size = 16;
  vta::SimDevice elsewhere(other);
  CHECK_THROWS_WITH_AS(vta::replay(elsewhere, d),
                       doctest::Contains("replay: the device is configured as"),
                       dlavm::ConfigError);
  const std::vector<std::uint64_t> odd{v.A.phys + 32, v.B.phys, v.C.phys};
  CHECK(what_of([&] { d.stream_at(odd); }) ==
        fmt::format("dump: buffer 'A' at 0x{:x}: instruction #0 (LOAD ACC sram=0x0000 "
                    "dram=0x{:08x} y=1 x=6 stride=6) would address byte 0x{:x}, which is not a "
                    "64-byte element address that dram_base holds; align the buffer to 64 bytes",
                    v.A.phys + 32, v.A.phys / 64, v.A.phys + 32));
  CHECK_THROWS_AS(d.stream_at(std::vector<std::uint64_t>{1, 2}), dlavm::ValueError);
}

TEST_CASE("dram: allocation sizes near 2^64 are errors, not wrapped page counts") {
  vta::Dram dram;
  CHECK(what_of([&] { dram.alloc(std::numeric_limits<std::size_t>::max()); }) ==
        "DRAM allocation of 18446744073709551615 bytes exceeds the 0x100000000-byte address "
        "space");
  CHECK_THROWS_AS(dram.alloc(std::numeric_limits<std::size_t>::max() - 4095), dlavm::DeviceError);
  CHECK_THROWS_AS(dram.alloc(std::size_t{1} << 32), dlavm::DeviceError);
  CHECK(dram.allocation_count() == 0);
  CHECK(dram.alloc(100) == vta::Dram::kBase);
}
