// graph::build and graph::Module: random convolution and dense groups with random epilogues
// built for VTA and run on the simulator, against the reference executor; a small ResNet-18
// layer by layer; the module's text, summary and errors; any vta::Device runs a module.
#include <dlavm/graph.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include "../../examples/model_check.hpp"
#include "../../examples/models.hpp"
#include "random_graphs.hpp"
#include "random_networks.hpp"
#include <random>
#include <set>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

namespace build_test {

using random_graphs::check_on_vta;
using random_graphs::random_epilogue;
using random_graphs::Rng;

// A Device that forwards to a simulator and counts the streams it runs.
class CountingDevice final : public vta::Device {
 public:
  explicit CountingDevice(const vta::Config& c) : sim_(c) {}
  const vta::Config& config() const override { return sim_.config(); }
  vta::Buffer alloc(std::size_t bytes) override {
    ++allocs;
    return sim_.alloc(bytes);
  }
  void free(vta::Buffer b) override {
    ++frees;
    sim_.free(b);
  }
  void copy_in(vta::Buffer dst, std::size_t offset, const void* src, std::size_t bytes) override {
    bytes_in += bytes;
    sim_.copy_in(dst, offset, src, bytes);
  }
  void copy_out(vta::Buffer src, std::size_t offset, void* dst, std::size_t bytes) override {
    bytes_out += bytes;
    sim_.copy_out(src, offset, dst, bytes);
  }
  vta::RunResult run_at(const vta::Stream& stream, const vta::StreamPlacement& at) override {
    ++runs;
    return sim_.run_at(stream, at);
  }
  int runs = 0, allocs = 0, frees = 0;
  std::size_t bytes_in = 0, bytes_out = 0;

 private:
  vta::SimDevice sim_;
};

}  // namespace build_test

using namespace build_test;

TEST_CASE("build: random convolutions with random epilogues equal the reference executor") {
  Rng rng{std::mt19937_64(2024)};
  int vta_steps = 0;
  for (int trial = 0; trial < 24; ++trial) {
    const std::int64_t n = rng(1, 2), c = rng(1, 40), o = rng(1, 40);
    const std::int64_t h = rng(1, 11), w = rng(1, 11), k = rng(1, 4), s = rng(1, 3);
    const std::int64_t pt = rng(0, k - 1), pl = rng(0, k - 1);
    const std::int64_t pb = std::max(rng(0, k - 1), k - h - pt),
                       pr = std::max(rng(0, k - 1), k - w - pl);
    if (h + pt + pb < k || w + pl + pr < k || pb > k - 1 || pr > k - 1) continue;
    INFO("trial ", trial, ": ", n, "x", c, "x", h, "x", w, " -> ", o, ", kernel ", k, ", stride ",
         s, ", padding ", pt, " ", pl, " ", pb, " ", pr);
    auto x = graph::input("x", {n, c, h, w}, DType::int8());
    auto wt = graph::constant("w", te::NDArray::random(DType::int8(), {o, c, k, k},
                                                       static_cast<std::uint64_t>(trial), -20, 20));
    auto acc = graph::conv2d(x, wt, {.strides = {s, s}, .padding = {pt, pl, pb, pr}});
    const auto shape = graph::infer_type(graph::function({x}, {acc}), graph::default_ops())
                           .results()[0]
                           .type()
                           .shape;
    std::vector<graph::Expr> params{x};
    auto y = random_epilogue(rng, acc, o, 1, shape, params, static_cast<std::uint64_t>(trial));
    vta_steps += check_on_vta(graph::function(params, {y}), {}, static_cast<std::uint64_t>(trial));
  }
  CHECK(vta_steps >= 18);  // most trials give a VTA kernel (a result left int32 does not)
}

TEST_CASE("build: random dense layers over a symbolic row count equal the reference executor") {
  Rng rng{std::mt19937_64(7)};
  int vta_steps = 0;
  for (int trial = 0; trial < 12; ++trial) {
    auto rows = ne::var("rows", 1, rng(1, 80));
    const std::int64_t k = rng(1, 70), nout = rng(1, 70);
    const bool rank3 = rng.coin();
    std::vector<ne::Expr> xs =
        rank3 ? std::vector<ne::Expr>{2, rows, k} : std::vector<ne::Expr>{rows, k};
    auto x = graph::input("x", xs, DType::int8());
    auto wt = graph::constant(
        "w", te::NDArray::random(DType::int8(), {nout, k}, static_cast<std::uint64_t>(trial) + 50));
    auto acc = graph::dense(x, wt);
    std::vector<ne::Expr> shape = xs;
    shape.back() = nout;
    std::vector<graph::Expr> params{x};
    auto y = random_epilogue(rng, acc, nout, -1, shape, params, static_cast<std::uint64_t>(trial));
    const auto fn = graph::function(params, {y});
    for (const std::int64_t r : {std::int64_t{1}, ne::bounds(rows).max}) {
      INFO("trial ", trial, ": rows ", r, " of ", ne::bounds(rows).max, ", K ", k, ", N ", nout);
      const ne::Binding b[] = {{"rows", r}};
      vta_steps += check_on_vta(fn, b, static_cast<std::uint64_t>(trial));
    }
  }
  CHECK(vta_steps >= 16);
}

