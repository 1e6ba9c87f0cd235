// dlavm: the command line's front door to the library, for a user's own ONNX models and the
// gallery's (as tvmc is TVM's). Each subcommand is the public API a C++ program would call:
//
//   dlavm inspect MODEL [--dims NAME=MIN..MAX]... [--dot FILE] [--svg FILE]
//       every VTA kernel and host step, where it runs and why; the share of the
//       multiply-accumulates on VTA; the memory plan; a Graphviz picture
//   dlavm run MODEL --input NAME=FILE.npy... [--dims NAME=MIN..MAX]... [--bind NAME=VALUE]...
//             [--output DIR] [--dump DIR] [--tune-log FILE]
//       runs the model on the simulated VTA, writes each output as DIR/<name>.npy, prints the
//       VTA cycles and their share of the roofline bound
//   dlavm quantize MODEL --calib DIR -o OUT.onnx [--dims ...] [--shift] [--asymmetric]
//                  [--report FILE.svg]
//       a float model quantized by dlavm::quantize from DIR's .npy files (one sample each, or
//       DIR/<k>/<input>.npy for a model of several inputs), written as a QDQ ONNX model; the
//       per-layer report on standard output
//   dlavm compile MODEL -o DIR [--dims ...] [--ns NAME] [--lite] [--tune-log FILE]
//       the firmware header and its weight and stream files (deploy::emit), with the best
//       schedules of a tuning log
//   dlavm tune MODEL --log FILE [--dims ...] [--shard I/N] [--resume] [--budget S] [--top K]
//              [--threads N] [--verify N] [--config FILE]
//       the schedules of its VTA kernels searched on the cycle model, one JSON line per
//       candidate appended to the log (a killed run goes on with --resume)
//   dlavm tune-space MODEL [--dims ...]      every knob space as JSON, to edit for --config
//   dlavm tune-merge OUT LOG...              the logs of a run's shards as one
//   dlavm tune-best LOG                      the best schedule of each workload
//
// MODEL is an .onnx file or a gallery model (resnet18, mlp; --image SIZE sets resnet18's image
// size). A progress line goes to standard error when it is a terminal. Exit status: 0 done, 1 the
// model could not be built or run (a failure of the tool or a limit of VTA), 2 bad input (the
// command line, a missing or malformed file, dims or arrays that do not fit the model).
#include <dlavm/core/file.hpp>
#include <dlavm/dlavm.hpp>
#include <dlavm/onnx/export.hpp>
#include <dlavm/onnx/import.hpp>
#include <dlavm/te/npy.hpp>
#include <dlavm/vta/hw/read.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <fmt/format.h>

#include "models.hpp"
#include "onnx_import/mac_split.hpp"
#include "tune_command.hpp"
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using namespace dlavm;
namespace fs = std::filesystem;

// Bad input: the command line or a file the user gave (exit status 2).
struct BadInput : ValueError {
  using ValueError::ValueError;
};

// f(), its errors of what the user gave (a value, a shape, a type, a malformed file) as bad
// input: the library's checks of arrays, bindings, samples and files name the input, the dim,
// the sample and the line.
template <class F>
auto as_bad_input(F f) -> decltype(f()) {
  try {
    return f();
  } catch (const ValueError& e) {
    throw BadInput(e.what());
  } catch (const ShapeError& e) {
    throw BadInput(e.what());
  } catch (const TypeError& e) {
    throw BadInput(e.what());
  } catch (const ParseError& e) {
    throw BadInput(e.what());
  }
}

std::int64_t integer(const std::string& what, std::string_view text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    throw BadInput(fmt::format("{}: '{}' is not an integer", what, text));
  return v;
}

