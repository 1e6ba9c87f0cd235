#include <dlavm/vta.hpp>
#include <dlavm/vta/hw/read.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "what_of.hpp"
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>

namespace vta = dlavm::vta;

using dlavm_test::what_of;

TEST_CASE("vta config: defaults and derived values") {
  vta::Config c;
  c.validate();
  CHECK(c.batch() == 1);
  CHECK(c.block_in() == 16);
  CHECK(c.block_out() == 16);
  CHECK(c.inp_elem_bytes() == 16);
  CHECK(c.wgt_elem_bytes() == 256);
  CHECK(c.acc_elem_bytes() == 64);
  CHECK(c.out_elem_bytes() == 16);
  CHECK(c.log_uop_depth() == 13);
  CHECK(c.log_inp_depth() == 11);
  CHECK(c.log_wgt_depth() == 10);
  CHECK(c.log_acc_depth() == 11);
  CHECK(c.acc_depth() == 2048);
  CHECK(c.log_out_buff_size() == 15);
  CHECK(c.bus_bytes() == 8);
  CHECK(c.inp_dtype() == dlavm::DType::int8());
  CHECK(c.acc_dtype() == dlavm::DType::int32());
  CHECK(fmt::format("{}", c).find("tile 1x16x16") != std::string::npos);
}

TEST_CASE("vta config: vta_config.json round-trips") {
  const std::string text = R"({
    "TARGET": "pynq", "HW_VER": "0.0.2",
    "LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3, "LOG_ACC_WIDTH": 5,
    "LOG_BATCH": 0, "LOG_BLOCK": 4,
    "LOG_UOP_BUFF_SIZE": 15, "LOG_INP_BUFF_SIZE": 15,
    "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 17 })";
  const auto c = vta::read_config(text);
  CHECK(c.target == "pynq");
  CHECK(c.log_out_width == 3);
  CHECK(vta::read_config(c.to_json()) == c);
  vta::Config odd;
  odd.log_block_in = 5;
  odd.log_batch = 1;
  odd.log_bus_width = 7;
  odd.log_acc_buff_size = 18;
  CHECK(vta::read_config(odd.to_json()) == odd);
  const auto path = std::filesystem::temp_directory_path() / "dlavm_test_vta_config.json";
  odd.save(path.string());
  CHECK(vta::load_config(path.string()) == odd);
  std::filesystem::remove(path);
}

TEST_CASE("vta config: malformed JSON and bad values give precise errors") {
  CHECK_THROWS_AS(vta::read_config("{ \"LOG_BATCH\": "), dlavm::ParseError);
  CHECK(what_of([] { vta::read_config("[1, 2]"); }).find("expected a JSON object") !=
        std::string::npos);
  vta::Config c;
  auto json = nlohmann::json::parse(c.to_json());
  auto with = [&](const char* key, nlohmann::json v) {
    auto j = json;
    if (v.is_null()) {
      j.erase(key);
    } else {
      j[key] = v;
    }
    return what_of([&] { vta::read_config(j.dump()); });
  };
  CHECK(with("LOG_BLOCK", nullptr).find("missing key 'LOG_BLOCK'") != std::string::npos);
  CHECK(with("LOG_BLOCK", "4").find("key 'LOG_BLOCK' must be an integer, got \"4\"") !=
        std::string::npos);
  CHECK(with("LOG_BATCH", 2.5).find("LOG_BATCH") != std::string::npos);
  CHECK(with("LOG_ACC_WIDTH", 7).find("LOG_ACC_WIDTH = 7 is out of range 3..5") !=
        std::string::npos);
  CHECK(with("LOG_BATCH", 1e12).find("LOG_BATCH") != std::string::npos);
  // Too deep for the 16-bit sram_base field.
  CHECK(with("LOG_INP_BUFF_SIZE", 22).find("sram_base") != std::string::npos);
  // Buffer smaller than one element.
  CHECK(with("LOG_WGT_BUFF_SIZE", 7).find("cannot hold one 256-byte element") != std::string::npos);
  CHECK(with("HW_VER", 2).find("'HW_VER' must be a string") != std::string::npos);
  // Depths the 32-bit micro-op cannot index.
  vta::Config deep;
  deep.log_wgt_buff_size = 19;  // wgt depth 2^11: dst 11 + src 11 + wgt 11 = 33 bits
  deep.log_inp_buff_size = 14;  // inp depth 2^10, so GEMM and ALU still fit 128 bits
  CHECK(what_of([&] { deep.validate(); }).find("micro-op fields need") != std::string::npos);
  // Depths whose GEMM fields no longer fit 128 bits.
  vta::Config wide;
  wide.log_uop_buff_size = 18;  // uop depth 2^16
  wide.log_acc_buff_size = 19;
  wide.log_inp_buff_size = 17;
  const auto msg = what_of([&] { wide.validate(); });
  CHECK(msg.find("no longer fits in the 128-bit instruction") != std::string::npos);
  CHECK_THROWS_AS(wide.validate(), dlavm::ConfigError);
  vta::Config sub;
  sub.log_inp_width = 0;
  sub.log_block_in = 1;
  CHECK(what_of([&] { sub.validate(); }).find("not a whole byte") != std::string::npos);
}