// A decode step multiplies one token by the weights: the tiling chosen for 2048 tokens (a few
// K tiles per step, so that many rows fit) takes many small steps for it. build adds the tiling
// chosen for one row, used only there.
TEST_CASE("build: a symbolic row count gets a second tiling at its minimum, used only there") {
  auto token = ne::var("token", 1, 256);
  auto x = graph::input("x", {token, 512}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {512, 512}, 5));
  auto b = graph::constant("b", te::NDArray::random(DType::int32(), {512}, 6, -500, 500));
  auto y = graph::requantize(graph::bias_add(graph::dense(x, w), b, {.axis = -1}),
                             {.shift = 9, .rounding = dlavm::host::Rounding::Nearest});
  const auto fn = graph::function({x}, {y});
  auto two = graph::build(fn, graph::Target{}, {.name = "fc"});
  auto one = graph::build(fn, graph::Target{}, {.name = "fc", .specialize_min_rows = false});
  const auto vta_step = [](const graph::Module& m) -> const graph::ModuleStep& {
    for (const auto& s : m.steps())
      if (s.kind == graph::ModuleStep::Kind::Vta) return s;
    FAIL("no VTA step");
    return m.steps().front();
  };
  const auto& special = vta_step(two);
  const auto& general = vta_step(one);
  INFO(special.tiling);
  CHECK(special.tiling.starts_with(general.tiling + "; token == 1: rows 1,"));
  CHECK(special.knobs == general.knobs);
  CHECK(special.program->stream_bound().insns == general.program->stream_bound().insns);
  // each tiling's buffers in an arm of its own, which never meet the other's
  std::size_t arms[3] = {};
  for (const auto& r : special.program->regions()) ++arms[std::min<std::uint32_t>(r.arm, 2)];
  CHECK(arms[0] == 0);
  CHECK(arms[1] > 0);
  CHECK(arms[2] == general.program->regions().size());
  // inside a loop, a condition may take one arm in one iteration and the other in the next:
  // its buffers then belong to no arm, and their hazards are tracked
  dlavm::tir::PrimFunc looped = special.program->func();
  looped.body =
      dlavm::tir::make_for(ne::var("rep", 0, 1), 0, 2, dlavm::tir::ForKind::Serial, looped.body);
  const vta::Program in_loop(special.program->env(), looped);
  CHECK(in_loop.regions().size() == special.program->regions().size());
  for (const auto& r : in_loop.regions()) CHECK(r.arm == 0);
  // a buffer both arms allocate (one node the arms share, as a rewrite that keeps a buffer in
  // both leaves it) lives in whichever runs: no arm, so that its hazards with either arm's
  // buffers at its entries are tracked (it was the arm visited last, apart from the other's);
  // allocated at two places it is an error, its accesses having one address
  const auto& env = special.program->env();
  const auto shared = te::make_buffer("shared", DType::int32(), {ne::Expr(16)}, env.acc_scope);
  const auto before = te::make_buffer("before", DType::int32(), {ne::Expr(16)}, env.acc_scope);
  struct AroundArms : dlavm::tir::StmtMutator<AroundArms> {
    te::Buffer shared, before;  // `before` (where defined) around the else arm's `shared`
    bool done = false;
    // (the condition outside every loop, on the dims: the arms')
    dlavm::tir::Stmt visit_for(const dlavm::tir::ForNode&, const dlavm::tir::Stmt& s) { return s; }
    dlavm::tir::Stmt visit_if(const dlavm::tir::IfThenElseNode& n, const dlavm::tir::Stmt& s) {
      if (done) return s;
      done = true;
      dlavm::tir::Stmt other = dlavm::tir::make_allocate(shared, n.else_case);
      if (before.defined()) other = dlavm::tir::make_allocate(before, other);
      return dlavm::tir::make_if(n.cond, dlavm::tir::make_allocate(shared, n.then_case), other);
    }
  };
  AroundArms around;
  around.shared = shared;
  dlavm::tir::PrimFunc both = special.program->func();
  both.body = around.visit(both.body);
  REQUIRE(around.done);
  const vta::Program in_both(env, both);
  CHECK(in_both.regions().at(in_both.region_of(shared.get())).arm == 0);
  AroundArms apart;
  apart.shared = shared;
  apart.before = before;
  both.body = apart.visit(special.program->func().body);
  std::string error;
  try {
    const vta::Program at_two(env, both);
  } catch (const dlavm::ScheduleError& e) {
    error = e.what();
  }
  CHECK(
      error.starts_with("buffer 'shared' is allocated twice in local.acc_buffer: 1 entries at "
                        "entry "));
  // where the chooser picks the same knobs for one row, one tiling serves
  struct Ones final : graph::Chooser {
    graph::Knobs choose(const graph::Workload&, const graph::KnobSpace& space) const override {
      return space.knobs_of(std::vector<std::int64_t>(space.knobs.size(), 1));
    }
  };
  const auto single =
      graph::build(fn, graph::Target{}, {.name = "fc", .chooser = std::make_shared<const Ones>()});
  const std::string single_tiling = vta_step(single).tiling;
  INFO(single_tiling);
  CHECK(single_tiling == "rows 1, n 1, k 1, 1 thread");
  const std::uint64_t phys[] = {0x100000, 0x200000, 0x300000, 0x400000};
  for (const std::int64_t t : {1, 2, 17, 256}) {
    INFO("token = ", t);
    const ne::Binding at[] = {{"token", t}};
    const auto a = special.program->instantiate(at, phys);
    const auto g = general.program->instantiate(at, phys);
    if (t == 1) {  // one K step per column block where the general tiling takes 32
      CHECK(a.insns.size() * 4 < g.insns.size());
    } else {  // elsewhere, the general tiling's stream word for word
      CHECK(a.insns == g.insns);
      CHECK(a.uops == g.uops);
    }
    // the traffic the summary reports is that of the tiling that runs
    const auto traffic = ne::eval(special.traffic, at),
               traffic_general = ne::eval(general.traffic, at);
    if (t == 1)
      CHECK(traffic < traffic_general);
    else
      CHECK(traffic == traffic_general);
    const auto input = te::NDArray::random(DType::int8(), {t, 512}, static_cast<std::uint64_t>(t));
    const graph::NamedArray inputs[] = {{"x", input}};
    vta::SimDevice dev(graph::Target{}.env.config);
    const auto reference = graph::evaluate(graph::infer_type(fn, graph::Target{}), inputs, at);
    CHECK(graph::Executor(two, dev).run(inputs, at)[0] == reference[0]);
    CHECK(graph::Executor(one, dev).run(inputs, at)[0] == reference[0]);
  }
}

TEST_CASE("build: random max and average poolings with their epilogues equal the reference") {
  Rng rng{std::mt19937_64(99)};
  int vta_steps = 0;
  for (int trial = 0; trial < 16; ++trial) {
    const std::int64_t n = rng(1, 2), c = rng(1, 40), h = rng(1, 14), w = rng(1, 14);
    const bool max = trial % 2 == 0;
    // averages on VTA divide by a power of two: windows of 1, 2 or 4 elements (and 8, 16)
    const std::int64_t kh = max ? rng(1, 3) : std::int64_t{1} << rng(0, 2);
    const std::int64_t kw = max ? rng(1, 3) : std::int64_t{1} << rng(0, 1);
    if (kh > h || kw > w) continue;
    const std::int64_t pt = rng(0, kh - 1), pl = rng(0, kw - 1);
    const std::int64_t pb = rng(0, kh - 1), pr = rng(0, kw - 1);
    const dlavm::host::Pool2dParams p{
        .pool_size = {kh, kw}, .strides = {rng(1, 2), rng(1, 2)}, .padding = {pt, pl, pb, pr}};
    INFO("trial ", trial, ": ", max ? "max" : "avg", " ", n, "x", c, "x", h, "x", w, ", window ",
         kh, "x", kw, ", stride ", p.strides[0], "x", p.strides[1], ", padding ", pt, " ", pl, " ",
         pb, " ", pr);
    auto x = graph::input("x", {n, c, h, w}, DType::int8());
    auto y = max ? graph::max_pool2d(x, p) : graph::avg_pool2d(x, p);
    if (rng.coin()) y = graph::relu(y);
    if (rng.coin()) y = graph::clip(y, {.lo = -40, .hi = static_cast<double>(rng(0, 90))});
    vta_steps += check_on_vta(graph::function({x}, {y}), {}, static_cast<std::uint64_t>(trial));
  }
  CHECK(vta_steps >= 12);
}