// "NAME=VALUE" split at its first '='.
std::pair<std::string, std::string> name_value(const std::string& flag, const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw BadInput(fmt::format("{} takes NAME=VALUE, not '{}'", flag, text));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// A file the user named as `flag` to read: it exists and is a regular file (a directory, a
// device such as /dev/zero or a pipe is refused before anything reads it).
void input_file(std::string_view flag, const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw BadInput(fmt::format("{}'{}': no such file", flag, path));
  if (not_a_file(path))
    throw BadInput(fmt::format(
        "{}'{}' {}", flag, path,
        fs::is_directory(path, ec) ? "is a directory, not a file" : "is not a regular file"));
}

// A folder the user named as `flag` to write into, created where it is missing.
void output_directory(std::string_view flag, const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_directory(path, ec))
    throw BadInput(fmt::format("{}: '{}' is not a directory", flag, path));
  fs::create_directories(path, ec);
  if (ec || !fs::is_directory(path))
    throw BadInput(fmt::format("{}: cannot create the directory '{}' ({})", flag, path,
                               ec ? ec.message() : "not a directory"));
}

// --dims NAME=MIN..MAX: the range of a symbolic dim of an ONNX model's inputs.
decltype(onnx::ImportOptions::dims) dim_ranges(const std::vector<std::string>& specs) {
  decltype(onnx::ImportOptions::dims) out;
  for (const auto& spec : specs) {
    const auto [name, range] = name_value("--dims", spec);
    const auto dots = range.find("..");
    if (dots == std::string::npos)
      throw BadInput(fmt::format("--dims {}: the range is MIN..MAX, not '{}'", name, range));
    if (out.count(name) != 0) throw BadInput(fmt::format("--dims {} is given twice", name));
    const auto lo = integer("--dims " + name, range.substr(0, dots));
    const auto hi = integer("--dims " + name, range.substr(dots + 2));
    if (lo < 1 || hi < lo)
      throw BadInput(fmt::format("--dims {}: {}..{} is no range of at least 1", name, lo, hi));
    out[name] = {lo, hi};
  }
  return out;
}

// What names the model: MODEL, --dims, --image; and the VTA it is built for: --preset or
// --vta-config.
struct ModelSpec {
  std::string model;
  std::vector<std::string> dims;
  std::int64_t image = 0;  // 0: not given
  std::string preset, vta_config;
};

// The target of --preset NAME (vta::preset) or --vta-config FILE (vta_config.json, its VARIANT
// key naming the design), TVM's simulator without either.
graph::Target target_of(const ModelSpec& spec) {
  if (!spec.preset.empty() && !spec.vta_config.empty())
    throw BadInput("--preset and --vta-config both name the VTA; give one");
  graph::Target target;
  try {
    if (!spec.preset.empty()) target.env = vta::Env(vta::preset(spec.preset));
    if (!spec.vta_config.empty()) target.env = vta::Env(vta::load_config(spec.vta_config));
  } catch (const Error& e) {
    throw BadInput(
        fmt::format("{}: {}", spec.preset.empty() ? "--vta-config" : "--preset", e.what()));
  }
  return target;
}

