// GraphBuilder: name-based graph construction, as importers need it (ONNX refers to values
// by name, in any order). Define inputs, constants and calls by name, with forward references
// allowed, then build() resolves the names into a Function.
//
//   graph::GraphBuilder b;
//   b.call("y", "relu", {"h"});                    // "h" is defined below: fine
//   b.call("h", "dense", {"x", "w"});
//   b.input("x", {1, token, 512}, DType::int8());
//   b.constant("w", w_array);
//   auto fn = b.build({"x"}, {"y"});
//
// Mistakes are ValueErrors naming the values: a name defined twice (raised at the second
// definition), an argument or result that names nothing, a param that is not an input, and a
// cycle (the names around it listed: "a -> b -> a").
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/te/ndarray.hpp>

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dlavm::graph {

class GraphBuilder {
 public:
  void input(std::string name, std::vector<ne::Expr> shape, DType dtype);
  void constant(std::string name, te::NDArray value);
  // result = op(args...), by name.
  void call(std::string result, std::string op, std::vector<std::string> args, Attrs attrs = {});

  bool defines(std::string_view name) const;
  // The Function with these params and results. Every call is resolved (so undefined names
  // anywhere are reported), even those the results do not use.
  Function build(const std::vector<std::string>& params,
                 const std::vector<std::string>& results) const;

 private:
  struct Definition {
    Expr leaf{};  // inputs and constants: built at definition
    std::string op{};
    std::vector<std::string> args{};
    Attrs attrs{};
  };
  void define(std::string name, Definition d);
  // Every definition as a node, calls resolved by name (raises for undefined names, cycles).
  std::unordered_map<std::string_view, Expr> build_values() const;
  // "an input", "a constant", "a call to 'relu'"
  std::string describe(const Definition& d) const;

  std::vector<std::string> order_;  // definition order
  std::unordered_map<std::string, Definition> defs_;
};

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/builder-inl.hpp>
#endif
