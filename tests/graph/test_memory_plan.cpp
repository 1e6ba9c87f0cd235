// graph::plan_memory: the regions laid out from the map, liveness reuse in the runtime region
// within 1.1x of its lower bound on ResNet-18, a module that runs on its plan, and every bad
// plan option refused with the region named.
#include <doctest/doctest.h>

#include "../../examples/models.hpp"
#include "random_graphs.hpp"

namespace memory_plan_test {

using namespace dlavm;
using graph::RegionKind;

// A small network: two convolutions, a residual sum, a pool and a dense head over a symbolic
// batch, so that some values die early.
graph::Function small_network() {
  const auto n = ne::var("batch", 1, 4);
  auto x = graph::input("x", {n, 16, 8, 8}, DType::int8());
  auto w0 = graph::constant("w0", te::NDArray::random(DType::int8(), {16, 16, 3, 3}, 1, -8, 8));
  auto w1 = graph::constant("w1", te::NDArray::random(DType::int8(), {16, 16, 3, 3}, 2, -8, 8));
  auto y =
      graph::relu(graph::requantize(graph::conv2d(x, w0, {.padding = {1, 1, 1, 1}}), {.shift = 6}));
  auto z = graph::requantize(
      graph::add(graph::conv2d(y, w1, {.padding = {1, 1, 1, 1}}), graph::cast(x, DType::int32())),
      {.shift = 6});
  auto p = graph::max_pool2d(z, {.pool_size = {2, 2}, .strides = {2, 2}});
  auto fc = graph::constant("fc", te::NDArray::random(DType::int8(), {10, 16 * 16}, 3, -8, 8));
  return graph::function({x}, {graph::dense(graph::flatten(p), fc)});
}

TEST_CASE("memory plan: plain requests, placed by hand-derived offsets") {
  // a -> b -> c, then d read with c: a's bytes go to c once b has read a
  graph::PlanRequest req;
  req.steps = 3;
  req.buffers = {
      {"a", RegionKind::Runtime, 1000, -1, 0},  // a param, read by step 0
      {"b", RegionKind::Runtime, 300, 0, 1},   {"c", RegionKind::Runtime, 900, 1, 3},  // a result
      {"d", RegionKind::Runtime, 200, -1, 2},  {"w", RegionKind::Weight, 10, -1, 1},
      {"s", RegionKind::Cache, 24, -1, 3}};
  req.insts_bytes = 160;
  req.uop_bytes = 40;
  // the inputs' bytes reused too (reuse_inputs): largest first, each at the lowest offset free
  // for its lifetime: a at 0; c at 0 too (a is dead once c is written); b after a's and c's
  // 1024 aligned bytes; d, alive with all three, after b's 512
  const auto plan = graph::plan_memory(req, {.alignment = 256, .reuse_inputs = true});
  CHECK(plan.buffers[0].offset == 0);
  CHECK(plan.buffers[2].offset == 0);
  CHECK(plan.buffers[1].offset == 1024);
  CHECK(plan.buffers[3].offset == 1536);
  CHECK(plan.region(RegionKind::Runtime).bytes == 1792);
  CHECK(plan.live_peak == 1792);  // step 0: a, b and d; step 1: b, c and d
  CHECK(plan.region(RegionKind::Weight).bytes == 256);
  CHECK(plan.region(RegionKind::Insts).bytes == 256);
  CHECK(plan.region(RegionKind::Uop).bytes == 256);
  CHECK(plan.address(4) == 0);
  CHECK(plan.address(0) == 256);  // runtime follows weight
  const auto report = plan.report("hand");
  CHECK(report.starts_with("memory plan of hand (alignment 256 bytes)\n"));
  CHECK(report.find("     2   runtime         0        900    1..out  c\n") != std::string::npos);
  // by default the inputs a and d live to the end of the run: c no longer fits at a's 0, so
  // a 0, c 1024, b 2048 (alive with c at step 1), d 2560
  const auto kept = graph::plan_memory(req, {.alignment = 256});
  CHECK(kept.buffers[0].offset == 0);
  CHECK(kept.buffers[2].offset == 1024);
  CHECK(kept.buffers[1].offset == 2048);
  CHECK(kept.buffers[3].offset == 2560);
  CHECK(kept.buffers[0].last == 3);
  CHECK(kept.buffers[3].last == 3);
  CHECK(kept.buffers[4].last == 1);  // a constant (weight region) keeps its lifetime
  CHECK(kept.region(RegionKind::Runtime).bytes == 2816);
  CHECK(kept.live_peak == 2816);  // step 1: all four
  // a target's element size raises the alignment: b's 300 bytes take 1024
  req.min_alignment = 1024;
  CHECK(graph::plan_memory(req, {.alignment = 256, .reuse_inputs = true}).buffers[3].offset ==
        2048);
  // and explicit region bases must keep it
  graph::PlanOptions at;
  at.regions = {{"weight", std::uint64_t{0x100}},
                {"runtime", "weight"},
                {"cache", "runtime"},
                {"insts", "cache"},
                {"uop", "insts"}};
  CHECK_THROWS_WITH_AS(graph::plan_memory(req, at),
                       "memory plan: region 'weight' at 0x100 is not aligned to 1024 bytes",
                       dlavm::ConfigError);
  // requests that cannot be placed
  auto bad = req;
  bad.buffers[1].bytes = -4;
  CHECK_THROWS_WITH_AS(graph::plan_memory(bad),
                       "memory plan: buffer 'b' asks for -4 bytes from step 0 to step 1; a buffer "
                       "has no negative size and lives from -1 (before the first step) to at most "
                       "3 (after the last), its first step before its last",
                       dlavm::ValueError);
  bad = req;
  bad.buffers[2].last = 4;
  CHECK_THROWS_AS(graph::plan_memory(bad), dlavm::ValueError);
  bad = req;
  bad.buffers[1].first = 2;  // written after its last read
  CHECK_THROWS_AS(graph::plan_memory(bad), dlavm::ValueError);
  // the stream regions are not requested buffer by buffer
  req.buffers.push_back({"stream", RegionKind::Insts, 16, 0, 0});
  CHECK_THROWS_WITH_AS(graph::plan_memory(req),
                       "memory plan: buffer 'stream' asks for the insts region, which holds the "
                       "streams; size it with PlanRequest::insts_bytes",
                       dlavm::ConfigError);
}

TEST_CASE("memory plan: default regions follow each other, aligned, and every buffer fits") {
  const auto mod = graph::build(small_network(), graph::Target{});
  random_graphs::check_plan(mod);
  const auto& plan = mod.plan();
  CHECK(plan.region(RegionKind::Weight).base == 0);
  for (std::size_t r = 1; r < graph::kRegionCount; ++r) {
    const auto& prev = plan.regions[r - 1];
    CHECK(plan.regions[r].base == (prev.end() + 255) / 256 * 256);
  }
  // the streams' regions hold any step's stream at any batch
  vta::SimDevice dev;
  for (std::int64_t b = 1; b <= 4; ++b) {
    const auto arrays = random_graphs::random_inputs(small_network(), {{{"batch", b}}}, 5);
    graph::Executor m(graph::build(small_network(), graph::Target{}), dev);
    const ne::Binding bind[] = {{"batch", b}};
    const graph::NamedArray in[] = {{"x", arrays[0]}};
    CHECK(m.run(in, bind)[0] ==
          graph::evaluate(graph::infer_type(small_network(), graph::Target{}), in, bind)[0]);
    for (const auto& s : m.module().steps())
      if (s.kind == graph::ModuleStep::Kind::Vta) {
        std::vector<std::uint64_t> phys(s.inputs.size() + 1, 0);
        const auto stream = s.program->instantiate(bind, phys);
        CHECK(static_cast<std::int64_t>(stream.insns.size()) <= s.program->stream_bound().insns);
        CHECK(static_cast<std::int64_t>(stream.uops.size()) <= s.program->stream_bound().uops);
        CHECK(static_cast<std::int64_t>(stream.insn_bytes()) <=
              m.module().plan().region(RegionKind::Insts).bytes);
      }
  }
}

TEST_CASE("memory plan: ResNet-18's activations within 1.1x of the largest live set") {
  const models::ResNet18 net(224);
  const auto mod = graph::build(net.function(), graph::Target{});
  random_graphs::check_plan(mod);
  const auto& plan = mod.plan();
  std::int64_t sum = 0;
  for (const auto& b : plan.buffers)
    if (b.region == RegionKind::Runtime) sum += (b.bytes + 255) / 256 * 256;
  const auto runtime = plan.region(RegionKind::Runtime).bytes;
  MESSAGE("ResNet-18 runtime region: ", runtime, " bytes planned, live peak ", plan.live_peak, " (",
          static_cast<double>(runtime) / static_cast<double>(plan.live_peak), "x), without reuse ",
          sum);
  CHECK(runtime <= plan.live_peak * 11 / 10);
  CHECK(runtime * 2 < sum);  // reuse: most bytes serve several values
  // without reuse: every buffer its own bytes
  graph::PlanOptions no_reuse;
  no_reuse.reuse = false;
  const auto flat = graph::plan_memory(mod, no_reuse);
  CHECK(flat.region(RegionKind::Runtime).bytes == sum);
  const auto report = plan.report(mod.name());
  CHECK(report.find("region runtime") != std::string::npos);
  CHECK(report.find("%data") != std::string::npos);
}

TEST_CASE("memory plan: a module planned without reuse or at a base address runs the same") {
  const auto fn = small_network();
  const ne::Binding bind[] = {{"batch", 3}};
  const auto arrays = random_graphs::random_inputs(fn, bind, 9);
  const graph::NamedArray in[] = {{"x", arrays[0]}};
  const auto expected = graph::evaluate(graph::infer_type(fn, graph::Target{}), in, bind)[0];
  graph::PlanOptions opt;
  opt.reuse = false;
  opt.alignment = 4096;
  opt.regions = {{"weight", std::uint64_t{0x10000000}},
                 {"insts", std::uint64_t{0x1000}},
                 {"uop", "insts"},
                 {"runtime", "weight"},
                 {"cache", "runtime"}};
  auto mod = graph::build(fn, graph::Target{}, {.plan = opt});
  random_graphs::check_plan(mod);
  CHECK(mod.plan().region(RegionKind::Weight).base == 0x10000000);
  CHECK(mod.plan().region(RegionKind::Insts).base == 0x1000);
  CHECK(mod.plan().region(RegionKind::Runtime).base % 4096 == 0);
  vta::SimDevice dev;
  CHECK(graph::Executor(mod, dev).run(in, bind)[0] == expected);
}

TEST_CASE("memory plan: inputs keep their bytes to the end of a run unless reuse_inputs") {
  // a chain whose input dies at its first step: with reuse_inputs its bytes go to a later
  // value
  const auto n = ne::var("batch", 1, 4);
  auto x = graph::input("x", {n, 64}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {64, 64}, 4, -8, 8));
  auto h = graph::requantize(graph::dense(x, w), {.shift = 6});
  auto y = graph::requantize(graph::dense(h, w), {.shift = 6});
  const auto fn = graph::function({x}, {graph::requantize(graph::dense(y, w), {.shift = 6})});
  const auto overlaps_input = [](const graph::Module& mod) {
    const auto& bufs = mod.plan().buffers;
    std::size_t x_at = 0;
    for (std::size_t v = 0; v < bufs.size(); ++v)
      if (mod.values()[v].kind == graph::ModuleValue::Kind::Param) x_at = v;
    const auto& in = bufs[x_at];
    int shared = 0;
    for (std::size_t v = 0; v < bufs.size(); ++v)
      if (v != x_at && bufs[v].region == RegionKind::Runtime &&
          bufs[v].offset < in.offset + in.bytes && in.offset < bufs[v].offset + bufs[v].bytes)
        ++shared;
    return std::pair{shared, in.last};
  };
  const auto kept = graph::build(fn, graph::Target{});
  random_graphs::check_plan(kept);
  CHECK(overlaps_input(kept) == std::pair{0, kept.plan().steps});
  graph::PlanOptions opt;
  opt.reuse_inputs = true;
  const auto reused = graph::build(fn, graph::Target{}, {.plan = opt});
  random_graphs::check_plan(reused, false);
  const auto [shared, last] = overlaps_input(reused);
  CHECK(shared > 0);
  CHECK(last < reused.plan().steps);
  CHECK(reused.plan().region(RegionKind::Runtime).bytes <
        kept.plan().region(RegionKind::Runtime).bytes);
  // both run the same
  const ne::Binding bind[] = {{"batch", 3}};
  const auto arrays = random_graphs::random_inputs(fn, bind, 5);
  const graph::NamedArray in[] = {{"x", arrays[0]}};
  vta::SimDevice dev;
  auto a = kept;
  auto b = reused;
  CHECK(graph::Executor(a, dev).run(in, bind)[0] == graph::Executor(b, dev).run(in, bind)[0]);
}