TEST_CASE("vta config: numbers outside double range, deep nesting and repeated keys") {
  const std::string base = vta::Config{}.to_json();
  // The value 1e400 overflows a double: a ParseError naming the file and the byte, not
  // nlohmann's out_of_range.
  auto text = base;
  text.replace(text.find("\"LOG_BATCH\": 0"), 14, "\"LOG_BATCH\": 1e400");
  const auto msg = what_of([&] { vta::read_config(text, "cfg.json"); });
  CHECK(msg.find("cfg.json: invalid JSON at byte ") == 0);
  CHECK(msg.find("number overflow parsing '1e400'") != std::string::npos);
  CHECK_THROWS_AS(vta::read_config(text), dlavm::ParseError);

  // 10,000 levels (20 KB): refused before any recursive code sees the document, the message
  // bounded however long the document is.
  const std::string deep =
      "{\"LOG_BATCH\": " + std::string(10000, '[') + std::string(10000, ']') + "}";
  const auto deep_msg = what_of([&] { vta::read_config(deep, "deep.json"); });
  CHECK(deep_msg == "deep.json: invalid JSON at byte 77: nested deeper than 64 levels");
  // 64 levels are accepted by the parser (and then rejected as the wrong type, briefly).
  auto rest = nlohmann::json::parse(base);
  rest.erase("LOG_BATCH");
  const std::string ok_depth = "{\"LOG_BATCH\": " + std::string(63, '[') + std::string(63, ']') +
                               "," + rest.dump().substr(1);
  const auto type_msg = what_of([&] { vta::read_config(ok_depth); });
  CHECK(type_msg.find("key 'LOG_BATCH' must be an integer, got an array of 1 elements") !=
        std::string::npos);
  // Brackets inside strings do not count toward the depth (other keys are ignored).
  const std::string in_string = "{\"COMMENT\": \"" + std::string(100, '[') + "\"," + base.substr(1);
  CHECK(vta::read_config(in_string) == vta::Config{});

  // A key given twice is ambiguous: named, not silently the last one.
  auto twice = base;
  twice.insert(1, "\"LOG_BLOCK\": 3,");
  CHECK(what_of([&] { vta::read_config(twice, "t.json"); }) ==
        "t.json: invalid JSON: duplicate key \"LOG_BLOCK\"");
  // Long strings are cut in messages.
  auto long_target = nlohmann::json::parse(base);
  long_target["LOG_BLOCK"] = std::string(5000, 'y');
  const auto long_msg = what_of([&] { vta::read_config(long_target.dump()); });
  CHECK(long_msg.find("must be an integer, got \"" + std::string(48, 'y') + "...\"") !=
        std::string::npos);
  CHECK(long_msg.size() < 200);
  // TARGET and HW_VER are printed with the configuration: short and printable.
  long_target = nlohmann::json::parse(base);
  long_target["TARGET"] = std::string("pyn\0q\n", 6);
  CHECK(what_of([&] { vta::read_config(long_target.dump(), "c.json"); }) ==
        "c.json: key 'TARGET' must be a name of at most 64 printable characters, got "
        "\"pyn\\x00q\\x0a\"");
  long_target["TARGET"] = std::string(65, 't');
  CHECK_THROWS_AS(vta::read_config(long_target.dump()), dlavm::ParseError);
}

TEST_CASE("vta config: unsigned values are reported as written") {
  auto j = nlohmann::json::parse(vta::Config{}.to_json());
  j["LOG_BATCH"] = std::uint64_t{18446744073709551615u};
  CHECK(what_of([&] { vta::read_config(j.dump(), "c.json"); }) ==
        "c.json: LOG_BATCH = 18446744073709551615 is not a plausible log2 value");
  j["LOG_BATCH"] = -5000;
  CHECK(what_of([&] { vta::read_config(j.dump(), "c.json"); }) ==
        "c.json: LOG_BATCH = -5000 is not a plausible log2 value");
}

