// dlavm::quantize: a float graph::Function and calibration samples in, a quantized Function
// out, ready for graph::build, with a per-layer report of what it costs in accuracy and where
// each layer runs.
//
// What becomes integer: every conv2d (grouped and depthwise included) and dense layer with a
// constant float32 weight, with the bias_add of a constant after it and a relu or clip after that
// (a batch_norm or a per-channel scale and shift after the layer is folded into it first: the
// fold_batch_norm and fold_scale_shift passes). Per layer:
//   - its weight: symmetric int8, one scale per output channel (max |w| / 127);
//   - its input and its output: int8 per tensor, the scale (and, asymmetric, the zero point)
//     from calibration (quantize/calibration.hpp);
//   - its bias: int32 at scale input_scale * weight_scale[c]; where that would leave int32, the
//     channel's weight scale is raised until it fits;
//   - the int8 x int8 sum (on VTA), rescaled to the output's scale per channel (`rescale`:
//     the host, an arbitrary multiplier), the activation a clamp of the int8 result, and a
//     dequantization for the float ops after it. Consecutive layers pass the int8 value itself,
//     also through max pools, reshapes, flattens and transposes (applied to the levels).
// Everything else stays float on the host. A layer stays float when the options name it
// (`skip`) or its output's SQNR against the float model falls below `min_sqnr_db`; the report
// says why.
//
//   std::vector<quantization::Sample> samples = ...;   // {{"image", array}}, ...
//   auto q = dlavm::quantize(fn, samples, {.calibration = {.method = Calibration::Entropy}});
//   fmt::print("{}", q.table());                        // per layer: SQNR, max error, device
//   auto mod = graph::build(q.function, graph::Target{});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/target.hpp>
#include <dlavm/quantize/calibration.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::quantization {

// One calibration input: an array per param of the function, and the values of its symbolic
// dims.
struct Sample {
  std::vector<std::pair<std::string, te::NDArray>> inputs = {};
  std::vector<std::pair<std::string, std::int64_t>> dims = {};
};

// Samples made on demand, so that a large set need not be held: `sample(k)` for k below
// `count`, called once per calibration pass (twice for Percentile and Entropy) and again for
// the report's first samples.
struct SampleSource {
  std::size_t count = 0;
  std::function<Sample(std::size_t)> sample = {};
};

// How a layer's int32 sum becomes its int8 output.
enum class Requantize : std::uint8_t {
  // One float multiplier per output channel, sx * sw[c] / sy (`rescale`, rounded half to
  // even): the finest scales, per-channel weights; the multiplier is no shift, so the host
  // applies it to the sum VTA returns as byte planes.
  Multiplier,
  // Power-of-two scales, one for each weight tensor: sx * sw / sy = 2^-s, a rounding right
  // shift and the clamp that VTA's ALU applies in the layer's epilogue (`requantize`, TVM's
  // VTA flow): the layer runs wholly on VTA, an int8 result; coarser scales.
  Shift,
};
std::string to_string(Requantize r);

// How a layer's input and output (the activations) are quantized. VTA multiplies int8 by int8:
// ONNX's uint8 activations with a zero point are int8 ones here, their values and zero point
// moved down by 128 (the same levels).
enum class Activations : std::uint8_t {
  // Zero point 0: [-t, t] over 255 levels, t the calibration threshold. A ReLU's output uses
  // the 128 levels from 0 up. VTA's zero padding is the value 0.
  Symmetric,
  // A zero point z: the observed [min, max] (within [-t, t], 0 included) over all 256 levels,
  // the value 0 at level z. A convolution reading such a value is padded with z by a host
  // `pad` step before it (VTA pads with 0), and its bias absorbs z times each channel's
  // weight sum, so that the product is still int8 x int8 on VTA.
  Asymmetric,
};
std::string to_string(Activations a);

struct QuantizeOptions {
  CalibrationOptions calibration = {};
  Requantize requantize = Requantize::Multiplier;
  Activations activations = Activations::Symmetric;
  // Layers that stay float: a conv2d's or dense layer's call name, or "conv2d#K" / "dense#K"
  // for the K-th such layer (from 0, in the order the report lists them).
  std::vector<std::string> skip = {};
  // A layer whose output SQNR (dB, against the float model, with every layer before it
  // quantized) is below this stays float; 0 keeps every layer.
  double min_sqnr_db = 0;
  std::size_t report_samples = 4;  // the samples the report's errors are measured on
  bool progress = false;           // a progress line on stderr
};

struct LayerReport {
  std::string name;  // the call's name, or "conv2d#K" / "dense#K"
  std::string op;    // "conv2d" or "dense"
  bool quantized = false;
  std::string device;  // where its product runs: "vta", "host"
  std::string note;    // why it stays float
  double sqnr_db = 0;  // its output against the float model's (infinite: equal)
  double max_abs_error = 0;
  float input_scale = 0, output_scale = 0;                   // 0 for a float layer
  std::int64_t input_zero_point = 0, output_zero_point = 0;  // real 0's int8 level
  double macs = 0;                                           // at the dims' maxima
};

struct QuantizeResult {
  graph::Function function;
  std::vector<LayerReport> layers;
  // The share of the layers' multiply-accumulates whose product runs on VTA.
  double vta_mac_share() const;
  // The report as a text table, one line per layer.
  std::string table() const;
  // The report as an SVG plot: each layer's SQNR as a bar, coloured by where it runs.
  std::string svg() const;
};

QuantizeResult quantize(const graph::Function& fn, const SampleSource& samples,
                        const QuantizeOptions& options = {}, const graph::Target& target = {});
QuantizeResult quantize(const graph::Function& fn, std::span<const Sample> samples,
                        const QuantizeOptions& options = {}, const graph::Target& target = {});

}  // namespace dlavm::quantization

namespace dlavm {
using quantization::quantize;
}  // namespace dlavm

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/quantize/quantize-inl.hpp>
#endif