TEST_CASE("memory plan: bad maps and options name the region") {
  const auto mod = graph::build(small_network(), graph::Target{});
  const auto fails = [&](graph::PlanOptions o, const std::string& what) {
    try {
      graph::plan_memory(mod, o);
      FAIL("no error for ", what);
    } catch (const dlavm::Error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
  };
  graph::PlanOptions o;
  o.alignment = 48;
  fails(o, "alignment 48 is not a power of two");
  o = {};
  o.regions.pop_back();
  fails(o, "does not place 'uop'");
  o = {};
  o.regions.push_back({"scratch", std::uint64_t{0}});
  fails(o, "names 'scratch', which is no region");
  o = {};
  o.regions[1] = {"weight", "uop"};
  fails(o, "region 'weight' is placed after itself");
  o = {};
  o.regions[2] = {"runtime", "heap"};
  fails(o, "follows 'heap'");
  o = {};
  o.regions[3] = {"cache", std::uint64_t{0}};  // on top of the weights
  fails(o, "regions 'weight' [0x0");
  o = {};
  o.regions[0] = {"global", std::uint64_t{0x100}};
  o.alignment = 4096;
  fails(o, "region 'global' at 0x100 is not aligned");
  o = {};
  o.address_limit = 4096;
  fails(o, "past the address space (0x1000)");
  o = {};
  o.regions.push_back({"uop", "insts"});
  fails(o, "places 'uop' twice");
  CHECK_THROWS_AS(graph::plan_memory(mod,
                                     [] {
                                       graph::PlanOptions p;
                                       p.address_limit = 1;
                                       return p;
                                     }()),
                  dlavm::CapacityError);
}

}  // namespace memory_plan_test