TEST_CASE(
    "build: random graphs of many ops, shared values and several results equal the "
    "reference") {
  // Values are int8 NCHW maps of one spatial size and a few channel counts; each step adds a
  // call on randomly chosen earlier values, so values get several users, chains break at
  // them, groups interleave with host calls, and some results sit inside would-be groups.
  Rng rng{std::mt19937_64(31)};
  int vta_steps = 0;
  for (int trial = 0; trial < 10; ++trial) {
    const std::int64_t hw = rng(3, 7);
    auto x = graph::input("x", {1, 16, hw, hw}, DType::int8());
    std::vector<std::pair<graph::Expr, std::int64_t>> values{{x, 16}};  // int8 maps, channels
    std::vector<graph::Expr> results;
    const auto pick = [&] {
      return values[static_cast<std::size_t>(rng(0, static_cast<std::int64_t>(values.size()) - 1))];
    };
    for (int step = 0; step < 8; ++step) {
      const auto [v, c] = pick();
      const std::int64_t out = 8 * rng(1, 3);
      const auto seed = static_cast<std::uint64_t>(trial * 100 + step);
      switch (rng(0, 4)) {
        case 0:
        case 1: {  // a convolution layer, maybe with a residual sum of a same-shaped value
          auto w = graph::constant(fmt::format("w{}", step),
                                   te::NDArray::random(DType::int8(), {out, c, 3, 3}, seed, -6, 6));
          auto acc = graph::conv2d(v, w, {.padding = {1, 1, 1, 1}});
          for (const auto& [r, rc] : values)
            if (rc == out && rng.coin()) {
              acc = graph::add(acc, graph::cast(r, DType::int32()));
              break;
            }
          auto y = graph::requantize(acc, {.shift = 6, .rounding = dlavm::host::Rounding::Nearest});
          values.emplace_back(rng.coin() ? graph::relu(y) : y, out);
          break;
        }
        case 2:
          values.emplace_back(graph::max_pool2d(v, {.pool_size = {3, 3}, .padding = {1, 1, 1, 1}}),
                              c);
          break;
        case 3:
          values.emplace_back(graph::clip(v, {.lo = -20, .hi = 90}), c);
          break;
        default:  // an int32 result the host computes (dense over the flattened map)
          results.push_back(graph::dense(
              graph::flatten(v),
              graph::constant(fmt::format("d{}", step),
                              te::NDArray::random(DType::int8(), {5, c * hw * hw}, seed))));
          break;
      }
      if (rng(0, 3) == 0) results.push_back(values.back().first);
    }
    results.push_back(values.back().first);
    INFO("trial ", trial);
    vta_steps += check_on_vta(graph::function({x}, results), {}, static_cast<std::uint64_t>(trial));
  }
  CHECK(vta_steps >= 20);
}

TEST_CASE("build: a ResNet-18 at 32x32 equals the host reference layer by layer") {
  const models::ResNet18 net(32);
  const graph::Target target;
  const auto fn = net.function();
  auto mod = graph::build(fn, target, {.name = "resnet18"});
  const auto data = te::NDArray::random(DType::int8(), {1, 3, 32, 32}, 1);
  const graph::NamedArray inputs[] = {{"data", data}};
  CountingDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  const auto check = models::run_and_check(exec, graph::infer_type(fn, target), inputs);
  // every convolution, each fused with its epilogue, the max pooling, the global average
  // pooling (over the last 1x1 feature map: a count of 1, a power of two), and the classifier
  // (its int32 logits leave VTA as byte planes: Target::int32_results, the default)
  CHECK(check.layers == 23);
  CHECK(dev.runs == 23);
  CHECK(check.mismatches == 0);
  CHECK(check.outputs_equal);
  CHECK(check.zero_share < 0.7);  // the activations are alive, not all rectified away
  CHECK(check.saturated_share < 0.1);
  // each convolution reads its own bias (with its rounding constant folded in): no two steps
  // share a constant the graph does not share
  std::set<std::size_t> biases;
  int convs = 0;
  for (const auto& step : mod.steps())
    if (step.kind == graph::ModuleStep::Kind::Vta && step.workload.op == "conv2d") {
      ++convs;
      biases.insert(step.inputs.at(2));
      CHECK(mod.values()[step.inputs[2]].name.find(".bias+") != std::string::npos);
    }
  CHECK(convs == 20);
  CHECK(biases.size() == 20);
  const auto& run = exec.last_run();
  std::uint64_t cycles = 0;
  for (const auto& s : run.steps) cycles += s.cycles;
  CHECK(run.vta_cycles == cycles);
  const auto summary = exec.summary();
  CHECK(summary.find("%3 conv2d+bias_add+requantize+relu") != std::string::npos);
  CHECK(summary.find("VTA: ") != std::string::npos);
}

TEST_CASE("module: its text names values, layouts, steps and tilings") {
  auto x = graph::input("x", {1, 20, 4, 4}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 20, 1, 1}, 1));
  auto y = graph::max_pool2d(graph::requantize(graph::conv2d(x, w), {.shift = 4}),
                             {.pool_size = {2, 2}});
  // an average over 9 elements divides by 9: the host runs it
  y = graph::avg_pool2d(y, {.pool_size = {3, 3}});
  const auto mod = graph::build(graph::function({x}, {y}), graph::Target{}, {.name = "tiny"});
  CHECK(fmt::format("{}", mod) ==
        "module tiny {\n"
        "  %x = param (1, 20, 4, 4) int8\n"
        "  %w:conv_weight[16x16] = constant (1, 2, 1, 1, 16, 16) int8\n"
        "  %x:activation[1x16] = host.pack(%x) /* (1, 2, 4, 4, 1, 16) int8 */\n"
        "  %1:activation[1x16] = vta.conv2d+requantize(%x:activation[1x16], "
        "%w:conv_weight[16x16]) /* (1, 1, 4, 4, 1, 16) int8; >>4, max -128, min 127; tiling oc "
        "1, h 4, w 4, ic 2, 1 thread */\n"
        "  %2:activation[1x16] = vta.max_pool2d(%1:activation[1x16]) /* (1, 1, 3, 3, 1, 16) "
        "int8; no epilogue; tiling c 1, h 3, 1 thread */\n"
        "  %2 = host.unpack(%2:activation[1x16]) /* (1, 16, 3, 3) int8 */\n"
        "  %3 = host.avg_pool2d(%2, count_include_pad=1, padding=[0, 0, 0, 0], pool_size=[3, 3], "
        "strides=[1, 1]) /* (1, 16, 1, 1) int8 */\n"
        "  return %3\n"
        "}\n");
}

