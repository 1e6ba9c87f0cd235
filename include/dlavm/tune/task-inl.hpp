// Definitions for tune/task.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/te/evaluate.hpp>
#include <dlavm/tune/task.hpp>
#include <dlavm/vta/hw/cycle_model.hpp>
#include <dlavm/vta/hw/isa.hpp>
#include <dlavm/vta/program.hpp>

#include <fmt/format.h>
#include <range/v3/view/filter.hpp>
#include <range/v3/view/iota.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>

namespace dlavm::tune {

DLAVM_INLINE std::vector<Task> tasks(const graph::Function& fn, const graph::Target& target) {
  std::vector<Task> out;
  for (auto& w : graph::workloads(fn, target)) {
    const auto* strategy = target.strategies.find(w.op);
    Task t{w, workload_key(w), graph::to_string(w), strategy->space(w, target.env), strategy};
    out.push_back(std::move(t));
  }
  return out;
}

namespace detail {

// Why no point of the space passes its check: the constraints that removed them, most points
// first, each with how many it removed and one point's own reason. Reasons are grouped by
// their text with the numbers taken out ("a block of 5 does not divide the 56 output rows"
// and "... of 3 ... the 56 ..." are one constraint).
inline std::string why_empty(const graph::KnobSpace& space) {
  if (space.size() == 0) return "the knob space is empty (a knob has no values)";
  struct Constraint {
    std::size_t points = 0;
    std::string example;
  };
  std::map<std::string, Constraint> constraints;
  for (std::size_t i = 0; i < space.size(); ++i) {
    const auto point = space.point(i);
    const auto why = space.check(point).value_or("?");
    std::string shape;
    for (std::size_t c = 0; c < why.size(); ++c)
      if (!std::isdigit(static_cast<unsigned char>(why[c])))
        shape += why[c];
      else if (shape.empty() || shape.back() != '#')
        shape += '#';
    auto& k = constraints[shape];
    if (k.points++ == 0)
      k.example = fmt::format("{}: {}", graph::to_string(space.knobs_of(point)), why);
  }
  std::vector<const Constraint*> order;
  for (const auto& [shape, k] : constraints) order.push_back(&k);
  std::stable_sort(order.begin(), order.end(),
                   [](const Constraint* a, const Constraint* b) { return a->points > b->points; });
  std::string out =
      fmt::format("none of the {} points of the knob space passes its check:", space.size());
  for (std::size_t i = 0; i < order.size() && i < 3; ++i)
    out += fmt::format("{} {} removed by the constraint of ({})", i ? ";" : "", order[i]->points,
                       order[i]->example);
  if (order.size() > 3) out += fmt::format("; and {} more constraints", order.size() - 3);
  return out;
}

}  // namespace detail

DLAVM_INLINE std::vector<std::vector<std::int64_t>> candidates(const graph::KnobSpace& space,
                                                               std::size_t top) {
  // lazily: a point is made and checked only as the pipeline reaches it, and estimated only
  // when it passes
  struct Ranked {
    std::size_t index;
    double estimate;
  };
  auto passing = ranges::views::iota(std::size_t{0}, space.size()) |
                 ranges::views::filter([&](std::size_t i) { return !space.check(space.point(i)); });
  std::vector<Ranked> ranked;
  for (const std::size_t i : passing) ranked.push_back({i, space.estimate(space.point(i))});
  if (ranked.empty()) raise<CapacityError>("tune: {}", detail::why_empty(space));
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& a, const Ranked& b) { return a.estimate < b.estimate; });
  if (top != 0 && ranked.size() > top) ranked.resize(top);
  std::vector<std::vector<std::int64_t>> out;
  out.reserve(ranked.size());
  for (const auto& r : ranked) out.push_back(space.point(r.index));
  return out;
}

namespace detail {

// The maximum of every symbolic dim of the kernel's parameters: what the candidate is timed at.
// The names are the kernel's variables': valid while the kernel is.
inline std::vector<ne::Binding> maximal_bindings(const graph::VtaKernel& k) {
  std::map<std::string_view, std::int64_t> seen;
  for (const auto& t : k.args)
    for (const auto& d : t.shape())
      for (const auto& v : ne::free_vars(d)) seen.emplace(v.name(), v.max());
  std::vector<ne::Binding> out;
  for (const auto& [name, value] : seen) out.push_back({name, value});
  return out;
}

// Parameters placed one after another from 1 MiB, each aligned to 4 KiB: addresses the
// instruction fields take, as a device would hand out.
inline std::vector<std::uint64_t> placed_params(const graph::VtaKernel& k,
                                                std::span<const ne::Binding> bindings) {
  std::vector<std::uint64_t> phys;
  std::uint64_t next = std::uint64_t{1} << 20;
  for (const auto& t : k.args) {
    phys.push_back(next);
    std::uint64_t bytes = static_cast<std::uint64_t>(t.dtype().bytes());
    for (const auto& d : t.shape()) bytes *= static_cast<std::uint64_t>(ne::eval(d, bindings));
    next += (bytes + 4095) / 4096 * 4096;
  }
  return phys;
}

// A candidate declared and built, and the maximal dims it runs at: what evaluate times and
// verify runs. The bindings name the kernel's variables, which the kernel keeps alive.
struct BuiltCandidate {
  graph::VtaKernel kernel;
  vta::Program program;
  std::vector<ne::Binding> bindings;
};

inline BuiltCandidate build_candidate(const Task& task, const graph::Knobs& knobs,
                                      const vta::Env& env, const std::string& name) {
  auto kernel = task.strategy->declare(task.workload, env, knobs, name);
  vta::Program program(env, graph::lower_kernel(kernel, env, name));
  auto bindings = maximal_bindings(kernel);
  return {std::move(kernel), std::move(program), std::move(bindings)};
}

}  // namespace detail