graph::Function load_model(const ModelSpec& spec) {
  const auto& [model, dims, image, preset, vta_config] = spec;
  if (image != 0 && model != "resnet18")
    throw BadInput(
        fmt::format("--image: only the gallery's resnet18 has an image size, not '{}'", model));
  if (model == "resnet18" || model == "mlp") {
    if (!dims.empty()) throw BadInput("--dims: the gallery's models have no symbolic dims to set");
    if (model == "mlp") return models::Mlp().function();
    return models::ResNet18(image == 0 ? 224 : image).function();
  }
  if (!fs::exists(model))
    throw BadInput(
        fmt::format("'{}': no such file (and no gallery model of that name: resnet18, "
                    "mlp)",
                    model));
  input_file("", model);
  onnx::ImportOptions options;
  options.dims = dim_ranges(dims);
  // (bindings captured by name in this file's lambdas: Clang before 16 cannot capture them)
  const graph::Function fn = [&, &model = model] {
    try {
      return onnx::import(model, options);
    } catch (const Error& e) {
      throw BadInput(e.what());
    }
  }();
  // a --dims name no input has is a typo, not a range to ignore
  std::vector<std::string> names;
  for (const auto& p : fn.params())
    for (const auto& d : p.type().shape)
      for (const auto& v : ne::free_vars(d))
        if (std::ranges::find(names, v.name()) == names.end()) names.push_back(v.name());
  for (const auto& [name, range] : options.dims)
    if (std::ranges::find(names, name) == names.end())
      throw BadInput(fmt::format(
          "--dims {}: the model's inputs have no symbolic dim of that name (theirs: {})", name,
          names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "))));
  return fn;
}

std::string millions(double v) { return fmt::format("{:.2f} M", v / 1e6); }

// A tuning log the user named (`flag`, e.g. "--tune-log: ", prefixes the message), its
// unreadable lines printed as warnings.
tune::Log read_tune_log(const std::string& path, std::string_view flag = "") {
  if (!fs::exists(path)) throw BadInput(fmt::format("{}'{}': no such log", flag, path));
  input_file(flag, path);
  auto log = as_bad_input([&] { return tune::read_log(fs::path(path)); });
  dlavm_tools::print_warnings(log.warnings);
  return log;
}

// --tune-log FILE: the best schedule of each workload the log holds for this target (records
// of another VTA configuration or strategy revision are skipped, with a warning); a workload
// the log lacks keeps the default schedule. Prints how many VTA kernels the build gave the
// log's best knobs.
graph::Module build_model(const graph::Function& fn, const graph::Target& target,
                          const std::string& name, const std::string& tune_log) {
  const auto typed = graph::infer_type(fn, target);
  if (tune_log.empty()) return graph::build(typed, target, {.name = name});
  const auto log = read_tune_log(tune_log, "--tune-log: ");
  const auto chooser = std::make_shared<tune::LogChooser>(log.records, target);
  dlavm_tools::print_warnings(chooser->warnings());
  auto mod = graph::build(typed, target, {.name = name, .chooser = chooser});
  const auto best = tune::best(tune::for_target(log.records, target).records, 1);
  std::size_t kernels = 0, tuned = 0;
  for (const auto& step : mod.steps())
    if (step.kind == graph::ModuleStep::Kind::Vta) {
      ++kernels;
      const auto it = best.find(tune::workload_key(step.workload));
      tuned += it != best.end() &&
               graph::to_string(it->second.front().knobs) == graph::to_string(step.knobs);
    }
  fmt::print("{} of {} VTA kernels take the schedule of {}{}\n", tuned, kernels, tune_log,
             tuned < kernels ? "; the others keep their default" : "");
  return mod;
}

// Graphviz's dot, run without a shell (the paths go to it as they are), renders `dot` as SVG.
void render_svg(const std::string& dot, const std::string& svg_path) {
  const fs::path tmp = fs::path(svg_path).concat(".dot");
  {
    std::ofstream out(tmp);
    if (!(out << dot))
      throw BadInput(fmt::format("--svg: cannot write '{}' beside '{}'", tmp.string(), svg_path));
  }
  const std::string tmp_path = tmp.string();
  std::vector<std::string> args = {"dot", "-Tsvg", tmp_path, "-o", svg_path};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ);
  int status = 0;
  const bool waited = spawned == 0 && waitpid(pid, &status, 0) == pid;
  std::error_code ec;
  fs::remove(tmp, ec);
  if (spawned != 0)
    throw ValueError(
        "--svg: Graphviz's dot cannot be run; is it installed (apt install graphviz)?");
  if (!waited || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw BadInput(fmt::format("--svg: Graphviz's dot could not write '{}' (exit status {})",
                               svg_path, waited && WIFEXITED(status) ? WEXITSTATUS(status) : -1));
}

int inspect(const ModelSpec& spec, const std::string& dot_path, const std::string& svg_path) {
  const auto& model = spec.model;
  const auto fn = load_model(spec);
  const graph::Target target = target_of(spec);
  const auto placed = graph::infer_type(fn, target);
  const auto& part = *placed.placement();
  fmt::print("{}: {} inputs, {} outputs, {} kernels and steps\n", model, placed.params().size(),
             placed.results().size(), part.groups.size());
  for (std::size_t k = 0; k < part.groups.size(); ++k)
    fmt::print("{:>4}  {}\n", k, part.describe(part.groups[k]));
  const auto split = qdq_models::mac_split(placed);
  fmt::print("multiply-accumulates on VTA: {:.1f}% of {}\n", 100 * split.vta_share(),
             millions(split.all));
  const auto mod = graph::build(placed, target, {.name = "model"});
  fmt::print("{}", mod.plan().report(mod.name()));
  const auto dot = graph::to_dot(placed, {.name = "model"});
  if (!dot_path.empty()) {
    std::ofstream out(dot_path);
    if (!(out << dot)) throw BadInput(fmt::format("--dot: cannot write '{}'", dot_path));
  }
  if (!svg_path.empty()) render_svg(dot, svg_path);
  return 0;
}

int run(const ModelSpec& spec, const std::vector<std::string>& input_specs,
        const std::vector<std::string>& bind_specs, const std::string& output_dir,
        const std::string& dump_dir, const std::string& tune_log) {
  const auto& model = spec.model;
  const auto fn = load_model(spec);
  const graph::Target target = target_of(spec);
  std::vector<std::pair<std::string, te::NDArray>> arrays;
  for (const auto& spec : input_specs) {
    const auto [name, path] = name_value("--input", spec);
    if (std::ranges::any_of(arrays, [&name = name](const auto& a) { return a.first == name; }))
      throw BadInput(fmt::format("--input {} is given twice", name));
    input_file(fmt::format("--input {}: ", name), path);
    try {
      arrays.emplace_back(name, te::read_npy(path));
    } catch (const Error& e) {
      throw BadInput(fmt::format("--input {}: {}", name, e.what()));
    }
  }
  std::vector<std::pair<std::string, std::int64_t>> binds;
  for (const auto& spec : bind_specs) {
    const auto [name, value] = name_value("--bind", spec);
    binds.emplace_back(name, integer("--bind " + name, value));
  }
  // an array of another rank than its input: named here (the dims it would bind stay unbound)
  for (const auto& p : fn.params())
    for (const auto& [name, a] : arrays)
      if (name == p.name() && a.ndim() != p.type().shape.size())
        throw BadInput(
            fmt::format("--input {}: the array is {}[{}], of rank {}; input %{} is {}", name,
                        a.dtype(), fmt::join(a.shape(), ", "), a.ndim(), name,
                        fmt::format("{}[{}]", p.type().dtype, fmt::join(p.type().shape, ", "))));
  // a symbolic dim the arrays fix: bound from the first input that has it, unless --bind did
  for (const auto& p : fn.params())
    for (const auto& [name, a] : arrays)
      if (name == p.name() && a.ndim() == p.type().shape.size())
        for (std::size_t k = 0; k < a.ndim(); ++k)
          if (const auto* v = p.type().shape[k].as<ne::VarNode>();
              v != nullptr &&
              std::ranges::none_of(binds, [&](const auto& b) { return b.first == v->name; }))
            binds.emplace_back(v->name, a.shape()[k]);
  if (!output_dir.empty()) output_directory("--output", output_dir);
  if (!dump_dir.empty()) output_directory("--dump", dump_dir);
  auto mod = build_model(fn, target, "model", tune_log);
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  std::vector<graph::NamedArray> inputs;
  for (const auto& [name, a] : arrays) inputs.push_back({name, a});
  std::vector<ne::Binding> bindings;
  for (const auto& [name, v] : binds) bindings.push_back({name, v});
  const auto outputs =
      as_bad_input([&] { return exec.run(inputs, bindings, {.dump_dir = dump_dir}); });
  const auto& last = exec.last_run();
  std::uint64_t roofline = 0;
  for (const auto& s : last.steps) roofline += s.roofline_cycles;
  fmt::print("{}: {} VTA cycles ({:.1f}% of the roofline bound {})\n", model, last.vta_cycles,
             last.vta_cycles == 0
                 ? 0.0
                 : 100.0 * static_cast<double>(roofline) / static_cast<double>(last.vta_cycles),
             roofline);
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const auto& r = fn.results()[k];
    const auto* call = r.as<graph::CallNode>();
    std::string name = call != nullptr && !call->result_name.empty() ? call->result_name
                                                                     : fmt::format("output_{}", k);
    for (auto& c : name)
      if (c == '/' || c == '\\') c = '_';
    fmt::print("  {} {}[{}]\n", name, outputs[k].dtype(), fmt::join(outputs[k].shape(), ", "));
    if (!output_dir.empty()) te::write_npy(fs::path(output_dir) / (name + ".npy"), outputs[k]);
  }
  return 0;
}

// The calibration samples of a model: DIR/*.npy, one file per sample, for a model of one input;
// DIR/<sample>/<input>.npy for several. A symbolic dim is bound from the arrays.
std::vector<quantization::Sample> calibration_samples(const graph::Function& fn,
                                                      const std::string& dir) {
  if (!fs::is_directory(dir)) throw BadInput(fmt::format("--calib: '{}' is no directory", dir));
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path());
  std::ranges::sort(entries);
  const auto sample_of = [&](std::vector<std::pair<std::string, fs::path>> files) {
    quantization::Sample s;
    for (const auto& [name, path] : files) {
      try {
        s.inputs.emplace_back(name, te::read_npy(path));
      } catch (const Error& e) {
        throw BadInput(fmt::format("--calib: {}", e.what()));
      }
      for (const auto& p : fn.params())
        if (p.name() == name && p.type().shape.size() == s.inputs.back().second.ndim())
          for (std::size_t k = 0; k < p.type().shape.size(); ++k)
            if (const auto* v = p.type().shape[k].as<ne::VarNode>();
                v != nullptr &&
                std::ranges::none_of(s.dims, [&](const auto& d) { return d.first == v->name; }))
              s.dims.emplace_back(v->name, s.inputs.back().second.shape()[k]);
    }
    return s;
  };
  std::vector<quantization::Sample> samples;
  if (fn.params().size() == 1) {
    for (const auto& e : entries)
      if (e.extension() == ".npy" && fs::is_regular_file(e))
        samples.push_back(sample_of({{fn.params()[0].name(), e}}));
  } else {
    for (const auto& e : entries) {
      if (!fs::is_directory(e)) continue;
      std::vector<std::pair<std::string, fs::path>> files;
      for (const auto& p : fn.params()) files.emplace_back(p.name(), e / (p.name() + ".npy"));
      samples.push_back(sample_of(files));
    }
  }
  if (samples.empty())
    throw BadInput(fmt::format("--calib: '{}' holds no samples ({})", dir,
                               fn.params().size() == 1
                                   ? "a .npy file per sample"
                                   : "a folder per sample with a <input>.npy file per input"));
  return samples;
}