TEST_CASE("build: the residual sum fuses whichever side of add it is on") {
  auto x = graph::input("x", {1, 16, 6, 6}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 3, 3}, 4, -8, 8));
  auto conv = graph::conv2d(x, w, {.padding = {1, 1, 1, 1}});
  auto shortcut = graph::cast(x, DType::int32());
  for (const bool left : {true, false}) {
    CAPTURE(left);
    auto sum = left ? graph::add(shortcut, conv) : graph::add(conv, shortcut);
    const auto fn = graph::function({x}, {graph::relu(graph::requantize(sum, {.shift = 5}))});
    CHECK(check_on_vta(fn, {}, 3) == 1);
    const auto part =
        graph::partition(graph::infer_type(fn, graph::default_ops()), graph::Target{});
    REQUIRE(part.groups.size() == 1);
    CHECK(part.groups[0].anchor().name() == "conv2d");
  }
}

TEST_CASE("build: a 3-channel 7x7 convolution runs with its kernel width unfolded") {
  auto x = graph::input("x", {1, 3, 20, 20}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {32, 3, 7, 7}, 4, -8, 8));
  auto y = graph::relu(graph::requantize(
      graph::conv2d(x, w, {.strides = {2, 2}, .padding = {3, 3, 3, 3}}), {.shift = 7}));
  const auto fn = graph::function({x}, {y});
  CHECK(check_on_vta(fn, {}, 5) == 1);
  const auto mod = graph::build(fn, graph::Target{});
  const auto& conv = mod.steps()[1];
  CHECK(conv.tiling.ends_with(", width unfolded"));
  CHECK(mod.values()[conv.inputs[0]].name == "%x:unfolded_activation[1x16, kw 7 stride 2 pad 3 3]");
  // 21 channels in 2 tiles, 7 kernel rows: 14 GEMM micro-ops per output tile, not 49
  vta::SimDevice dev;
  const auto a = te::NDArray::random(DType::int8(), {1, 3, 20, 20}, 6);
  graph::Executor m(graph::build(fn, graph::Target{}), dev);
  m.run({{"x", a}});
  CHECK(m.last_run().steps[1].gemm_macs == std::uint64_t{2 * 2 * 10 * 10 * 7} * 256);
}

TEST_CASE("build: a call the host refuses runs on VTA when a strategy takes it") {
  // a convolution op that only VTA runs: the host's support rule refuses every call
  graph::Target target;
  target.int32_results = false;  // (until the end: the int32 result alone)
  auto record = *target.ops.find("conv2d");
  record.name = "vta_conv";
  record.host_support = [](const graph::TypeCall&) {
    return std::optional<std::string>("no host kernel for vta_conv");
  };
  target.ops.add(record);
  auto strategy = *target.strategies.find("conv2d");
  strategy.op = "vta_conv";
  target.strategies.add(strategy);
  auto x = graph::input("x", {1, 16, 4, 4}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 1, 1}, 4, -8, 8));
  auto conv = graph::call("vta_conv", {x, w});
  const auto fn = graph::function({x}, {graph::requantize(conv, {.shift = 4})});
  const auto typed = graph::infer_type(fn, target);
  CHECK(fmt::format("{}", typed).find("%0 = vta.vta_conv(%x, %w") != std::string::npos);
  auto mod = graph::build(fn, target);
  vta::SimDevice dev;
  const auto a = te::NDArray::random(DType::int8(), {1, 16, 4, 4}, 5);
  const std::vector<graph::NamedArray> inputs{{"x", a}};
  CHECK(graph::Executor(mod, dev).run(inputs)[0] ==
        graph::evaluate(typed, inputs, {}, target.ops)[0]);
  // alone, its int32 result cannot leave VTA either, unless the target lets it out as planes
  const auto alone = graph::function({x}, {conv});
  CHECK_THROWS_WITH_AS(graph::infer_type(alone, target),
                       "%0 (vta_conv): no device supports this call; host: no host kernel for "
                       "vta_conv; vta: its int32 result would leave VTA, which stores only int8: "
                       "requantize or cast it in a fused epilogue, or build with "
                       "Target::int32_results",
                       dlavm::TypeError);
  target.int32_results = true;
  auto wide = graph::build(alone, target);
  const auto sums = graph::Executor(wide, dev).run(inputs)[0];
  CHECK(sums.dtype() == DType::int32());
  CHECK(sums == graph::evaluate(graph::infer_type(alone, target), inputs, {}, target.ops)[0]);
}

TEST_CASE("build: an add that broadcasts the accumulator is not fused") {
  auto x = graph::input("x", {1, 16, 4, 8}, DType::int8());
  auto s = graph::input("s", {2, 16, 4, 8}, DType::int32());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 1, 1}, 4, -8, 8));
  auto y = graph::requantize(graph::add(graph::conv2d(x, w), s), {.shift = 4});
  // the conv alone on VTA (its int32 sums leave as byte planes), the add and the requantize on
  // the host
  CHECK(check_on_vta(graph::function({x, s}, {y}), {}, 9) == 1);
}

TEST_CASE("module: inputs are passed by their graph names, whatever characters they hold") {
  auto x = graph::input("input:0", {1, 16}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16}, 1));
  auto mod = graph::build(
      graph::function({x}, {graph::requantize(graph::dense(x, w), {.shift = 3})}), graph::Target{});
  vta::SimDevice dev;
  graph::Executor exec(mod, dev);
  const auto a = te::NDArray::random(DType::int8(), {1, 16}, 2);
  CHECK(exec.run({{"input:0", a}})[0].shape() == std::vector<std::int64_t>{1, 16});
  CHECK_THROWS_WITH_AS(exec.run({{"%\"input:0\"", a}}),
                       "module 'main': '%\"input:0\"' is not an input (its inputs: %\"input:0\")",
                       dlavm::ValueError);
}

