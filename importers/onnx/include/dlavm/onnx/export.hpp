// The ONNX exporter: a graph::Function written as an ONNX model (opset 17), so that ONNX
// Runtime can run, and Netron show, what dlavm runs. (`export` is a C++ keyword, hence
// export_model.)
//
//   auto q = dlavm::quantize(fn, samples);
//   dlavm::onnx::export_model(q.function, "model.qdq.onnx");
//   auto back = dlavm::onnx::import("model.qdq.onnx");   // the same layers, bit for bit
//
// An integer layer (conv2d or dense of int8 operands, its int32 bias_add, and the rescale of
// the sum: what dlavm::quantize and the importer's QDQ folding make) is written in QDQ form:
// DequantizeLinear of the input, of the per-channel weight and of the int32 bias, the float
// Conv or Gemm, QuantizeLinear of the result. Its scales are chosen so that ONNX's
// multiplier float32(float32(x_scale * w_scale) / y_scale), which ONNX Runtime's fused kernels
// and dlavm's importer compute, equals the layer's multiplier bit for bit: the input's scale is
// that of the QuantizeLinear or layer making it (1 for an int8 function input), the output's
// that of a DequantizeLinear reading it (else 1), the weight's the one left. ONNX Runtime's
// unfused kernels compute the same layer in float32 instead, which can land on the other side
// of a rounding tie (docs/onnx.md). Every other op becomes its ONNX operator (docs/onnx.md
// lists them); a function input with a symbolic dim becomes a dim_param of the dim's name.
// An op with no ONNX form (requantize's rounding shift: quantize with Requantize::Multiplier
// to export) is a NotSupported error naming every such node (`%3 (requantize)`).
#pragma once

#include <dlavm/graph/node.hpp>
#include <dlavm/onnx/import.hpp>

#include <filesystem>
#include <string>

namespace dlavm::onnx {

struct ExportOptions {
  std::string graph_name = "dlavm";
};

// The model's serialized bytes.
std::string export_model_bytes(const graph::Function& fn, const ExportOptions& options = {});
// Writes them to `path`; ValueError naming the file when it cannot be written.
void export_model(const graph::Function& fn, const std::filesystem::path& path,
                  const ExportOptions& options = {});

}  // namespace dlavm::onnx
