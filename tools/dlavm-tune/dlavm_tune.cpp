// dlavm-tune: searches the schedules of a model's VTA kernels on the cycle model, writing one
// JSON line per candidate (tune/tuner.hpp); merges the logs of a run's shards; prints a log's
// best schedules. A log is only ever appended to: a killed run is continued with --resume,
// which skips the candidates the log holds for this target and warns about the lines it cannot
// read (another record format version) and the records made for another VTA configuration or
// strategy revision, whose candidates it evaluates again.
//
//   dlavm-tune tune resnet18 --log r18.log [--top 32] [--threads 2] [--shard 0/4]
//                            [--budget 600] [--resume] [--image 224] [--config spaces.json]
//                            [--verify 50]   (every 50th candidate also run on the simulator)
//   dlavm-tune space resnet18 [--image 224] > spaces.json   (every knob space, to edit)
//   dlavm-tune merge all.log shard0.log shard1.log ...
//   dlavm-tune best all.log
//
// Models: resnet18 (examples/models.hpp; --image sets its size) and mlp. A progress line
// (candidates done, rate, best so far, time left) goes to standard error when it is a terminal.
#include <dlavm/graph.hpp>
#include <dlavm/tune.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <fmt/format.h>

#include "models.hpp"
#include "tune_command.hpp"
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace {

using namespace dlavm;

constexpr std::string_view kUsage =
    "usage: dlavm-tune tune MODEL --log FILE [--top K] [--threads N] [--shard I/N]\n"
    "                       [--budget SECONDS] [--resume] [--image SIZE] [--config FILE]\n"
    "                       [--verify N]\n"
    "       dlavm-tune space MODEL [--image SIZE]\n"
    "       dlavm-tune merge OUT LOG...\n"
    "       dlavm-tune best LOG\n"
    "MODEL: resnet18 | mlp\n";

std::int64_t integer(std::string_view flag, std::string_view text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    throw ValueError(
        fmt::format("dlavm-tune: {} takes a non-negative integer, not '{}'", flag, text));
  return v;
}

graph::Function model(std::string_view name, std::int64_t image) {
  if (name == "resnet18") return models::ResNet18(image).function();
  if (name == "mlp") return models::Mlp().function();
  throw ValueError(fmt::format("dlavm-tune: no model '{}' (resnet18, mlp)", name));
}

int run_tune(const std::vector<std::string_view>& args) {
  if (args.empty()) throw ValueError("dlavm-tune tune: which model?");
  dlavm_tools::TuneCommand c;
  std::int64_t image = 224;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const auto flag = args[i];
    if (flag == "--resume") {
      c.resume = true;
      continue;
    }
    if (i + 1 >= args.size()) throw ValueError(fmt::format("dlavm-tune: {} needs a value", flag));
    const auto value = args[++i];
    if (flag == "--log") {
      c.log = value;
    } else if (flag == "--top") {
      c.options.top = static_cast<std::size_t>(integer(flag, value));
    } else if (flag == "--threads") {
      c.options.threads = static_cast<unsigned>(integer(flag, value));
    } else if (flag == "--shard") {
      c.options.shard = tune::parse_shard(value);
    } else if (flag == "--budget") {
      c.options.budget_seconds = static_cast<double>(integer(flag, value));
    } else if (flag == "--image") {
      image = integer(flag, value);
    } else if (flag == "--config") {
      c.config = value;
    } else if (flag == "--verify") {
      c.options.verify_every = static_cast<std::size_t>(integer(flag, value));
    } else {
      throw ValueError(fmt::format("dlavm-tune tune: unknown option '{}'", flag));
    }
  }
  return dlavm_tools::tune_command(model(args[0], image), std::string(args[0]), std::move(c));
}

int run_space(const std::vector<std::string_view>& args) {
  if (args.empty()) throw ValueError("dlavm-tune space: which model?");
  std::int64_t image = 224;
  for (std::size_t i = 1; i < args.size(); i += 2) {
    if (args[i] != "--image" || i + 1 >= args.size())
      throw ValueError(fmt::format("dlavm-tune space: unknown option '{}'", args[i]));
    image = integer(args[i], args[i + 1]);
  }
  const graph::Target target;
  fmt::print("{}", tune::to_json(tune::config_of(tune::tasks(model(args[0], image), target))));
  return 0;
}

int run_merge(const std::vector<std::string_view>& args) {
  if (args.size() < 2) throw ValueError("dlavm-tune merge: OUT and at least one LOG are needed");
  std::vector<tune::Log> logs;
  for (std::size_t i = 1; i < args.size(); ++i) {
    logs.push_back(tune::read_log(std::filesystem::path(args[i])));
    dlavm_tools::print_warnings(logs.back().warnings);
  }
  const auto merged = tune::merge(logs);
  std::ofstream out{std::string(args[0])};
  if (!out) throw ValueError(fmt::format("dlavm-tune: cannot write '{}'", args[0]));
  for (const auto& r : merged) tune::append(out, r);
  fmt::print("{} records from {} logs into {}\n", merged.size(), logs.size(), args[0]);
  return 0;
}

int run_best(const std::vector<std::string_view>& args) {
  if (args.size() != 1) throw ValueError("dlavm-tune best: one LOG");
  const auto log = tune::read_log(std::filesystem::path(args[0]));
  dlavm_tools::print_warnings(log.warnings);
  const auto top = tune::best(log.records, 1);
  if (top.empty())
    throw ValueError(fmt::format(
        "dlavm-tune best: '{}' has no record of a candidate that ran ({} records, all failed; {} "
        "lines skipped)",
        args[0], log.records.size(), log.warnings.size()));
  for (const auto& [workload, records] : top)
    fmt::print("{} cycles  {}\n  {}\n", *records.front().cycles,
               graph::to_string(records.front().knobs), workload);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty()) {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  const auto command = args.front();
  args.erase(args.begin());
  try {
    if (command == "tune") return run_tune(args);
    if (command == "space") return run_space(args);
    if (command == "merge") return run_merge(args);
    if (command == "best") return run_best(args);
    fmt::print(stderr, "dlavm-tune: unknown command '{}'\n{}", command, kUsage);
    return 2;
  } catch (const dlavm::Error& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
}