TEST_CASE("module: a device configured otherwise than the build's VTA is refused") {
  auto x = graph::input("x", {1, 32}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {32, 32}, 1));
  auto mod = graph::build(
      graph::function({x}, {graph::requantize(graph::dense(x, w), {.shift = 3})}), graph::Target{});
  vta::Config wide;
  wide.log_block_in = 5;
  wide.log_block_out = 5;
  vta::SimDevice dev(wide);
  CHECK_THROWS_WITH_AS(
      graph::Executor(mod, dev),
      "module 'main': built for a VTA of BATCH 1, BLOCK_IN 16, BLOCK_OUT 16 and its SRAM sizes; "
      "the "
      "device is configured otherwise (BATCH 1, BLOCK_IN 32, BLOCK_OUT 32, or other sizes): build "
      "with graph::Target{.env = vta::Env(device config)}",
      dlavm::ValueError);
}

TEST_CASE("build: a Chooser replaces the default knobs (what a tuner does)") {
  // one output tile per block, one thread: a slow tiling, but a valid one
  struct Smallest final : graph::Chooser {
    graph::Knobs choose(const graph::Workload& w, const graph::KnobSpace& space) const override {
      if (w.op != "conv2d") return graph::Chooser::choose(w, space);
      return space.knobs_of(std::vector<std::int64_t>{1, 1, 1, 1, 1});
    }
  };
  auto x = graph::input("x", {1, 16, 4, 4}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {32, 16, 3, 3}, 4, -8, 8));
  const auto fn = graph::function(
      {x}, {graph::requantize(graph::conv2d(x, w, {.padding = {1, 1, 1, 1}}), {.shift = 6})});
  const graph::Target target;
  auto tuned = graph::build(fn, target, {.chooser = std::make_shared<Smallest>()});
  auto plain = graph::build(fn, target);
  CHECK(tuned.steps()[1].tiling == "oc 1, h 1, w 1, ic 1, 1 thread");
  CHECK(plain.steps()[1].tiling != tuned.steps()[1].tiling);
  vta::SimDevice dev;
  const auto a = te::NDArray::random(DType::int8(), {1, 16, 4, 4}, 5);
  const auto reference = graph::evaluate(graph::infer_type(fn, target), {{"x", a}});
  graph::Executor tuned_exec(tuned, dev);
  CHECK(tuned_exec.run({{"x", a}})[0] == reference[0]);
  CHECK(graph::Executor(plain, dev).run({{"x", a}})[0] == reference[0]);
  CHECK(tuned_exec.last_run().steps[1].instructions != 0);
}

