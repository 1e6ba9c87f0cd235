// A firmware-style program: it includes the headers deploy::emit generated for ResNet-18, the
// symbolic-batch MLP and the LLM decoder layer (namespaces resnet18, mlp and llm_layer), loads
// their weights, places their static streams (ResNet-18's from its insts file, the others' from
// their headers) and runs them through the VTA driver C API, with the simulator behind it
// (sim_driver.cpp); each run's output must equal graph::Executor::run's, which gen_models
// recorded. The LLM layer runs a decode loop: its KV cache stays in the model's memory from
// one run to the next, as in the host module. Plain C++17 without
// exceptions or RTTI, no heap: what a board's firmware would be. Built natively, and for
// 32-bit ARM (run under qemu-arm) by the test suite.
//   firmware MODEL_DIR [--log] [--llm-runs N]   (N: the LLM layer's first N recorded runs)
#include "llm_layer.hpp"
#include "mlp.hpp"
#include "resnet18.hpp"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// The files, read into static buffers (firmware has no file system to speak of; this
// stands in for flash).
std::uint8_t weights[16u << 20], insts[1u << 20], reference[4u << 20];

std::size_t read_file(const char* dir, const char* name, std::uint8_t* buf, std::size_t cap) {
  char path[512];
  std::snprintf(path, sizeof path, "%s/%s", dir, name);
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) {
    std::printf("FAIL: cannot open %s\n", path);
    return 0;
  }
  const std::size_t n = std::fread(buf, 1, cap, f);
  std::fclose(f);
  return n;
}

std::uint64_t u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

void print_line(const char* line, void*) { std::printf("    %s\n", line); }

// Whether an input of `bytes` is the size the header gives for the run's dims.
bool fits(const char* model, std::size_t bytes, std::size_t expected) {
  if (bytes == expected) return true;
  std::printf("FAIL: %s: an input of %zu bytes, where the header's count is %zu\n", model, bytes,
              expected);
  return false;
}

bool ok(dlavm::runtime::ModelStatus st, const char* what) {
  if (st == dlavm::runtime::ModelStatus::Ok) return true;
  std::printf("FAIL: %s: %s\n", what, dlavm::runtime::status_name(st));
  return false;
}

// Each reference record: the dim value, the input's bytes, the output's bytes. `run` copies
// the input in, runs, and returns the output's address. At most `most` records are run; a
// record longer than the file is an error, not a read past it.
template <class Run>
bool check_runs(const char* model, const std::uint8_t* ref, std::size_t size, Run run,
                long most = -1) {
  std::size_t at = 0;
  long runs = 0;
  while (at + 16 <= size && runs != most) {
    const std::uint64_t dim = u64(ref + at), in_bytes = u64(ref + at + 8);
    if (in_bytes > size - at - 16 || size - at - 16 - in_bytes < 8) {
      std::printf("FAIL: %s: a reference record of %llu input bytes past the file's end\n", model,
                  static_cast<unsigned long long>(in_bytes));
      return false;
    }
    const std::uint8_t* in = ref + at + 16;
    const std::uint64_t out_bytes = u64(in + in_bytes);
    if (out_bytes > size - at - 24 - in_bytes) {
      std::printf("FAIL: %s: a reference record of %llu output bytes past the file's end\n", model,
                  static_cast<unsigned long long>(out_bytes));
      return false;
    }
    const std::uint8_t* expected = in + in_bytes + 8;
    at += 24 + in_bytes + out_bytes;
    const void* out = nullptr;
    if (!run(static_cast<std::int64_t>(dim), in, in_bytes, out)) return false;
    const bool same = std::memcmp(out, expected, out_bytes) == 0;
    std::printf("  %s at %llu: %llu output bytes %s Executor::run's\n", model,
                static_cast<unsigned long long>(dim), static_cast<unsigned long long>(out_bytes),
                same ? "equal" : "DIFFER from");
    if (!same) return false;
    ++runs;
  }
  return runs > 0;
}

// The statics below are what the firmware's run()s work in: its own memory, not its stack.
using dlavm::runtime::ModelStatus;

// ResNet-18: static streams, placed from its insts file.
bool run_resnet18(const char* dir, bool log) {
  resnet18::Session net;
  static resnet18::Workspace workspace;
  std::size_t n = read_file(dir, "resnet18.weights.bin", weights, sizeof weights);
  const std::size_t ni = read_file(dir, "resnet18.insts.bin", insts, sizeof insts);
  if (!ok(resnet18::open(net), "resnet18 open") ||
      !ok(resnet18::load_params(net, weights, n), "resnet18 weights") ||
      !ok(resnet18::prepare(net, insts, ni), "resnet18 streams"))
    return false;
  if (log) net.set_log(print_line, nullptr);
  n = read_file(dir, "resnet18.reference.bin", reference, sizeof reference);
  return check_runs("resnet18", reference, n,
                    [&](std::int64_t, const std::uint8_t* in, std::size_t bytes, const void*& out) {
                      if (!fits("resnet18", bytes, resnet18::input_data_bytes())) return false;
                      std::memcpy(resnet18::input_data(net), in, bytes);
                      out = resnet18::output_0(net);
                      return ok(resnet18::run(net, workspace), "resnet18 run");
                    });
}