TEST_CASE("vta config: buffers of one element are rejected, naming the key and the field") {
  vta::Config uop;
  uop.log_uop_buff_size = 2;  // one 4-byte micro-op: uop_bgn would be 0 bits wide
  CHECK(what_of([&] { uop.validate(); }) ==
        "LOG_UOP_BUFF_SIZE = 2: the micro-op buffer holds 2^0 = 1 element(s), so GEMM field "
        "uop_bgn would be 0 bits wide; every buffer needs at least 2 elements (raise "
        "LOG_UOP_BUFF_SIZE)");
  vta::Config acc;
  acc.log_acc_buff_size = 6;  // one 64-byte accumulator element
  CHECK(what_of([&] { acc.validate(); })
            .find("LOG_ACC_BUFF_SIZE = 6: the accumulator buffer "
                  "holds 2^0 = 1 element(s), so GEMM field "
                  "dst_factor_out") == 0);
  vta::Config inp;
  inp.log_inp_buff_size = 4;  // one 16-byte input element
  CHECK(what_of([&] { inp.validate(); }).find("GEMM field src_factor_out") != std::string::npos);
  vta::Config wgt;
  wgt.log_wgt_buff_size = 8;  // one 256-byte weight tile
  CHECK(what_of([&] { wgt.validate(); }).find("LOG_WGT_BUFF_SIZE = 8") == 0);
  CHECK(what_of([&] { wgt.validate(); }).find("wgt_factor_out") != std::string::npos);
  // The same through vta_config.json.
  auto j = nlohmann::json::parse(vta::Config{}.to_json());
  j["LOG_UOP_BUFF_SIZE"] = 2;
  CHECK_THROWS_WITH_AS(vta::read_config(j.dump(), "v.json"),
                       doctest::Contains("v.json: LOG_UOP_BUFF_SIZE = 2"), dlavm::ConfigError);
}

// Whatever the configuration, validate() either rejects it or the builder can encode every
// form with the largest indices the buffers have: no config passes validation only to fail on
// the first GEMM or ALU.
TEST_CASE("vta config: every configuration that validates can encode every form") {
  std::mt19937_64 rng(2024);
  int valid = 0;
  for (int n = 0; n < 4000; ++n) {
    vta::Config c;
    auto pick = [&](int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); };
    c.log_out_width = 3;
    c.log_batch = pick(0, 3);
    c.log_block_in = pick(0, 6);
    c.log_block_out = pick(0, 6);
    c.log_uop_buff_size = pick(2, 18);
    c.log_inp_buff_size = pick(0, 20);
    c.log_wgt_buff_size = pick(0, 22);
    c.log_acc_buff_size = pick(0, 22);
    try {
      c.validate();
    } catch (const dlavm::ConfigError&) {
      continue;
    }
    ++valid;
    CAPTURE(c);
    vta::Builder b{c};
    const std::int64_t inp = c.inp_depth() - 1, wgt = c.wgt_depth() - 1, acc = c.acc_depth() - 1;
    vta::UopKernel g;
    g.loop_begin(2, acc, inp, wgt);
    g.loop_begin(3, acc, inp, wgt);
    g.push(acc, inp, wgt);
    g.loop_end();
    g.loop_end();
    CHECK_NOTHROW(b.gemm(g));
    CHECK_NOTHROW(b.gemm(g, true));
    vta::UopKernel a;
    a.loop_begin(2, acc, acc);
    a.push(acc, acc);
    a.loop_end();
    CHECK_NOTHROW(b.alu(a, vta::AluOp::Add));
    CHECK_NOTHROW(b.alu_imm(a, vta::AluOp::Shr, -3));
    CHECK_NOTHROW(b.load({.memory = vta::MemId::Inp, .sram = inp, .x_size = 1}));
    CHECK_NOTHROW(b.load({.memory = vta::MemId::Wgt, .sram = wgt, .x_size = 1}));
    CHECK_NOTHROW(b.store({.sram = acc, .x_size = 1}));
    CHECK_NOTHROW(b.finish());
    const auto layout = c.layout();
    for (const auto& w : b.stream().insns) CHECK_NOTHROW(vta::decode(layout, w));
  }
  CHECK(valid > 200);
}