int quantize(const ModelSpec& spec, const std::string& calib, const std::string& out, bool shift,
             bool asymmetric, const std::string& report) {
  const auto fn = load_model(spec);
  const auto samples = calibration_samples(fn, calib);
  const graph::Target target = target_of(spec);
  const auto result = as_bad_input([&] {
    return dlavm::quantize(fn, samples,
                           {.requantize = shift ? quantization::Requantize::Shift
                                                : quantization::Requantize::Multiplier,
                            .activations = asymmetric ? quantization::Activations::Asymmetric
                                                      : quantization::Activations::Symmetric,
                            .progress = isatty(STDERR_FILENO) != 0},
                           target);
  });
  fmt::print("{}", result.table());
  if (!report.empty()) {
    std::ofstream svg(report);
    if (!(svg << result.svg())) throw BadInput(fmt::format("--report: cannot write '{}'", report));
  }
  onnx::export_model(result.function, out);
  fmt::print("{} samples; written to {}\n", samples.size(), out);
  return 0;
}

// --ns: the header's namespace as it is, so an identifier of C++ that no keyword takes.
void check_namespace(const std::string& ns) {
  static constexpr std::string_view kKeywords[] = {
      "alignas",       "alignof",     "and",
      "and_eq",        "asm",         "auto",
      "bitand",        "bitor",       "bool",
      "break",         "case",        "catch",
      "char",          "char8_t",     "char16_t",
      "char32_t",      "class",       "compl",
      "concept",       "const",       "consteval",
      "constexpr",     "constinit",   "const_cast",
      "continue",      "co_await",    "co_return",
      "co_yield",      "decltype",    "default",
      "delete",        "do",          "double",
      "dynamic_cast",  "else",        "enum",
      "explicit",      "export",      "extern",
      "false",         "float",       "for",
      "friend",        "goto",        "if",
      "inline",        "int",         "long",
      "mutable",       "namespace",   "new",
      "noexcept",      "not",         "not_eq",
      "nullptr",       "operator",    "or",
      "or_eq",         "private",     "protected",
      "public",        "register",    "reinterpret_cast",
      "requires",      "return",      "short",
      "signed",        "sizeof",      "static",
      "static_assert", "static_cast", "struct",
      "switch",        "template",    "this",
      "thread_local",  "throw",       "true",
      "try",           "typedef",     "typeid",
      "typename",      "union",       "unsigned",
      "using",         "virtual",     "void",
      "volatile",      "wchar_t",     "while",
      "xor",           "xor_eq"};
  const auto word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  if (ns.empty() || (ns[0] >= '0' && ns[0] <= '9') || !std::ranges::all_of(ns, word))
    throw BadInput(fmt::format(
        "--ns: '{}' is no C++ identifier (letters, digits and _, not a digit first)", ns));
  if (std::ranges::find(kKeywords, std::string_view(ns)) != std::end(kKeywords))
    throw BadInput(fmt::format("--ns: '{}' is a C++ keyword", ns));
}

