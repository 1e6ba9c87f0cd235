// runtime/model_file.hpp: write_file_header's bytes against the table in the header comment,
// checked byte by byte with values whose every byte differs; check_model_file reading them
// back, and returning each of its statuses (BadMagic, BadVersion, WrongConfig, Truncated for
// a null file, a file shorter than its header and a cut payload, BadHeader, BadChecksum) for
// files damaged one field at a time, in the order it checks them; every one of the 96 header
// bytes and the payload's changed alone refused; fnv1a against the published FNV-1a
// 64-bit test vectors (and Python's computation of one more); status_name for every status.
#include <dlavm/runtime/model_file.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace runtime_model_file_test {

namespace rt = dlavm::runtime;
using rt::FileKind;
using rt::ModelStatus;

std::uint64_t le(const std::vector<std::uint8_t>& b, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes; i-- > 0;) v = (v << 8) | b[at + static_cast<std::size_t>(i)];
  return v;
}

rt::ConfigId default_config() {
  // VTA_ISA.md's defaults: inp 3, wgt 3, acc 5, out 3, batch 0, block in 4, block out 4,
  // buffers uop 15, inp 15, wgt 18, acc 17, bus 6
  return {{3, 3, 5, 3, 0, 4, 4, 15, 15, 18, 17, 6}};
}

// A file of `kind` with `payload`, its header filled and its checksum right.
std::vector<std::uint8_t> make_file(FileKind kind, const std::vector<std::uint8_t>& payload,
                                    const char* name = "mlp") {
  rt::FileHeader h;
  h.kind = kind;
  h.config = default_config();
  if (kind == FileKind::Insts) {  // as many words as the payload holds
    h.queue_insns[0] = 3;
    h.queue_insns[1] = 5;
    h.queue_insns[2] = static_cast<std::uint32_t>(payload.size() / 16 - 8);
    h.uop_words = static_cast<std::uint32_t>(payload.size() % 16 / 4);
  }
  h.payload_bytes = payload.size();
  std::strncpy(h.name, name, rt::kModelNameBytes);
  std::vector<std::uint8_t> file(rt::kFileHeaderBytes);
  rt::write_file_header(h, file.data());
  file.insert(file.end(), payload.begin(), payload.end());
  h.checksum = rt::seal_file(file.data());
  return file;
}

std::vector<std::uint8_t> payload(std::size_t n) {
  std::vector<std::uint8_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(i * 37 + 11);
  return p;
}

ModelStatus check(const std::vector<std::uint8_t>& f, FileKind kind = FileKind::Weights) {
  rt::FileHeader h;
  return rt::check_model_file(f.data(), f.size(), kind, default_config(), h);
}

TEST_CASE("runtime model file: the header's bytes are the table's, little-endian") {
  rt::FileHeader h;
  h.kind = FileKind::Insts;
  h.version = 0x0A0B0C0D;
  for (int i = 0; i < 12; ++i) h.config.logs[i] = static_cast<std::uint8_t>(0x40 + i);
  h.queue_insns[0] = 0x11121314;
  h.queue_insns[1] = 0x21222324;
  h.queue_insns[2] = 0x31323334;
  h.uop_words = 0x41424344;
  h.payload_bytes = 0x5152535455565758ULL;
  h.checksum = 0x6162636465666768ULL;
  std::memset(h.name, 'Z', sizeof h.name);  // bytes after the terminator are not the name
  std::strcpy(h.name, "resnet");
  std::vector<std::uint8_t> b(rt::kFileHeaderBytes, 0xEE);  // every byte written
  rt::write_file_header(h, b.data());
  CHECK(std::string(b.begin(), b.begin() + 8) == "DLAVMINS");
  CHECK(le(b, 8, 4) == 0x0A0B0C0D);
  CHECK(b[8] == 0x0D);  // least significant byte first
  CHECK(le(b, 12, 4) == 96);
  for (int i = 0; i < 12; ++i) CHECK(b[16 + static_cast<std::size_t>(i)] == 0x40 + i);
  CHECK(le(b, 28, 4) == 0);  // reserved
  CHECK(le(b, 32, 4) == 0x11121314);
  CHECK(le(b, 36, 4) == 0x21222324);
  CHECK(le(b, 40, 4) == 0x31323334);
  CHECK(le(b, 44, 4) == 0x41424344);
  CHECK(le(b, 48, 8) == 0x5152535455565758ULL);
  CHECK(b[48] == 0x58);
  CHECK(le(b, 56, 8) == 0x6162636465666768ULL);
  CHECK(std::string(b.begin() + 64, b.begin() + 70) == "resnet");
  for (std::size_t i = 70; i < 96; ++i) CHECK(b[i] == 0);  // NUL-padded
  h.kind = FileKind::Weights;
  rt::write_file_header(h, b.data());
  CHECK(std::string(b.begin(), b.begin() + 8) == "DLAVMWGT");
}