TEST_CASE("module: bad inputs and bindings are errors naming the input or dim") {
  auto batch = ne::var("batch", 1, 8);
  auto x = graph::input("x", {batch, 32}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 32}, 1));
  auto mod =
      graph::build(graph::function({x}, {graph::requantize(graph::dense(x, w), {.shift = 3})}),
                   graph::Target{}, {.name = "fc"});
  vta::SimDevice dev;
  graph::Executor exec(mod, dev);
  const auto good = te::NDArray::random(DType::int8(), {3, 32}, 2);
  CHECK_THROWS_WITH_AS(exec.last_run(), "module 'fc': not run yet; call run() first",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(exec.run({{"y", good}}, {{"batch", 3}}),
                       "module 'fc': 'y' is not an input (its inputs: %x)", dlavm::ValueError);
  CHECK_THROWS_WITH_AS(exec.run({}, {{"batch", 3}}), "module 'fc': no array for input %x",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(exec.run({{"x", good}}),
                       "module 'fc': symbolic dim 'batch' of input %x has no value; pass "
                       "{\"batch\", value} in the bindings",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(exec.run({{"x", good}}, {{"batch", 9}}),
                       "module 'fc': symbolic dim 'batch' = 9 is outside its range [1, 8]",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(exec.run({{"x", good}}, {{"batch", 4}}),
                       "module 'fc': input %x is int8[3, 32], expected int8[4, 32]",
                       dlavm::ShapeError);
  const auto unsigned_x = te::NDArray::random(DType::uint8(), {3, 32}, 2);
  CHECK_THROWS_WITH_AS(exec.run({{"x", unsigned_x}}, {{"batch", 3}}),
                       "module 'fc': input %x is uint8[3, 32], expected int8[3, 32]",
                       dlavm::TypeError);
  // a dim bound twice (the check and the run would read different ones), a name that is no dim
  CHECK_THROWS_WITH_AS(exec.run({{"x", good}}, {{"batch", 3}, {"batch", 4}}),
                       "module 'fc': symbolic dim 'batch' is bound twice (3 and 4)",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(exec.run({{"x", good}}, {{"batch", 3}, {"btach", 3}}),
                       "module 'fc': 'btach' is no symbolic dim of the module (its dims: batch)",
                       dlavm::ValueError);
  const auto out = exec.run({{"x", good}}, {{"batch", 3}});
  CHECK(out[0].shape() == std::vector<std::int64_t>{3, 16});
  CHECK_THROWS_WITH_AS(exec.value_of("%0"),
                       "module 'fc': the last run kept no values; run with {.keep_values = true}",
                       dlavm::ValueError);
  exec.run({{"x", good}}, {{"batch", 3}}, {.keep_values = true});
  CHECK(exec.value_of("%1") == out[0]);
  CHECK_THROWS_WITH_AS(exec.value_of("%7"), "module 'fc': no value holds node %7",
                       dlavm::ValueError);
  // the dense sum lives only inside the VTA kernel that requantizes it
  CHECK_THROWS_WITH_AS(exec.value_of("%0"),
                       doctest::Contains("module 'fc': node %0 was fused into VTA step 1 (%1 "
                                         "dense+requantize), which keeps only its result"),
                       dlavm::ValueError);
}

TEST_CASE("build: convolutions whose padding overflowed a merged load run on VTA") {
  // A window spanning whole rows merged them into one run, its row padding then counted in
  // tiles of the whole row: these failed to build with pads of 20 to 72.
  struct Case {
    std::int64_t c, o, h, w, k, s;
    std::array<std::int64_t, 4> pad;
  };
  const Case cases[] = {{24, 40, 27, 22, 5, 2, {2, 1, 2, 1}},
                        {4, 39, 7, 14, 5, 2, {4, 4, 3, 3}},
                        {4, 16, 4, 19, 2, 1, {0, 0, 1, 0}},
                        {34, 11, 10, 20, 5, 1, {4, 0, 1, 2}},
                        {9, 26, 16, 18, 5, 1, {1, 2, 3, 3}},
                        {25, 31, 2, 16, 7, 1, {1, 3, 5, 0}},
                        // a ResNet-18 stem at 33x33 (width unfolded, rows padded only)
                        {3, 64, 33, 33, 7, 2, {3, 3, 3, 3}},
                        // the unfolded stem with asymmetric column padding
                        {3, 32, 20, 17, 7, 2, {3, 1, 2, 5}}};
  int seed = 0;
  for (const auto& k : cases) {
    INFO(k.c, " -> ", k.o, " over ", k.h, "x", k.w, ", kernel ", k.k, ", stride ", k.s,
         ", padding ", fmt::join(k.pad, " "));
    auto x = graph::input("x", {1, k.c, k.h, k.w}, DType::int8());
    auto w = graph::constant("w", te::NDArray::random(DType::int8(), {k.o, k.c, k.k, k.k},
                                                      static_cast<std::uint64_t>(++seed), -8, 8));
    auto b = graph::constant("b", te::NDArray::random(DType::int32(), {k.o}, 3, -500, 500));
    auto y = graph::requantize(
        graph::bias_add(graph::conv2d(x, w, {.strides = {k.s, k.s}, .padding = k.pad}), b),
        {.shift = 6});
    CHECK(check_on_vta(graph::function({x}, {graph::clip(y, {.lo = -100, .hi = 100})}), {},
                       static_cast<std::uint64_t>(seed)) == 1);
  }
}

TEST_CASE("build: symbolic batch, height and width run on VTA, one build for every binding") {
  auto batch = ne::var("batch", 1, 8), h = ne::var("h", 8, 64), wd = ne::var("w", 5, 40);
  const auto weight = [](std::int64_t o, std::int64_t c) {
    return graph::constant("w", te::NDArray::random(DType::int8(), {o, c, 3, 3}, 2, -8, 8));
  };
  struct Case {
    std::vector<ne::Expr> shape;
    std::string var;
    std::vector<std::int64_t> values;
  };
  const Case cases[] = {{{batch, 32, 28, 28}, "batch", {1, 3, 8}},
                        {{1, 32, h, 28}, "h", {8, 9, 37, 64}},
                        {{2, 20, 9, wd}, "w", {5, 6, 23, 40}}};
  for (const auto& k : cases) {
    CAPTURE(k.var);
    auto x = graph::input("x", k.shape, DType::int8());
    const std::int64_t c = *k.shape[1].as_int();
    auto y = graph::requantize(
        graph::conv2d(x, weight(40, c), {.strides = {2, 1}, .padding = {1, 0, 2, 1}}),
        {.shift = 6});
    if (k.var != "w")  // a pooling's columns unroll into micro-ops: a symbolic width stays host
      y = graph::max_pool2d(y, {.pool_size = {3, 2}, .strides = {2, 1}, .padding = {1, 0, 1, 1}});
    const auto fn = graph::function({x}, {y});
    const auto printed = fmt::format("{}", graph::infer_type(fn, graph::Target{}));
    CHECK(printed.find("vta.conv2d") != std::string::npos);
    CHECK(printed.find("host.") == std::string::npos);
    auto mod = graph::build(fn, graph::Target{});
    for (const auto v : k.values) {
      CAPTURE(v);
      const ne::Binding b[] = {{k.var, v}};
      CHECK(random_graphs::check_module(mod, fn, b, static_cast<std::uint64_t>(v)) ==
            (k.var == "w" ? 1 : 2));
    }
  }
}

TEST_CASE("build: an add whose other operand broadcasts (dims of 1) is not fused") {
  auto x = graph::input("x", {1, 16, 4, 8}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 1, 1}, 4, -8, 8));
  auto conv = graph::conv2d(x, w);
  SUBCASE("an int32 operand") {
    auto s = graph::input("s", {1, 16, 1, 8}, DType::int32());
    const auto fn = graph::function({x, s}, {graph::requantize(graph::add(conv, s), {.shift = 4})});
    CHECK(check_on_vta(fn, {}, 9) == 1);  // the conv alone
    graph::Target int8_only;
    int8_only.int32_results = false;
    const auto part = graph::partition(graph::infer_type(fn, graph::default_ops()), int8_only);
    CHECK(part.describe(part.groups[0]).starts_with("host: %0 conv2d (its int32 result"));
  }
  SUBCASE("an int8 operand cast to int32") {
    auto r = graph::input("r", {1, 1, 4, 8}, DType::int8());
    auto y = graph::requantize(graph::add(graph::cast(r, DType::int32()), conv), {.shift = 4});
    CHECK(check_on_vta(graph::function({x, r}, {y}), {}, 10) == 1);
  }
}

TEST_CASE("build: an error from lowering a kernel names the graph call and its shapes") {
  // A chooser that returns a tiling the kernel cannot take: the error reaches the user with the
  // node's label and shapes, not only the kernel's buffer names.
  struct Bad final : graph::Chooser {
    graph::Knobs choose(const graph::Workload&, const graph::KnobSpace& space) const override {
      return space.knobs_of(std::vector<std::int64_t>{3, 1, 1, 1, 1});
    }
  };
  auto x = graph::input("x", {1, 16, 4, 4}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {32, 16, 3, 3}, 4, -8, 8));
  const auto fn = graph::function({x}, {graph::requantize(graph::conv2d(x, w), {.shift = 4})});
  CHECK_THROWS_WITH_AS(
      graph::build(fn, graph::Target{}, {.chooser = std::make_shared<const Bad>()}),
      doctest::Contains("%0 (conv2d) on VTA, of (1, 16, 4, 4) and (32, 16, 3, 3) (kernel "
                        "'conv2d0'): conv2d 'conv2d0': tiling 3x1x1 (ic 1, 1 threads): a block "
                        "of 3 does not divide the 2 output channel tiles"),
      dlavm::ScheduleError);
}

TEST_CASE("epilogue: merged add immediates compute what the separate adds do, on VTA") {
  // x + 100 - 300 merges into one ADD of -200; 20000 + 20000 does not fit the 16-bit immediate
  // and stays two ADDs; each checked on the simulator against the steps applied one by one.
  const vta::Env env;
  const std::vector<std::vector<std::int64_t>> chains{{100, -300}, {20000, 20000}, {-7, -9, 4}};
  for (const auto& adds : chains) {
    CAPTURE(adds.size());
    graph::Epilogue e;
    for (auto a : adds) e.imm(graph::EpilogueStep::Kind::Add, a, dlavm::vta::Config{});
    e.imm(graph::EpilogueStep::Kind::Shr, 4, dlavm::vta::Config{});
    const std::size_t merged = adds[0] == 20000 ? 2 : 1;
    CHECK(e.steps.size() == merged + 1);
    const graph::DenseShape shape{2, 32, 16};
    const graph::DenseKernel kernel(env, shape, e, "fc");
    auto s = kernel.schedule(graph::default_dense_tiling(env, shape, e));
    const auto prog = vta::build(s, kernel.args(), env, "fc");
    auto xa = te::NDArray::random(DType::int8(), {2, 2, 1, 16}, 1);
    auto wa = te::NDArray::random(DType::int8(), {1, 2, 16, 16}, 2);
    te::NDArray ya(DType::int8(), {2, 1, 1, 16});
    vta::SimDevice dev(env.config);
    prog.run(dev, {&xa, &wa, &ya});
    for (std::int64_t m = 0; m < 2; ++m)
      for (std::int64_t n = 0; n < 16; ++n) {
        std::int64_t acc = 0;
        for (std::int64_t k = 0; k < 32; ++k)
          acc += xa.at({m, k / 16, 0, k % 16}) * wa.at({0, k / 16, n, k % 16});
        for (auto a : adds) acc += a;
        CHECK(ya.at({m, 0, 0, n}) == static_cast<std::int8_t>(acc >> 4));
      }
  }
}

TEST_CASE("module: values keep the names of named calls; value_of takes the name") {
  auto x = graph::input("x", {2, 32}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 32}, 3, -8, 8));
  auto fc = graph::named(graph::requantize(graph::dense(x, w), {.shift = 5}), "fc1");
  auto y = graph::named(graph::relu(graph::cast(fc, DType::int32())), "onnx::Relu_7");
  auto mod = graph::build(graph::function({x}, {y}), graph::Target{});
  const auto text = fmt::format("{}", mod);
  CHECK(text.find("%fc1:matrix[1x16] = vta.dense+requantize(") != std::string::npos);
  CHECK(text.find("%\"onnx::Relu_7\" = host.relu(") != std::string::npos);
  vta::SimDevice dev;
  graph::Executor exec(mod, dev);
  const auto a = te::NDArray::random(DType::int8(), {2, 32}, 4);
  const auto out = exec.run({{"x", a}}, {}, {.keep_values = true});
  CHECK(exec.value_of("onnx::Relu_7") == out[0]);
  CHECK(exec.value_of("%\"onnx::Relu_7\"") == out[0]);
  const auto fc_value = exec.value_of("fc1");
  CHECK(fc_value.shape() == std::vector<std::int64_t>{2, 16});
  CHECK(fc_value == exec.value_of("%fc1"));
}