int compile(const ModelSpec& spec, const std::string& out, const std::string& ns, bool lite,
            const std::string& tune_log) {
  const auto& model = spec.model;
  check_namespace(ns);
  output_directory("-o", out);
  const auto fn = load_model(spec);
  const graph::Target target = target_of(spec);
  const auto mod = build_model(fn, target, ns, tune_log);
  const auto r = deploy::emit(mod, out, {.ns = ns, .lite = lite});
  fmt::print(
      "{}: {} static streams ({} instructions), {} steps replayed per run\n  {}\n  {}\n  "
      "{}\n",
      model, r.static_streams, r.static_instructions, r.replayed_steps, r.header, r.weights,
      r.insts);
  return 0;
}

// tune-space: every knob space of the model's VTA kernels, as JSON (tune::read_config's input).
int tune_space(const ModelSpec& spec) {
  const graph::Target target = target_of(spec);
  fmt::print("{}", tune::to_json(tune::config_of(tune::tasks(load_model(spec), target))));
  return 0;
}

// tune-merge: the logs of a run's shards as one log (tune::merge: a candidate measured twice
// keeps one record).
int tune_merge(const std::string& out, const std::vector<std::string>& paths) {
  std::vector<tune::Log> logs;
  for (const auto& p : paths) logs.push_back(read_tune_log(p));
  const auto merged = tune::merge(logs);
  std::ofstream file(out);
  for (const auto& r : merged) tune::append(file, r);
  if (!file) throw BadInput(fmt::format("tune-merge: cannot write '{}'", out));
  fmt::print("{} records from {} logs into {}\n", merged.size(), logs.size(), out);
  return 0;
}