// The MLP over a symbolic batch (replayed streams); a batch outside its range is refused, with
// nothing run.
bool run_mlp(const char* dir, bool log) {
  mlp::Session mlp;
  static mlp::Workspace workspace;
  std::size_t n = read_file(dir, "mlp.weights.bin", weights, sizeof weights);
  if (!ok(mlp::open(mlp), "mlp open") || !ok(mlp::load_params(mlp, weights, n), "mlp weights") ||
      !ok(mlp::prepare(mlp), "mlp streams"))
    return false;
  if (log) mlp.set_log(print_line, nullptr);
  n = read_file(dir, "mlp.reference.bin", reference, sizeof reference);
  const bool same = check_runs(
      "mlp", reference, n,
      [&](std::int64_t batch, const std::uint8_t* in, std::size_t bytes, const void*& out) {
        // the header's byte count is 0 for a batch run() refuses: nothing is copied then
        if (!fits("mlp", bytes, mlp::input_x_bytes(batch))) return false;
        std::memcpy(mlp::input_x(mlp), in, bytes);
        out = mlp::output_0(mlp);
        return ok(mlp::run(mlp, workspace, batch), "mlp run");
      });
  const bool refused = mlp::run(mlp, workspace, 257) == ModelStatus::DimOutOfRange;
  std::printf("  mlp at 257: %s\n", refused ? "refused (dim out of range)" : "NOT refused");
  return same && refused;
}

// The LLM layer: a prefill, then decode steps, one token per run, the cache growing in the
// model's memory (its first `runs` recorded runs; all when negative). More tokens than a run
// takes, and (after every recorded run) a position past the cache's 2048, are refused, with
// nothing run and the cache kept.
bool run_llm_layer(const char* dir, bool log, long runs) {
  llm_layer::Session llm;
  static llm_layer::Workspace workspace;
  std::size_t n = read_file(dir, "llm_layer.weights.bin", weights, sizeof weights);
  if (!ok(llm_layer::open(llm), "llm_layer open") ||
      !ok(llm_layer::load_params(llm, weights, n), "llm_layer weights") ||
      !ok(llm_layer::prepare(llm), "llm_layer streams"))
    return false;
  if (log) llm.set_log(print_line, nullptr);
  n = read_file(dir, "llm_layer.reference.bin", reference, sizeof reference);
  const bool same = check_runs(
      "llm_layer", reference, n,
      [&](std::int64_t token, const std::uint8_t* in, std::size_t bytes, const void*& out) {
        if (!fits("llm_layer", bytes, llm_layer::input_x_bytes(token))) return false;
        std::memcpy(llm_layer::input_x(llm), in, bytes);
        out = llm_layer::output_0(llm);
        const std::int64_t held = llm_layer::state_k_cache_length(llm);
        const bool ran = ok(llm_layer::run(llm, workspace, token), "llm_layer run");
        std::printf("  llm_layer: %lld cached positions + %lld -> %lld\n",
                    static_cast<long long>(held), static_cast<long long>(token),
                    static_cast<long long>(llm_layer::state_k_cache_length(llm)));
        return ran;
      },
      runs);
  const std::int64_t held = llm_layer::state_k_cache_length(llm);
  bool full = llm_layer::run(llm, workspace, 17) == ModelStatus::DimOutOfRange &&
              llm_layer::state_k_cache_length(llm) == held;
  std::printf("  llm_layer at %lld + 17: %s\n", static_cast<long long>(held),
              full ? "refused (a run takes at most 16 tokens)" : "NOT refused");
  if (runs < 0) {
    full = full && held == 2048 &&
           llm_layer::run(llm, workspace, 1) == ModelStatus::DimOutOfRange &&
           llm_layer::state_k_cache_length(llm) == held;
    std::printf("  llm_layer at %lld + 1: %s\n", static_cast<long long>(held),
                full ? "refused (the cache holds 2048 positions)" : "NOT refused");
  }
  return same && full;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::printf("usage: firmware MODEL_DIR [--log] [--llm-runs N]\n");
    return 2;
  }
  const char* dir = argv[1];
  bool log = false;
  long llm_runs = -1;  // all
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--log") == 0) {
      log = true;
    } else if (std::strcmp(argv[i], "--llm-runs") == 0 && i + 1 < argc) {
      llm_runs = std::atol(argv[++i]);
    } else {
      std::printf("usage: firmware MODEL_DIR [--log] [--llm-runs N]\n");
      return 2;
    }
  }
  const bool resnet_ok = run_resnet18(dir, log);
  const bool mlp_ok = run_mlp(dir, log);
  const bool llm_ok = run_llm_layer(dir, log, llm_runs);
  if (!resnet_ok || !mlp_ok || !llm_ok) {
    std::printf("FAIL: the firmware's outputs differ from the host's\n");
    return 1;
  }
  std::printf(
      "PASS: ResNet-18, the MLP and the LLM layer's decode loop in firmware equal "
      "graph::Executor::run\n");
  return 0;
}