TEST_CASE("module: values whose packed bytes are their own cross as they are, kept or not") {
  // one-row tiles whose columns fill whole tiles (graph::keeps_row_major): dense layers over a
  // single row, a host op between them, so that each layer's input is packed and its result
  // unpacked; with keep_values every packed value is its input packed (its device memory may
  // be another's by the run's end), and the results are the same either way
  auto x = graph::input("x", {1, 48}, DType::int8());
  graph::Expr y = x;
  for (std::uint64_t layer = 0; layer < 4; ++layer) {
    auto w = graph::constant(fmt::format("w{}", layer),
                             te::NDArray::random(DType::int8(), {48, 48}, layer + 1, -8, 8));
    // (a float on the host between the layers)
    y = graph::cast(graph::requantize(graph::dense(y, w), {.shift = 6}), DType::float32());
    y = graph::cast(graph::relu(y), DType::int8());
  }
  const auto fn = graph::function({x}, {y});
  auto mod = graph::build(fn, graph::Target{});
  vta::SimDevice dev;
  graph::Executor exec(mod, dev);
  const auto a = te::NDArray::random(DType::int8(), {1, 48}, 9);
  const graph::NamedArray inputs[] = {{"x", a}};
  const auto fast = exec.run(inputs).at(0);
  CHECK(exec.run(inputs, {}, {.keep_values = true}).at(0) == fast);
  const graph::ModuleRun& kept = exec.last_run();
  CHECK(fast == graph::evaluate(graph::infer_type(fn, graph::Target{}), inputs).at(0));
  std::size_t packs = 0;
  for (const auto& s : mod.steps()) {
    if (s.kind != graph::ModuleStep::Kind::Pack) continue;
    const auto& out = mod.values()[s.output];
    REQUIRE(kept.values[s.output].has_value());
    REQUIRE(kept.values[s.inputs[0]].has_value());
    CHECK(graph::keeps_row_major(out.layout, kept.values[s.inputs[0]]->shape()));
    CHECK(*kept.values[s.output] == graph::pack(*kept.values[s.inputs[0]], out.layout));
    ++packs;
  }
  CHECK(packs == 4);
}

TEST_CASE("module: storage slots; weights copied to a device once; VTA values stay there") {
  // conv -> conv -> max pool (all VTA), then a host dense: only the input goes in per run and
  // only the pooled map comes out for the dense
  auto batch = ne::var("batch", 1, 3);
  auto x = graph::input("x", {batch, 16, 8, 8}, DType::int8());
  auto w1 = graph::constant("w1", te::NDArray::random(DType::int8(), {32, 16, 3, 3}, 1, -8, 8));
  auto w2 = graph::constant("w2", te::NDArray::random(DType::int8(), {32, 32, 3, 3}, 2, -8, 8));
  auto y = graph::requantize(graph::conv2d(x, w1, {.padding = {1, 1, 1, 1}}), {.shift = 6});
  y = graph::requantize(graph::conv2d(y, w2, {.padding = {1, 1, 1, 1}}), {.shift = 7});
  y = graph::max_pool2d(y, {.pool_size = {2, 2}, .strides = {2, 2}});
  auto fc = graph::constant("fc", te::NDArray::random(DType::int8(), {10, 32 * 16}, 3, -8, 8));
  auto logits = graph::dense(graph::flatten(y), fc);
  const auto fn = graph::function({x}, {logits});
  graph::Target target;
  target.int32_results = false;  // the dense's int32 sums: on the host
  auto mod = graph::build(fn, target);
  // slots: the constants in the weight region, the values of a run in the runtime region at
  // aligned offsets sized for batch = 3, the packed input among them
  const auto& plan = mod.plan();
  std::int64_t weight = 0;
  for (const auto& v : mod.values()) {
    CHECK(v.storage.offset % plan.alignment == 0);
    if (v.storage.region == graph::RegionKind::Weight) {
      CHECK(v.kind == graph::ModuleValue::Kind::Constant);
      if (v.storage.vta) weight += v.storage.bytes;
    } else {
      CHECK(v.storage.region == graph::RegionKind::Runtime);
      CHECK(v.storage.offset + v.storage.bytes <= plan.region(graph::RegionKind::Runtime).bytes);
    }
    if (v.name == "%x:activation[1x16]") CHECK(v.storage.bytes == 3 * 16 * 8 * 8);
  }
  CHECK(weight == 32 * 16 * 9 + 32 * 32 * 9);
  CHECK(plan.region(graph::RegionKind::Weight).bytes >= weight);
  CountingDevice dev(vta::Config{});
  graph::Executor exec(mod, dev);
  CHECK(dev.bytes_in == static_cast<std::size_t>(weight));  // the weights VTA reads, once
  std::vector<te::NDArray> arrays;
  for (const std::int64_t b : {1, 3, 2, 3}) {
    CAPTURE(b);
    arrays.push_back(
        te::NDArray::random(DType::int8(), {b, 16, 8, 8}, static_cast<std::uint64_t>(b)));
    const std::vector<graph::NamedArray> in{{"x", arrays.back()}};
    const ne::Binding bind[] = {{"batch", b}};
    const auto before_in = dev.bytes_in, before_out = dev.bytes_out;
    const auto out = exec.run(in, bind);
    CHECK(out[0] == graph::evaluate(graph::infer_type(fn, target), in, bind)[0]);
    // per run: the packed input in, the pooled map out (the weights went in with the executor)
    const std::size_t input = static_cast<std::size_t>(b) * 16 * 8 * 8;
    CHECK(dev.bytes_in - before_in == input);
    CHECK(dev.bytes_out - before_out == static_cast<std::size_t>(b) * 32 * 4 * 4);
  }
  CHECK(dev.runs == 12);
  CHECK(dev.allocs == 5);  // the plan's five regions, once
}