// tune-best: each workload's best record (ties broken as tune::best does, so that the same
// records in any order choose the same schedule).
int tune_best(const std::string& path) {
  const auto log = read_tune_log(path);
  const auto top = tune::best(log.records, 1);
  if (top.empty())
    throw BadInput(
        fmt::format("tune-best: '{}' has no record of a candidate that ran ({} records, all "
                    "failed; {} lines skipped)",
                    path, log.records.size(), log.warnings.size()));
  // a log of several VTA configurations: each one's best apart, named (a schedule timed for
  // one design is no schedule of another)
  std::vector<vta::Config> targets;
  for (const auto& r : log.records)
    if (std::ranges::find(targets, r.target) == targets.end()) targets.push_back(r.target);
  for (std::size_t t = 0; t < targets.size(); ++t) {
    std::vector<tune::Record> mine;
    for (const auto& r : log.records)
      if (r.target == targets[t]) mine.push_back(r);
    if (targets.size() > 1)
      fmt::print("target {} of {}: '{}', tiles {}x{}x{} (the records timed for this VTA)\n", t + 1,
                 targets.size(), targets[t].target, targets[t].batch(), targets[t].block_in(),
                 targets[t].block_out());
    for (const auto& [workload, records] : tune::best(mine, 1))
      fmt::print("{} cycles  {}\n  {}\n", *records.front().cycles,
                 graph::to_string(records.front().knobs), workload);
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dlavm: compile, inspect, run and tune models for the VTA accelerator"};
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       fmt::format("dlavm {}.{}.{}", version_major, version_minor, version_patch));
  app.footer(
      "MODEL: an .onnx file, or a gallery model (resnet18, mlp).\n"
      "Exit status: 0 done; 1 the model could not be built or run; 2 bad input.");
  ModelSpec spec;
  std::string dot_path, svg_path, output_dir, calib, out, report, ns = "model";
  std::vector<std::string> inputs, binds;
  bool shift = false, asymmetric = false, lite = false;
  // MODEL, --dims and --image, which every command that builds a model takes
  const auto model_options = [&](CLI::App* cmd) {
    cmd->add_option("MODEL", spec.model, "an .onnx file or a gallery model")->required();
    cmd->add_option("--dims", spec.dims, "NAME=MIN..MAX: the range of a symbolic input dim");
    cmd->add_option("--image", spec.image, "the gallery's resnet18: its image size (224)")
        ->check(CLI::Range(1, 4096));
    cmd->add_option("--preset", spec.preset,
                    "the VTA design to build for: sim (the default), pynq, ultra96, zcu104, "
                    "de10nano, tsim");
    cmd->add_option("--vta-config", spec.vta_config,
                    "the VTA to build for as a vta_config.json (its VARIANT key names the "
                    "design)");
  };

  auto* inspect_cmd =
      app.add_subcommand("inspect", "where each kernel and step runs and why, the memory plan");
  model_options(inspect_cmd);
  inspect_cmd->add_option("--dot", dot_path, "write the placed graph as Graphviz DOT");
  inspect_cmd->add_option("--svg", svg_path, "render the placed graph as SVG (Graphviz's dot)");

  auto* run_cmd = app.add_subcommand("run", "run the model on the simulated VTA");
  model_options(run_cmd);
  run_cmd->add_option("--input", inputs, "NAME=FILE.npy: an input's array")->required();
  run_cmd->add_option("--bind", binds,
                      "NAME=VALUE: a symbolic dim's value (else read off the arrays)");
  run_cmd->add_option("--output", output_dir, "write each output as DIR/NAME.npy");
  std::string tune_log;
  run_cmd->add_option("--tune-log", tune_log,
                      "build with the best schedules of a tuning log (dlavm tune)");
  std::string dump_dir;
  run_cmd->add_option("--dump", dump_dir,
                      "write each VTA step's stream and DRAM images with a manifest, in "
                      "DIR/stepNN_<program>/ (vta::load_dump, vta::replay)");

  auto* quantize_cmd = app.add_subcommand(
      "quantize", "quantize a float model from calibration samples, written as QDQ ONNX");
  model_options(quantize_cmd);
  quantize_cmd
      ->add_option("--calib", calib,
                   "a folder of .npy samples (one per file; a folder per sample for several "
                   "inputs)")
      ->required();
  quantize_cmd->add_option("-o,--output", out, "the quantized model, an .onnx file")->required();
  quantize_cmd->add_flag("--shift", shift,
                         "power-of-two scales: requantization on VTA (else a float multiplier)");
  quantize_cmd->add_flag("--asymmetric", asymmetric, "activations with a zero point");
  quantize_cmd->add_option("--report", report, "the per-layer SQNR as an SVG plot");

  dlavm_tools::TuneCommand tune_options;
  std::string shard;
  double budget = 0;
  auto* tune_cmd = app.add_subcommand(
      "tune", "search the schedules of the model's VTA kernels, appending to a log");
  model_options(tune_cmd);
  tune_cmd->add_option("--log", tune_options.log, "the log appended to")->required();
  tune_cmd->add_option("--shard", shard, "I/N: this process's share of the candidates");
  tune_cmd->add_flag("--resume", tune_options.resume, "continue a log that holds records");
  tune_cmd->add_option("--budget", budget, "stop after this many seconds")
      ->check(CLI::Range(1e-3, 1e9));
  tune_cmd
      ->add_option("--top", tune_options.options.top,
                   "candidates per workload, the cycle model's best first")
      ->check(CLI::Range(1, 1000000000));
  tune_cmd->add_option("--threads", tune_options.options.threads, "threads evaluating candidates")
      ->check(CLI::Range(0, 1024));
  tune_cmd
      ->add_option("--verify", tune_options.options.verify_every,
                   "every N-th candidate also run on the simulator")
      ->check(CLI::Range(0, 1000000000));
  tune_cmd->add_option("--config", tune_options.config, "a knob-space file (dlavm tune-space)");

  auto* space_cmd = app.add_subcommand(
      "tune-space", "every knob space of the model's VTA kernels as JSON, to edit for --config");
  model_options(space_cmd);
  std::string merged;
  std::vector<std::string> logs;
  auto* merge_cmd = app.add_subcommand("tune-merge", "merge the logs of a run's shards");
  merge_cmd->add_option("OUT", merged, "the merged log written")->required();
  merge_cmd->add_option("LOG", logs, "the shards' logs")->required();
  std::string best_log;
  auto* best_cmd = app.add_subcommand("tune-best", "the best schedule of each workload in a log");
  best_cmd->add_option("LOG", best_log, "a tuning log")->required();

  auto* compile_cmd =
      app.add_subcommand("compile", "the firmware header, weights and streams (deploy::emit)");
  model_options(compile_cmd);
  compile_cmd->add_option("-o,--output", out, "the folder the files go to")->required();
  compile_cmd->add_option("--ns", ns, "the header's namespace and the files' name");
  compile_cmd->add_flag("--lite", lite, "consecutive static VTA steps as one stream");
  compile_cmd->add_option("--tune-log", tune_log,
                          "build with the best schedules of a tuning log (dlavm tune)");

  // (CLI11 would say only that a subcommand is required)
  std::vector<std::string> names;
  for (const auto* c : app.get_subcommands({})) names.push_back(c->get_name());
  if (argc > 1 && argv[1][0] != '-' && std::ranges::find(names, argv[1]) == names.end()) {
    fmt::print(stderr, "dlavm: unknown subcommand '{}' ({}); dlavm --help lists them\n", argv[1],
               fmt::join(names, ", "));
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : 2;
  }
  try {
    if (*inspect_cmd) return inspect(spec, dot_path, svg_path);
    if (*run_cmd) return run(spec, inputs, binds, output_dir, dump_dir, tune_log);
    if (*quantize_cmd) return quantize(spec, calib, out, shift, asymmetric, report);
    if (*compile_cmd) return compile(spec, out, ns, lite, tune_log);
    if (*space_cmd) return tune_space(spec);
    if (*merge_cmd) return tune_merge(merged, logs);
    if (*best_cmd) return tune_best(best_log);
    if (*tune_cmd) {
      if (!shard.empty())
        tune_options.options.shard = as_bad_input([&] { return tune::parse_shard(shard); });
      if (std::isnan(budget)) throw BadInput("--budget: nan is no number of seconds");
      if (budget > 0) tune_options.options.budget_seconds = budget;
      const auto fn = load_model(spec);
      return as_bad_input(
          [&] { return dlavm_tools::tune_command(fn, spec.model, target_of(spec), tune_options); });
    }
  } catch (const BadInput& e) {
    fmt::print(stderr, "dlavm: {}\n", e.what());
    return 2;
  } catch (const Error& e) {
    fmt::print(stderr, "dlavm: {}\n", e.what());
    return 1;
  } catch (const fs::filesystem_error& e) {  // a path the user gave
    fmt::print(stderr, "dlavm: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dlavm: {}\n", e.what());
    return 1;
  }
  return 2;
}
