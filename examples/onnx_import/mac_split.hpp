// The share of a placed function's multiply-accumulates that runs on VTA: what the example
// onnx_import prints and tests/onnx and bench/onnx hold to the importer's target.
//
//   const auto split = qdq_models::mac_split(graph::infer_type(fn, target));
//   split.vta_share();   // 0.99
#pragma once

#include <dlavm/graph.hpp>
#include <dlavm/ne/bounds.hpp>

namespace qdq_models {

// The multiply-accumulates of a typed function's convolutions, dense layers and matrix
// products (output elements x reduction length, at the dims' maxima), and those of the calls
// placed on VTA.
struct MacSplit {
  double all = 0, vta = 0;
  double vta_share() const { return all > 0 ? vta / all : 0; }
};
inline MacSplit mac_split(const dlavm::graph::Function& typed) {
  MacSplit s;
  const auto at_max = [](const dlavm::ne::Expr& d) {
    return static_cast<double>(dlavm::ne::bounds(d).max);
  };
  for (const auto& e : dlavm::graph::post_order(typed.results())) {
    const auto* c = e.as<dlavm::graph::CallNode>();
    if (c == nullptr || (c->op() != "conv2d" && c->op() != "dense" && c->op() != "matmul"))
      continue;
    const auto& w = c->args[1].type().shape;
    double m = 1;
    for (const auto& d : e.type().shape) m *= at_max(d);
    if (c->op() == "conv2d")
      for (std::size_t k = 1; k < w.size(); ++k) m *= at_max(w[k]);
    else
      m *= at_max(c->op() == "dense" ? w.back() : w[w.size() - 2]);
    s.all += m;
    if (e.device() == dlavm::graph::Device::Vta) s.vta += m;
  }
  return s;
}

}  // namespace qdq_models
