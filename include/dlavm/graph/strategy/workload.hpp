// Workloads and knob spaces: the plain data between fusion, the schedule choice and a
// strategy's kernel, as TVM's tuning tasks and configuration spaces are.
//
//   Workload    one VTA kernel to build: the anchor op, its argument and result types, its
//               normalized attributes and the fused epilogue. Compared and hashed by value,
//               so a model's workloads can be listed once each (graph::workloads) and keyed
//               in a tuning log (to_string is stable text).
//   KnobSpace   the knobs a strategy's schedule takes for a workload (each a name and its
//               candidate values), a check saying why a point cannot run (the SRAMs, the
//               instruction fields) and the analytic cost the default choice minimizes.
//   Knobs       one point of a space: the values in knob order, with their names.
//   Chooser     the one interface through which knobs are chosen: choose(workload, space).
//               The default takes the point of least estimated cost that passes the check
//               (the first of equals in enumeration order, the last knob varying fastest); a
//               tuner derives from it (a tuning log's best, falling back to the default).
//
//   const auto& s = *target.strategies.find(w.op);
//   KnobSpace space = s.space(w, target.env);
//   Knobs knobs = graph::Chooser().choose(w, space);      // "oc 2, h 7, w 14, ic 1, threads 2"
//   VtaKernel k = s.declare(w, target.env, knobs, "conv2d0");
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::graph {

struct Workload {
  std::string op{};                // the anchor op ("conv2d")
  std::vector<TensorType> args{};  // the anchor's argument types
  TensorType result{};             // the anchor's result type (before the epilogue)
  Attrs attrs{};                   // the anchor's normalized attributes
  Epilogue epilogue{};             // the fused element-wise steps
  friend bool operator==(const Workload& a, const Workload& b);
};

// "conv2d((1, 64, 56, 56) int8, (64, 64, 3, 3) int8; groups=1, padding=[1, 1, 1, 1],
// strides=[1, 1]; +channel#0, >>8, max 0, min 127)": one line, stable across runs.
std::string to_string(const Workload& w);
std::size_t hash_value(const Workload& w);

struct Knob {
  std::string name;
  std::vector<std::int64_t> values;  // the candidates, in enumeration order
};

// One point of a knob space.
struct Knobs {
  std::vector<std::string> names;
  std::vector<std::int64_t> values;  // aligned with names
  // The value of knob `name`; ValueError listing the knobs when there is none.
  std::int64_t at(std::string_view name) const;
  // The value of knob `name`, or `fallback` when the space has no such knob (a knob a
  // strategy offers only for some workloads).
  std::int64_t get(std::string_view name, std::int64_t fallback) const;
  friend bool operator==(const Knobs&, const Knobs&) = default;
};

// "oc 2, h 7, w 14, ic 1, threads 2"
std::string to_string(const Knobs& k);

struct KnobSpace {
  std::vector<Knob> knobs;
  // Why the point (values in knob order) cannot run, or nullopt.
  std::function<std::optional<std::string>(std::span<const std::int64_t>)> check;
  // The analytic cost of a point that passes the check (estimated cycles).
  std::function<double(std::span<const std::int64_t>)> estimate;

  // The number of points (the product of the knobs' value counts).
  std::size_t size() const;
  // Point `index` of the enumeration, the last knob varying fastest.
  std::vector<std::int64_t> point(std::size_t index) const;
  // The point with its knobs' names.
  Knobs knobs_of(std::span<const std::int64_t> values) const;
};

// The point of least estimate among those that pass the check (the first of equals in
// enumeration order), or nullopt: the search the default Chooser runs.
std::optional<std::vector<std::int64_t>> least_cost_point(const KnobSpace& space);

// Declared DLAVM_INLINE: an undeclared-inline virtual function would be the class's key
// function, and every header-only unit would emit the vtable and the search behind it.
class Chooser {
 public:
  virtual ~Chooser() = default;
  // The default: the point of least estimate among those that pass the check. CapacityError
  // naming the workload and the first point's reason when none passes.
  DLAVM_INLINE virtual Knobs choose(const Workload& w, const KnobSpace& space) const;
};

}  // namespace dlavm::graph

template <>
struct std::hash<dlavm::graph::Workload> {
  std::size_t operator()(const dlavm::graph::Workload& w) const {
    return dlavm::graph::hash_value(w);
  }
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/strategy/workload-inl.hpp>
#endif
