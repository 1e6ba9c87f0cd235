// Writes the example's model: the quantized CNN of qdq_models.hpp (QDQ form, per-channel
// weight scales, asymmetric padding, a symbolic batch) as an ONNX file, at build time.
//   write_qdq_cnn OUT.onnx
#include "qdq_models.hpp"
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " OUT.onnx\n";
    return 2;
  }
  std::ofstream out(argv[1], std::ios::binary);
  if (!out || !qdq_models::cnn(qdq_models::small_cnn(), 11).SerializeToOstream(&out)) {
    std::cerr << "write_qdq_cnn: cannot write " << argv[1] << "\n";
    return 1;
  }
  return 0;
}
