// Tuning ResNet-18: every distinct VTA workload of the network searched on the cycle model
// (tune::tune on every core, the `--top` best estimates of each space, within `--budget`
// seconds), then the network built twice, with the default schedules and with the log's best,
// and both run on the simulator: per layer, default vs tuned cycles, the share of the roofline
// bound and of the MACs / 256 a cycle VTA's GEMM core can do; the four stages after the max
// pool and the whole model. The least roofline bound among each workload's candidates is a
// floor no schedule searched can beat (with --top 0, no schedule of the space): the totals of
// those floors say what the space can still give. The tuned network must compute what the
// default one does. With --dump, the tuned run writes each VTA step's stream and DRAM images
// (as the other model examples do), and each step's dump is replayed on a fresh simulator to
// the output the run wrote.
//   tune_resnet18 [--image N] [--top K] [--budget SECONDS] [--log FILE] [--dump DIR]
//     N 64 (224: ImageNet's size), K 6 (0: every candidate), no budget, the log in memory
#include <dlavm/tune.hpp>
#include <dlavm/vta/hw/read.hpp>

#include "models.hpp"
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

namespace {

namespace graph = dlavm::graph;
namespace tune = dlavm::tune;
namespace vta = dlavm::vta;

// The cycles of a module's VTA steps: all of them, and the convolutions after its max pooling
// (the four stages; the classifier after them is not one).
struct Totals {
  std::uint64_t all = 0, after_pool = 0;
  std::int64_t macs = 0;
};

// cycles(step index) summed over the VTA steps, and over the convolutions after the max pool
template <class Cycles>
Totals totals(const graph::Executor& e, Cycles cycles) {
  const graph::Module& m = e.module();
  Totals t;
  bool after = false;
  for (std::size_t i = 0; i < m.steps().size(); ++i) {
    const auto& s = m.steps()[i];
    if (s.kind != graph::ModuleStep::Kind::Vta) continue;
    const std::uint64_t c = cycles(i);
    t.all += c;
    t.macs += e.last_run().steps[i].macs;
    if (after && s.op.starts_with("conv2d")) t.after_pool += c;
    after = after || s.op.starts_with("max_pool2d");
  }
  return t;
}

double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }

}  // namespace