DLAVM_INLINE Record evaluate(const Task& task, const graph::Knobs& knobs, const vta::Env& env) {
  const auto& space = task.space.knobs;
  bool fits = knobs.names.size() == space.size() && knobs.values.size() == space.size();
  for (std::size_t i = 0; fits && i < space.size(); ++i)
    fits = knobs.names[i] == space[i].name &&
           std::find(space[i].values.begin(), space[i].values.end(), knobs.values[i]) !=
               space[i].values.end();
  if (!fits)
    raise<ValueError>("tune::evaluate, {}: knobs ({}) are not a point of its space", task.name,
                      graph::to_string(knobs));
  Record r{.workload = task.key,
           .knobs = knobs,
           .target = env.config,
           .strategy = {task.strategy->op, task.strategy->revision}};
  const auto start = std::chrono::steady_clock::now();
  try {
    const auto c = detail::build_candidate(task, knobs, env, "tune");
    const auto stream =
        c.program.instantiate(c.bindings, detail::placed_params(c.kernel, c.bindings));
    const auto report =
        vta::CycleModel(env.config).run(vta::decode_all(env.config.layout(), stream.insns));
    r.cycles = static_cast<std::int64_t>(report.total_cycles);
    r.bound_cycles = static_cast<std::int64_t>(report.roofline_cycles);
    r.dram_bytes = static_cast<std::int64_t>(report.counters.memory_bytes());
  } catch (const Error& e) {
    r.error = e.what();
  }
  r.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

DLAVM_INLINE std::optional<std::string> verify(const Task& task, const graph::Knobs& knobs,
                                               const vta::Env& env, vta::Device& device,
                                               std::uint64_t seed) {
  const auto c = detail::build_candidate(task, knobs, env, "verify");
  const auto& kernel = c.kernel;
  const auto& bindings = c.bindings;
  std::vector<te::NDArray> arrays;
  std::vector<te::TensorBinding> inputs;
  // the kernel's constants are the parameters just before the result
  const std::size_t constants = kernel.args.size() - 1 - kernel.constants.size();
  for (std::size_t a = 0; a < kernel.args.size(); ++a) {
    const auto& t = kernel.args[a];
    if (a >= constants && a + 1 < kernel.args.size()) {
      arrays.push_back(kernel.constants[a - constants]);
      continue;
    }
    std::vector<std::int64_t> shape;
    for (const auto& d : t.shape()) shape.push_back(ne::eval(d, bindings));
    // int32 operands (biases, residuals) small enough that no sum wraps
    const std::int64_t bound = t.dtype().bits() > 8 ? std::int64_t{1} << 16 : 127;
    arrays.push_back(a + 1 == kernel.args.size()
                         ? te::NDArray(t.dtype(), shape)
                         : te::NDArray::random(t.dtype(), shape, seed + a, -bound, bound));
  }
  for (std::size_t a = 0; a + 1 < kernel.args.size(); ++a)
    inputs.push_back({kernel.args[a], arrays[a]});
  std::vector<te::NDArray*> pointers;
  for (auto& a : arrays) pointers.push_back(&a);
  c.program.run(device, pointers, bindings);
  const auto want = te::evaluate(kernel.args.back(), inputs, bindings);
  const std::span<const std::int64_t> got = arrays.back().data(), expected = want.data();
  const auto [g, w] = std::mismatch(got.begin(), got.end(), expected.begin(), expected.end());
  if (g == got.end() && w == expected.end()) return std::nullopt;
  if (g == got.end() || w == expected.end())
    return fmt::format("on the device, {} elements, te::evaluate gives {}", got.size(),
                       expected.size());
  return fmt::format("on the device, element {} of {} is {}, te::evaluate gives {}",
                     g - got.begin(), got.size(), *g, *w);
}

}  // namespace dlavm::tune
