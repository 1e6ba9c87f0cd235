// quantize layer: dlavm::quantize, a float graph::Function and calibration samples in, a
// quantized Function out (int8 convolutions and dense layers for VTA), with a per-layer report
// (SQNR, error, device) as a table and an SVG plot; the calibration methods (min/max,
// percentile, entropy) on streaming observers.
//
//   auto q = dlavm::quantize(fn, samples);
//   fmt::print("{}", q.table());
//   auto mod = dlavm::graph::build(q.function, dlavm::graph::Target{});
#pragma once

#include <dlavm/quantize/calibration.hpp>
#include <dlavm/quantize/quantize.hpp>