int main(int argc, char** argv) try {
  std::int64_t image = 64;
  tune::TuneOptions options{.top = 6};
  std::string log_path, dump;
  constexpr auto usage =
      "usage: {} [--image N] [--top K] [--budget SECONDS] [--log FILE] [--dump DIR]\n";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      fmt::print(stderr, usage, argv[0]);
      return 2;
    }
    const char* value = argv[++i];
    if (flag == "--image") {
      image = std::atoll(value);
    } else if (flag == "--top") {
      options.top = static_cast<std::size_t>(std::atoll(value));
    } else if (flag == "--budget") {
      options.budget_seconds = std::atof(value);
    } else if (flag == "--log") {
      log_path = value;
    } else if (flag == "--dump") {
      dump = value;
    } else {
      fmt::print(stderr, usage, argv[0]);
      return 2;
    }
  }
  const models::ResNet18 net(image);
  const graph::Target target;
  const auto fn = net.function();
  const auto tasks = tune::tasks(fn, target);
  std::ofstream file;
  std::ostringstream memory;
  if (!log_path.empty()) file.open(log_path);
  std::ostream& log = log_path.empty() ? static_cast<std::ostream&>(memory) : file;
  const auto start = std::chrono::steady_clock::now();
  const auto records = tune::tune(tasks, target.env, log, {}, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("ResNet-18 at {} x {}: {} workloads, {} candidates in {:.1f} s\n\n", image, image,
             tasks.size(), records.size(), seconds);

  auto plain = graph::build(fn, target, {.name = "default"});
  auto tuned = graph::build(
      fn, target,
      {.name = "tuned", .chooser = std::make_shared<tune::LogChooser>(records, target)});
  const auto data = dlavm::te::NDArray::random(dlavm::DType::int8(), {1, 3, image, image}, 1);
  const graph::NamedArray inputs[] = {{"data", data}};
  vta::SimDevice dev(target.env.config);
  graph::Executor plain_exec(plain, dev), tuned_exec(tuned, dev);
  const auto want = plain_exec.run(inputs);
  const auto got = tuned_exec.run(inputs, {}, {.dump_dir = dump});
  // each dumped step replayed on a fresh simulator writes what the run wrote
  std::size_t replayed = 0, replay_differ = 0;
  if (!dump.empty())
    for (const auto& entry : std::filesystem::directory_iterator(dump)) {
      const auto d = vta::load_dump(entry.path().string());
      vta::SimDevice fresh(d.manifest.config);
      const auto r = vta::replay(fresh, d);
      for (std::size_t k = 0; k < d.manifest.buffers.size(); ++k)
        replay_differ += d.manifest.buffers[k].output && r.images[k] != d.images[k];
      ++replayed;
    }

  // per workload, the least roofline bound of its candidates
  std::map<std::string, std::int64_t> floor;
  for (const auto& r : records)
    if (r.cycles) {
      const auto [it, fresh] = floor.emplace(r.workload, r.bound_cycles);
      if (!fresh) it->second = std::min(it->second, r.bound_cycles);
    }
  const auto floor_of = [&](std::size_t i) {
    return static_cast<std::uint64_t>(floor.at(tune::workload_key(tuned.steps()[i].workload)));
  };
  fmt::print("{:<34} {:>10} {:>10} {:>7} {:>9} {:>9} {:>10}  {}\n", "layer", "default", "tuned",
             "gain", "roofline", "MACs/256", "floor", "tuned schedule");
  for (std::size_t i = 0; i < tuned.steps().size(); ++i) {
    const auto& s = tuned.steps()[i];
    if (s.kind != graph::ModuleStep::Kind::Vta) continue;
    const auto& a = plain_exec.last_run().steps[i];
    const auto& b = tuned_exec.last_run().steps[i];
    fmt::print("{:<34} {:>10} {:>10} {:>6.1f}% {:>8.1f}% {:>8.1f}% {:>10}  {}\n",
               s.label.substr(0, 34), a.cycles, b.cycles,
               percent(static_cast<double>(a.cycles) - static_cast<double>(b.cycles),
                       static_cast<double>(a.cycles)),
               percent(static_cast<double>(b.roofline_cycles), static_cast<double>(b.cycles)),
               percent(static_cast<double>(b.macs) / 256.0, static_cast<double>(b.cycles)),
               floor_of(i), s.tiling);
  }
  const auto d =
      totals(plain_exec, [&](std::size_t i) { return plain_exec.last_run().steps[i].cycles; });
  const auto t =
      totals(tuned_exec, [&](std::size_t i) { return tuned_exec.last_run().steps[i].cycles; });
  const auto f = totals(tuned_exec, floor_of);
  fmt::print("\nthe four stages after the max pool (their convolutions): {} -> {} cycles\n",
             d.after_pool, t.after_pool);
  fmt::print("the whole model: {} -> {} cycles, {:.1f}% -> {:.1f}% of its MACs / 256\n", d.all,
             t.all, percent(static_cast<double>(d.macs) / 256.0, static_cast<double>(d.all)),
             percent(static_cast<double>(t.macs) / 256.0, static_cast<double>(t.all)));
  fmt::print(
      "the least bound of any candidate searched: {} cycles after the max pool, {} for the whole "
      "model ({:.1f}% of its MACs / 256)\n",
      f.after_pool, f.all,
      percent(static_cast<double>(f.macs) / 256.0, static_cast<double>(f.all)));
  bool ok = got.size() == want.size() && t.all <= d.all;
  for (std::size_t k = 0; ok && k < got.size(); ++k) ok = got[k] == want[k];
  if (!dump.empty()) {
    std::size_t vta_steps = 0;
    for (const auto& s : tuned.steps()) vta_steps += s.kind == graph::ModuleStep::Kind::Vta;
    fmt::print("{} of {} VTA steps dumped in {}; replayed, {} outputs differ\n", replayed,
               vta_steps, dump, replay_differ);
    ok = ok && replayed == vta_steps && replay_differ == 0;
  }
  fmt::print("{}: the tuned network computes what the default one does{}\n", ok ? "PASS" : "FAIL",
             t.all <= d.all ? ", in no more cycles" : ", but slower");
  return ok ? 0 : 1;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "FAIL: {}\n", e.what());
  return 1;
}
