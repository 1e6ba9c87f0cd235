// te::read_npy / write_npy against NumPy's format as its documentation (numpy.lib.format)
// defines it: the bytes of a small file derived by hand, round trips of every dtype and of
// random shapes, and the files dlavm refuses, each with the file's name and the reason.
#include <dlavm/te/npy.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../vta/temp_dir.hpp"
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace npy_test {

using dlavm::DType;
using dlavm::te::NDArray;

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// A version 1.0 file: magic, version, the header length, the header padded with spaces and a
// newline to a multiple of 64 bytes, then the data.
std::string file(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

}  // namespace npy_test

TEST_CASE("npy: the bytes of a 2x3 int8 array, as numpy.save writes them") {
  using namespace npy_test;
  const auto a = NDArray::from_ints(DType::int8(), {2, 3}, {1, -2, 3, -128, 5, 127});
  const std::string want = file("{'descr': '|i1', 'fortran_order': False, 'shape': (2, 3), }",
                                std::string("\x01\xfe\x03\x80\x05\x7f", 6));
  CHECK(dlavm::te::npy_bytes(a) == want);
  CHECK(want.size() == 128 + 6);
  CHECK(dlavm::te::parse_npy(bytes_of(want), "a.npy") == a);
  // float32 little-endian: 1.0f is 00 00 80 3f; a one-element tuple keeps its comma
  const auto f = NDArray::from_floats({1}, {1.0f});
  CHECK(dlavm::te::npy_bytes(f) == file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                                        std::string("\x00\x00\x80\x3f", 4)));
}

TEST_CASE("npy: every dtype and random shapes round-trip") {
  using namespace npy_test;
  const dlavm_test::TempDir dir("npy_round_trip");
  std::mt19937_64 rng(5);
  for (const auto dtype : {DType::int8(), DType::uint8(), DType::int16(), DType::int32(),
                           DType::int64(), DType::float32()}) {
    for (int n = 0; n < 6; ++n) {
      std::vector<std::int64_t> shape;
      for (std::uint64_t k = 0, rank = rng() % 5; k < rank; ++k)
        shape.push_back(static_cast<std::int64_t>(rng() % 5));
      const auto a = dtype.is_float() ? NDArray::random_float(shape, rng(), -1e6, 1e6)
                                      : NDArray::random(dtype, shape, rng());
      CAPTURE(fmt::format("{} [{}]", dtype, fmt::join(shape, ", ")));
      const auto path = dir.path / "a.npy";
      dlavm::te::write_npy(path, a);
      CHECK(dlavm::te::read_npy(path) == a);
    }
  }
}

TEST_CASE("npy: what dlavm has no form for is refused, naming the file") {
  using namespace npy_test;
  const auto refused = [](const std::string& bytes) {
    try {
      dlavm::te::parse_npy(bytes_of(bytes), "x.npy");
    } catch (const dlavm::ParseError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string shape = "'shape': (2,), }";
  CHECK(refused(file("{'descr': '<f8', 'fortran_order': False, " + shape, std::string(16, '\0'))) ==
        "x.npy: a float64 array; dlavm computes in float32: save it with .astype(numpy.float32)");
  CHECK(refused(file("{'descr': '>i4', 'fortran_order': False, " + shape, std::string(8, '\0'))) ==
        "x.npy: dtype '>i4' (int32); dlavm reads little-endian int8, uint8, int16, int32, int64 "
        "and float32");
  CHECK(refused(file("{'descr': '|i1', 'fortran_order': True, " + shape, std::string(2, '\0'))) ==
        "x.npy: an array in Fortran order; save it with numpy.ascontiguousarray");
  CHECK(refused(file("{'descr': '|i1', 'fortran_order': False, " + shape, std::string(3, '\0'))) ==
        "x.npy: shape (2,) of int8 holds 2 bytes, the file 3 after its header");
  CHECK(refused(file("{'descr': '<i4', 'fortran_order': False, " + shape, std::string(5, '\0'))) ==
        "x.npy: shape (2,) of int32 holds 8 bytes, the file 5 after its header");
  CHECK(refused("PK\x03\x04 a zip file") == "x.npy: not a .npy file (no \\x93NUMPY magic)");
  CHECK(refused(file("{'descr': '|i1', 'fortran_order': False, " + shape, "").substr(0, 30)) ==
        "x.npy: cut short in its header");
  CHECK(refused(file("{'descr': '|i1', 'fortran_order': False, 'shape': (x,), }", "")) ==
        "x.npy: shape (x,) holds a dim that is no number");
  CHECK(refused(file("{'descr': '|i1', 'fortran_order': False, 'shape': (99999999999, "
                     "99999999999, 99999999999), }",
                     "")) ==
        "x.npy: shape (99999999999, 99999999999, 99999999999) holds too many elements");
  CHECK_THROWS_AS(dlavm::te::read_npy("/nonexistent/x.npy"), dlavm::ValueError);
  // a directory and a device are refused before a read (the device's would not end)
  CHECK_THROWS_WITH_AS(dlavm::te::read_npy(std::filesystem::temp_directory_path()),
                       doctest::Contains("is a directory, not a .npy file"), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(dlavm::te::read_npy("/dev/zero"),
                       doctest::Contains("'/dev/zero' is no regular file"), dlavm::ValueError);
}