TEST_CASE("executor: frees its regions when it dies, not when its device died first") {
  auto x = graph::input("x", {1, 16, 4, 4}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 1, 1}, 1, -8, 8));
  const auto fn = graph::function({x}, {graph::requantize(graph::conv2d(x, w), {.shift = 4})});
  const auto mod = graph::build(fn, graph::Target{});
  const auto a = te::NDArray::random(DType::int8(), {1, 16, 4, 4}, 2);
  const auto reference = graph::evaluate(graph::infer_type(fn, graph::Target{}), {{"x", a}})[0];
  CountingDevice first(vta::Config{}), second(vta::Config{});
  {
    // one module, two executors on two devices at once
    graph::Executor on_first(mod, first), on_second(mod, second);
    CHECK(first.allocs == 5);  // the plan's five regions, at construction
    CHECK(on_first.run({{"x", a}})[0] == reference);
    CHECK(on_second.run({{"x", a}})[0] == reference);
    graph::Executor moved = std::move(on_first);  // moving hands the regions over
    CHECK(moved.run({{"x", a}})[0] == reference);
    CHECK(first.frees == 0);
  }
  CHECK(first.frees == 5);
  CHECK(second.frees == 5);
  std::optional<graph::Executor> outlives;
  {
    vta::SimDevice gone;
    outlives.emplace(mod, gone);
    CHECK(outlives->run({{"x", a}})[0] == reference);
  }
  outlives.reset();  // the device died first: the executor does not free into it
}

TEST_CASE("module: a state outlives a run (a recurrent convolution on VTA)") {
  // h' = relu(requantize(conv(x) + h)), h kept by the module between runs
  const auto fn = random_graphs::recurrent_convolution();
  const auto &x = fn.params()[0], &out = fn.results()[0];
  const auto &h = fn.state()[0].input, &next = fn.state()[0].next;
  const graph::Target target;
  const auto placed = graph::infer_type(fn, target);
  const auto text = fmt::format("{}", placed);
  CHECK(
      text.starts_with("fn (%x: Tensor[(1, 16, 4, 4), int8]) state (%h: Tensor[(1, 16, 4, 4), "
                       "int8]) {\n"));
  CHECK(text.find("  next %h = %4\n  return %5\n") != std::string::npos);
  // the state's int8 residual joins the convolution's group on VTA
  CHECK(placed.placement()->describe(placed.placement()->groups[0]) ==
        "vta: %0 conv2d, %1 cast, %2 add, %3 requantize, %4 relu");
  auto mod = graph::build(placed, target);
  CHECK(fmt::format("{}", mod).find("  %h = state (1, 16, 4, 4) int8\n") != std::string::npos);
  vta::SimDevice dev;
  graph::Executor exec(mod, dev);
  te::NDArray state(DType::int8(), {1, 16, 4, 4});  // zeros, as the executor starts
  CHECK(exec.state("h") == state);
  for (int step = 0; step < 3; ++step) {
    CAPTURE(step);
    const auto a =
        te::NDArray::random(DType::int8(), {1, 16, 4, 4}, static_cast<std::uint64_t>(step));
    const std::vector<graph::NamedArray> ref_in{{"x", a}, {"h", state}};
    const auto trace = graph::evaluate_trace(placed, ref_in);
    const auto got = exec.run({{"x", a}});
    CHECK(got[0] == trace.results[0]);
    state = trace.value_of(placed.state()[0].next);
    CHECK(exec.state("h") == state);
  }
  // set and reset
  exec.set_state("h", te::NDArray::random(DType::int8(), {1, 16, 4, 4}, 9));
  CHECK(exec.state("h") == te::NDArray::random(DType::int8(), {1, 16, 4, 4}, 9));
  exec.reset_state();
  CHECK(exec.state("h") == te::NDArray(DType::int8(), {1, 16, 4, 4}));
  // mistakes
  CHECK_THROWS_WITH_AS(exec.set_state("h", te::NDArray(DType::int8(), {1, 16, 4})),
                       "module 'main': state 'h' is int8[1, 16, 4, 4], the array is int8[1, 16, 4]",
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(exec.state("c"), "module 'main': 'c' is not a state (its states: h)",
                       dlavm::ValueError);
  const auto a = te::NDArray::random(DType::int8(), {1, 16, 4, 4}, 1);
  CHECK_THROWS_WITH_AS(exec.run({{"x", a}, {"h", a}}),
                       "module 'main': 'h' is a state of the module, not an input; set it with "
                       "set_state",
                       dlavm::ValueError);
  auto wrong = graph::cast(next, DType::int32());
  CHECK_THROWS_WITH_AS(graph::infer_type(graph::function({x}, {out}, {{h, wrong}}), target),
                       "infer_type: state %h is Tensor[(1, 16, 4, 4), int8] but its next value %6 "
                       "(cast) is Tensor[(1, 16, 4, 4), int32]",
                       dlavm::TypeError);
  auto token = ne::var("token", 1, 8);
  auto hs = graph::input("hs", {token * 2, 4}, DType::int8());
  CHECK_THROWS_WITH_AS(
      graph::function({x}, {out}, {{hs, hs}}),
      "graph::function: state 'hs' has the symbolic dim 0 `token*2`; a state's dim is a "
      "constant or one variable of range [0, max] (a length that grows from run to run, such as "
      "a KV cache's last_token)",
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(graph::function({x, h}, {out}, {{h, next}}),
                       "graph::function: state 'h' is also a param or another state",
                       dlavm::ValueError);
}
