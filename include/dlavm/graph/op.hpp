// Op records and the registry that maps op names to them. An op is plain data, built by an
// explicit function (graph::default_ops() in graph/ops.hpp), never by static registration:
//   name                  "conv2d"
//   args                  how many inputs it takes ([min_args, max_args], kVariadic: no max)
//   attrs                 the attributes it accepts: name, kind, default (none: required),
//                         the allowed strings for a String attribute, a description; the op
//                         families declare them once, in an AttrSchema (graph/attr_schema.hpp)
//   type_rule             the result type from the argument types and attributes
//   host_kernel           the CPU implementation (host/), the fallback and the reference
//   host_support          why the host kernel cannot run a call (empty: it runs every call the
//                         type rule accepts)
//   firmware              the kernel firmware calls for a host step of the op, or why a step
//                         has none (graph/firmware.hpp; deploy::emit prints the call)
//   concat_axis,          what graph passes may know of the op's data movement, so that they
//   permutation,          match a graph's structure, not op names: the axis along which the
//   keeps_order           result is the arguments one after another (concat), the
//                         permutation of argument 0's dims the result is (transpose), or
//                         whether it is argument 0's elements in their order (reshape)
// The VTA strategies (compute + default schedule) of the ops VTA runs are kept apart, in
// graph::Target (graph/strategy.hpp), so that typing a graph does not include the VTA layer.
//
//   OpRecord op{.name = "relu", .min_args = 1, .max_args = 1,
//               .type_rule = [](const TypeCall& c) { return c.type(0); },
//               .host_kernel = [](HostArgs args, const Attrs&) { return host::relu(*args[0]); }};
//   registry.add(std::move(op));
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/firmware.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::graph {

struct AttrSpec {
  std::string name{};
  AttrKind kind = AttrKind::Int;
  std::optional<AttrValue> default_value{};  // nullopt: the attribute is required
  std::vector<std::string> choices{};        // String: the allowed values (empty: any)
  std::string description{};                 // what it means, for messages and docs
};

// What a type rule sees of one call. Its helpers raise dlavm::Errors that start with the
// call's label and name the input ("%3 (conv2d): input 1 (%w) ...").
struct TypeCall {
  std::string label;                   // "%3 (conv2d)"
  std::vector<std::string> arg_names;  // "%x", "%0"
  std::vector<TensorType> arg_types;
  Attrs attrs;  // checked against the op's specs, defaults filled

  std::size_t size() const { return arg_types.size(); }
  const TensorType& type(std::size_t i) const { return arg_types[i]; }
  // "input 1 (%w)"
  std::string arg(std::size_t i) const;

  // ShapeError unless input i has exactly / at least `rank` dims.
  void require_rank(std::size_t i, std::size_t rank) const;
  void require_min_rank(std::size_t i, std::size_t rank) const;
  // TypeError unless inputs i and j have one dtype.
  void require_same_dtype(std::size_t i, std::size_t j) const;
  // ShapeError unless `a` (described as what_a) provably equals `b` (ne::can_prove).
  void require_equal(const ne::Expr& a, std::string_view what_a, const ne::Expr& b,
                     std::string_view what_b) const;
  // Dim k of input i as a constant; ShapeError saying `why` when it is symbolic.
  std::int64_t constant_dim(std::size_t i, std::size_t k, std::string_view why) const;
  // An Ints attribute of exactly `count` values; ValueError otherwise.
  const std::vector<std::int64_t>& ints(std::string_view name, std::size_t count) const;
  // An axis attribute normalized for `rank` dims; ValueError when outside [-rank, rank).
  std::size_t axis(std::string_view name, std::size_t rank) const;
};

// What a firmware kernel sees of a host step: the call as its type rule saw it (its operands'
// logical shapes in the model's symbolic dims, dtypes, attributes with defaults, the label
// naming the node), and the result's type.
struct FirmwareStep {
  const TypeCall& call;
  const TensorType& result;
  const std::vector<ne::Expr>& input(std::size_t k) const { return call.type(k).shape; }
};

struct FirmwareKernel {
  // Why this step has no firmware kernel (nullopt: it has one); unset: every step has one.
  std::function<std::optional<std::string>(const FirmwareStep&)> support{};
  // The call; unset: the op has no firmware kernel.
  std::function<FirmwareCall(const FirmwareStep&)> call{};
};

using TypeRule = std::function<TensorType(const TypeCall&)>;
using HostArgs = std::span<const te::NDArray* const>;
using HostKernel = std::function<te::NDArray(HostArgs args, const Attrs& attrs)>;
using SupportRule = std::function<std::optional<std::string>(const TypeCall&)>;
// The result is the arguments one after another along this axis (normalized); nullopt: not
// for this call.
using ConcatAxisRule = std::function<std::optional<std::size_t>(const TypeCall&)>;
// The result is argument 0 with its dims permuted: result dim i is argument dim perm[i].
using PermutationRule = std::function<std::optional<std::vector<std::int64_t>>(const TypeCall&)>;

struct OpRecord {
  static constexpr std::size_t kVariadic = std::numeric_limits<std::size_t>::max();

  std::string name{};
  std::size_t min_args = 1;
  std::size_t max_args = 1;
  std::vector<AttrSpec> attrs{};
  TypeRule type_rule{};
  HostKernel host_kernel{};
  SupportRule host_support{};
  FirmwareKernel firmware{};
  ConcatAxisRule concat_axis{};
  PermutationRule permutation{};
  // The result is argument 0's elements in the same row-major order, in another shape
  // (reshape, flatten): graph::relayout_chains moves them with the packed bytes.
  bool keeps_order = false;

  const AttrSpec* find_attr(std::string_view key) const;
};

class OpRegistry {
 public:
  // ValueError when the name is taken, empty, or the record lacks a type rule or host kernel.
  void add(OpRecord op);
  const OpRecord* find(std::string_view name) const;
  // ValueError listing the known ops when there is no such op.
  const OpRecord& at(std::string_view name) const;
  // Sorted.
  std::vector<std::string> names() const;
  std::size_t size() const { return ops_.size(); }

 private:
  std::map<std::string, OpRecord, std::less<>> ops_;
};

// The attributes of a call checked against its op's specs: an unknown key (ValueError listing
// the known ones), a missing required attribute (ValueError), a value of another kind
// (TypeError; an integer is accepted for a Float and converted), a string outside the
// choices (ValueError). Returns them with the defaults filled in. `label` starts messages.
Attrs normalize_attrs(std::span<const AttrSpec> specs, const Attrs& given, std::string_view label);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/op-inl.hpp>
#endif