TEST_CASE("runtime model file: check_model_file reads back what was written") {
  const auto p = payload(1000);  // 62 instructions and 2 micro-op words
  const auto f = make_file(FileKind::Insts, p, "llm_layer");
  rt::FileHeader h;
  REQUIRE(rt::check_model_file(f.data(), f.size(), FileKind::Insts, default_config(), h) ==
          ModelStatus::Ok);
  CHECK(h.kind == FileKind::Insts);
  CHECK(h.version == rt::kFormatVersion);
  CHECK(h.config == default_config());
  CHECK(h.queue_insns[0] == 3);
  CHECK(h.queue_insns[1] == 5);
  CHECK(h.queue_insns[2] == 54);
  CHECK(h.uop_words == 2);
  CHECK(h.payload_bytes == 1000);
  // the checksum: FNV-1a of the header with its checksum bytes 0, then the payload
  auto zeroed = f;
  for (std::size_t i = 56; i < 64; ++i) zeroed[i] = 0;
  CHECK(h.checksum == rt::fnv1a(zeroed.data(), zeroed.size()));
  CHECK(h.checksum == le(f, 56, 8));
  CHECK(std::string(h.name) == "llm_layer");
  // a name of all 32 bytes has no terminator in the file; it is read back whole
  const std::string long_name(32, 'n');
  const auto g = make_file(FileKind::Weights, p, long_name.c_str());
  REQUIRE(rt::check_model_file(g.data(), g.size(), FileKind::Weights, default_config(), h) ==
          ModelStatus::Ok);
  CHECK(std::string(h.name, h.name + 32) == long_name);
  // an empty payload, and bytes after the payload (not part of it, not checked)
  CHECK(check(make_file(FileKind::Weights, {})) == ModelStatus::Ok);
  auto longer = make_file(FileKind::Weights, p);
  longer.push_back(1);
  CHECK(check(longer) == ModelStatus::Ok);
}

TEST_CASE("runtime model file: every status, one damaged field at a time") {
  const auto good = make_file(FileKind::Weights, payload(300));
  REQUIRE(check(good) == ModelStatus::Ok);
  rt::FileHeader h;
  CHECK(rt::check_model_file(nullptr, 500, FileKind::Weights, default_config(), h) ==
        ModelStatus::Truncated);
  SUBCASE("magic") {
    auto f = good;
    f[3] ^= 0x20;  // "DLAvMWGT"
    CHECK(check(f) == ModelStatus::BadMagic);
    CHECK(check(good, FileKind::Insts) == ModelStatus::BadMagic);  // a weights file as insts
    CHECK(check(make_file(FileKind::Insts, payload(3)), FileKind::Weights) ==
          ModelStatus::BadMagic);
  }
  SUBCASE("version") {
    auto f = good;
    f[8] = 1;  // version 1 (a checksum of the payload only)
    CHECK(check(f) == ModelStatus::BadVersion);
    f[8] = 3;
    CHECK(check(f) == ModelStatus::BadVersion);
    f = good;
    f[11] = 1;  // 0x01000001
    CHECK(check(f) == ModelStatus::BadVersion);
  }
  SUBCASE("shorter than a header") {
    for (std::size_t n : {0, 1, 8, 15}) {
      CAPTURE(n);
      CHECK(check({good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)}) ==
            ModelStatus::Truncated);
    }
    for (std::size_t n : {16, 50, 95}) {  // magic and version readable: the size is short
      CAPTURE(n);
      CHECK(check({good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)}) ==
            ModelStatus::Truncated);
    }
    // but a short file of another version is refused for its version first
    std::vector<std::uint8_t> f(good.begin(), good.begin() + 20);
    f[8] = 9;
    CHECK(check(f) == ModelStatus::BadVersion);
  }
  SUBCASE("a header that claims another size") {
    auto f = good;
    f[12] = 128;
    CHECK(check(f) == ModelStatus::Truncated);
  }
  SUBCASE("configuration") {
    for (std::size_t i = 0; i < 12; ++i) {
      CAPTURE(i);
      auto f = good;
      f[16 + i] ^= 1;
      CHECK(check(f) == ModelStatus::WrongConfig);
    }
  }
  SUBCASE("cut payload") {
    CHECK(check({good.begin(), good.end() - 1}) == ModelStatus::Truncated);
    CHECK(check({good.begin(), good.begin() + 96}) == ModelStatus::Truncated);
    auto f = good;
    f[48 + 7] = 0xFF;  // payload_bytes near 2^64: no overflow, just too long
    CHECK(check(f) == ModelStatus::Truncated);
  }
  SUBCASE("checksum") {
    for (std::size_t at : {std::size_t{96}, std::size_t{250}, good.size() - 1}) {
      CAPTURE(at);
      auto f = good;
      f[at] ^= 0x01;
      CHECK(check(f) == ModelStatus::BadChecksum);
    }
    auto f = good;
    f[56] ^= 0x80;  // the stored checksum itself
    CHECK(check(f) == ModelStatus::BadChecksum);
  }
  SUBCASE("header fields that disagree") {
    auto f = good;
    f[29] = 1;  // reserved
    CHECK(check(f) == ModelStatus::BadHeader);
    f = good;
    f[32] = 1;  // a weights file with an instruction
    CHECK(check(f) == ModelStatus::BadHeader);
    f = good;
    f[44] = 1;  // ... or a micro-op word
    CHECK(check(f) == ModelStatus::BadHeader);
    const auto insts = make_file(FileKind::Insts, payload(1000));
    REQUIRE(check(insts, FileKind::Insts) == ModelStatus::Ok);
    f = insts;
    f[40] += 1;  // one instruction more than the payload holds
    CHECK(check(f, FileKind::Insts) == ModelStatus::BadHeader);
    f = insts;
    f[44] -= 1;  // one micro-op word fewer
    CHECK(check(f, FileKind::Insts) == ModelStatus::BadHeader);
  }
}

