// Writes the quantized models of examples/onnx_import/qdq_models.hpp that run.sh holds dlavm's
// VTA runs against ONNX Runtime on: the CNN in the form ONNX Runtime's quantizer gives it
// (ort_cnn: activations before their QuantizeLinear, a QuantizeLinear with two consumers, a
// quantized Gemm classifier), with 8-bit or 7-bit weights, and the QOperator network
// (qoperator_net: com.microsoft's QLinear operators and QGemm).
//   write_ort_qdq OUT.onnx cnn WEIGHT_MAX     (the weights' bound: 127, or 63 for reduce_range)
//   write_ort_qdq OUT.onnx qoperator
#include "../../../examples/onnx_import/qdq_models.hpp"
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  const std::string kind = argc >= 3 ? argv[2] : "";
  if (!((argc == 4 && kind == "cnn") || (argc == 3 && kind == "qoperator"))) {
    std::cerr << "usage: " << argv[0] << " OUT.onnx cnn WEIGHT_MAX | OUT.onnx qoperator\n";
    return 2;
  }
  const auto model = kind == "cnn"
                         ? qdq_models::ort_cnn(qdq_models::ort_style(qdq_models::small_cnn()), 11,
                                               std::atoi(argv[3]))
                         : qdq_models::qoperator_net(13);
  std::ofstream out(argv[1], std::ios::binary);
  if (!out || !model.SerializeToOstream(&out)) {
    std::cerr << "write_ort_qdq: cannot write " << argv[1] << "\n";
    return 1;
  }
  return 0;
}
