#include <dlavm/vta.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "what_of.hpp"
#include <filesystem>
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
  const auto c = vta::Config::from_json(text);
  CHECK(c.target == "pynq");
  CHECK(c.log_out_width == 3);
  CHECK(vta::Config::from_json(c.to_json()) == c);
  vta::Config odd;
  odd.log_block_in = 5;
  odd.log_batch = 1;
  odd.log_bus_width = 7;
  odd.log_acc_buff_size = 18;
  CHECK(vta::Config::from_json(odd.to_json()) == odd);
  const auto path = std::filesystem::temp_directory_path() / "dlavm_test_vta_config.json";
  odd.save(path.string());
  CHECK(vta::Config::load(path.string()) == odd);
  std::filesystem::remove(path);
}

TEST_CASE("vta config: malformed JSON and bad values give precise errors") {
  CHECK_THROWS_AS(vta::Config::from_json("{ \"LOG_BATCH\": "), dlavm::ParseError);
  CHECK(what_of([] { vta::Config::from_json("[1, 2]"); }).find("expected a JSON object") !=
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
    return what_of([&] { vta::Config::from_json(j.dump()); });
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
