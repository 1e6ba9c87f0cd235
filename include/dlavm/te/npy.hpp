// NumPy's .npy files, how ML people exchange arrays (numpy.save / numpy.load): an NDArray
// read from one and written as one. Format versions 1.0 to 3.0 are read, 1.0 written (2.0
// when the header needs it); little-endian int8, uint8, int16, int32, int64 and float32 in C
// order. Anything else is an error naming the file and what is wrong (a float64 array, the
// default of numpy.random, asks for .astype(numpy.float32): dlavm computes in float32 and does
// not narrow silently).
//
//   te::write_npy("x.npy", te::NDArray::random_float({1, 3, 8, 8}, 1, -1, 1));
//   te::NDArray x = te::read_npy("x.npy");   // float32 [1, 3, 8, 8]
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace dlavm::te {

// The array a .npy file holds. ValueError when the file cannot be read; ParseError naming the
// file (`source`) for a file that is no .npy or holds a layout or dtype dlavm has no form for.
NDArray read_npy(const std::filesystem::path& path);
NDArray parse_npy(std::span<const std::uint8_t> bytes, std::string_view source);

// The .npy bytes of an array, and the file written with them (ValueError when it cannot be).
std::string npy_bytes(const NDArray& a);
void write_npy(const std::filesystem::path& path, const NDArray& a);

}  // namespace dlavm::te

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/npy-inl.hpp>
#endif