TEST_CASE("runtime model file: every byte of the header and the payload is checked") {
  // changed alone, each of the 96 header bytes (the name and its padding among them) and
  // each payload byte makes the file refused, whatever the field
  for (const auto kind : {FileKind::Weights, FileKind::Insts}) {
    const auto good = make_file(kind, payload(200), "mlp");
    REQUIRE(check(good, kind) == ModelStatus::Ok);
    for (std::size_t at = 0; at < good.size(); ++at) {
      for (const std::uint8_t flip : {0x01, 0x80}) {
        CAPTURE(at);
        CAPTURE(static_cast<int>(flip));
        auto f = good;
        f[at] ^= flip;
        CHECK(check(f, kind) != ModelStatus::Ok);
      }
    }
  }
}

TEST_CASE("runtime model file: fnv1a equals the published FNV-1a 64-bit vectors") {
  // from the FNV reference test suite: "" -> cbf29ce484222325, "a" -> af63dc4c8601ec8c,
  // "foobar" -> 85944171f73967e8; bytes 0..255 computed with Python's big integers
  const auto of = [](const std::string& s) {
    return rt::fnv1a(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  };
  CHECK(of("") == 0xcbf29ce484222325ULL);
  CHECK(of("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(of("foobar") == 0x85944171f73967e8ULL);
  std::vector<std::uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i);
  CHECK(rt::fnv1a(all.data(), all.size()) == 0x4242dc5249c33625ULL);
  // chained: the hash of a whole is the hash of its second part from the first part's hash
  CHECK(rt::fnv1a(all.data() + 100, 156, rt::fnv1a(all.data(), 100)) ==
        rt::fnv1a(all.data(), all.size()));
  static_assert(rt::fnv1a(nullptr, 0) == 0xcbf29ce484222325ULL);
}

TEST_CASE("runtime model file: status_name gives every status a sentence of its own") {
  std::set<std::string> seen;
  const auto last = static_cast<int>(ModelStatus::BadHeader);
  for (int s = 0; s <= last; ++s) {
    const std::string name = rt::status_name(static_cast<ModelStatus>(s));
    CAPTURE(s);
    CHECK(name != "unknown status");
    CHECK(name.size() >= 2);
    seen.insert(name);
  }
  CHECK(seen.size() == static_cast<std::size_t>(last + 1));
  CHECK(std::string(rt::status_name(static_cast<ModelStatus>(last + 1))) == "unknown status");
  CHECK(std::string(rt::status_name(static_cast<ModelStatus>(-1))) == "unknown status");
  CHECK(std::string(rt::status_name(ModelStatus::Ok)) == "ok");
  CHECK(std::string(rt::status_name(ModelStatus::BadChecksum)).find("checksum") !=
        std::string::npos);
  CHECK(std::string(rt::status_name(ModelStatus::AddressRange)).find("address") !=
        std::string::npos);
  CHECK(std::string(rt::status_name(ModelStatus::Truncated)).find("truncated") !=
        std::string::npos);
  // the enumerators' values are what firmware returns: they must not move
  CHECK(static_cast<int>(ModelStatus::BadMagic) == 1);
  CHECK(static_cast<int>(ModelStatus::DeviceError) == 13);
  CHECK(static_cast<int>(ModelStatus::AddressRange) == 14);
  CHECK(static_cast<int>(ModelStatus::BadHeader) == 15);
}

TEST_CASE("runtime model file: ConfigId compares all twelve parameters") {
  const rt::ConfigId a = default_config();
  for (int i = 0; i < 12; ++i) {
    rt::ConfigId b = a;
    b.logs[i] = static_cast<std::uint8_t>(b.logs[i] + 1);
    CHECK(b != a);
    CHECK_FALSE(b == a);
  }
  CHECK(a == default_config());
}

}  // namespace runtime_model_file_test
