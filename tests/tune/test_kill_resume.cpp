// `dlavm tune` as a process: a tuning run killed with SIGKILL in the middle and resumed from its
// log evaluates every candidate exactly once, and its records equal an uninterrupted run's; a
// log is not overwritten without --resume; tune-merge and tune-best read what tune wrote.
#include <dlavm/tune.hpp>

#include <doctest/doctest.h>

#include "../../examples/models.hpp"
#include "../vta/temp_dir.hpp"
#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <set>
#include <signal.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

#ifdef DLAVM_EXE
namespace tune_kill {

using namespace dlavm;

pid_t spawn(std::vector<std::string> args) {
  args.insert(args.begin(), DLAVM_EXE);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, DLAVM_EXE, nullptr, nullptr, argv.data(), environ) == 0);
  return pid;
}

// dlavm with its standard output written to `out`; its exit status.
int run_to_file(std::vector<std::string> args, const std::string& out) {
  args.insert(args.begin(), DLAVM_EXE);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, DLAVM_EXE, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(spawned == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The process's exit status, or -signal when a signal ended it.
int wait_for(pid_t pid) {
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status);
}

std::size_t lines(const std::string& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

std::map<std::string, std::optional<std::int64_t>> cycles_by_candidate(const tune::Log& log) {
  std::map<std::string, std::optional<std::int64_t>> out;
  for (const auto& r : log.records) out[r.workload + " | " + graph::to_string(r.knobs)] = r.cycles;
  return out;
}

TEST_CASE("dlavm tune: a run killed with SIGKILL and resumed loses and repeats nothing") {
  const dlavm_test::TempDir dir("dlavm_tune_kill");
  const std::vector<std::string> run = {"tune", "resnet18", "--image", "32", "--top", "6"};
  const auto with = [&](std::vector<std::string> extra) {
    auto a = run;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::string reference = dir.str() + "/reference.log", killed = dir.str() + "/killed.log";
  REQUIRE(wait_for(spawn(with({"--log", reference, "--threads", "2"}))) == 0);
  const std::size_t total = lines(reference);
  REQUIRE(total >= 40);
  // killed once a quarter of the records are written
  const pid_t pid = spawn(with({"--log", killed, "--threads", "2"}));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (lines(killed) < total / 4 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  kill(pid, SIGKILL);
  REQUIRE(wait_for(pid) == -SIGKILL);
  const std::size_t before = lines(killed);
  CHECK(before >= total / 4);
  CHECK(before < total);
  // without --resume the log is refused, not overwritten
  CHECK(wait_for(spawn(with({"--log", killed}))) == 2);
  CHECK(lines(killed) == before);
  // a record cut in the middle, as a kill during a write leaves it (the kill above may or may
  // not have): the resumed run cuts it before appending
  {
    std::ifstream in(killed);
    std::string first;
    std::getline(in, first);
    std::ofstream(killed, std::ios::app) << first.substr(0, first.size() / 2);
  }
  REQUIRE(wait_for(spawn(with({"--log", killed, "--threads", "2", "--resume"}))) == 0);
  const auto resumed = tune::read_log(killed);
  // every line reads; every candidate is there exactly once
  CHECK(resumed.warnings.empty());
  std::set<std::string> seen;
  for (const auto& r : resumed.records)
    CHECK(seen.insert(r.workload + " | " + graph::to_string(r.knobs)).second);
  CHECK(cycles_by_candidate(resumed) == cycles_by_candidate(tune::read_log(reference)));
  // tune-merge and tune-best read it
  const std::string merged = dir.str() + "/merged.log";
  REQUIRE(wait_for(spawn({"tune-merge", merged, killed, reference})) == 0);
  CHECK(lines(merged) == total);
  CHECK(wait_for(spawn({"tune-best", merged})) == 0);
  // tune-best of a log without a record that ran, an unknown model and a shard past the
  // count are bad input
  const std::string failed = dir.str() + "/failed.log";
  {
    auto r = resumed.records.front();
    r.cycles.reset();
    r.error = "planted";
    std::ofstream out(failed);
    tune::append(out, r);
  }
  CHECK(wait_for(spawn({"tune-best", failed})) == 2);
  CHECK(wait_for(spawn({"tune", "nosuchmodel", "--log", merged + ".x"})) == 2);
  CHECK(wait_for(spawn({"tune", "mlp", "--log", merged + ".y", "--shard", "3/2"})) == 2);
}

TEST_CASE("dlavm tune: space writes the spaces, tune --config searches the edited ones") {
  const dlavm_test::TempDir dir("dlavm_tune_space");
  const std::string spaces = dir.str() + "/spaces.json", narrowed = dir.str() + "/narrowed.json";
  REQUIRE(run_to_file({"tune-space", "mlp"}, spaces) == 0);
  auto config = tune::read_config(spaces);
  REQUIRE(!config.workloads.empty());
  // every workload's last knob (threads: 2, 1) narrowed to its last value
  std::map<std::string, std::pair<std::string, std::int64_t>> kept;
  for (auto& e : config.workloads) {
    auto& k = e.knobs.back();
    k.values = {k.values.back()};
    kept[e.key] = {k.name, k.values[0]};
  }
  std::ofstream(narrowed) << tune::to_json(config);
  const std::string log = dir.str() + "/narrowed.log";
  REQUIRE(wait_for(spawn({"tune", "mlp", "--log", log, "--config", narrowed, "--top", "1",
                          "--verify", "1"})) == 0);
  const auto records = tune::read_log(log).records;
  CHECK(!records.empty());
  // a config names a workload by its printed form, a record by its key
  std::map<std::string, std::string> name_of;
  for (const auto& t : tune::tasks(models::Mlp().function(), graph::Target{}))
    name_of[t.key] = t.name;
  // every candidate (the best estimate of each workload) also ran on the simulator, equal to
  // te::evaluate
  for (const auto& r : records) CHECK(r.error == "");
  for (const auto& r : records)
    CHECK(r.knobs.at(kept.at(name_of.at(r.workload)).first) ==
          kept.at(name_of.at(r.workload)).second);
  // a malformed config is an error, and no log is written
  std::ofstream(dir.str() + "/bad.json") << "{\n  \"ops\": {\"dense\": {\"x\": 1}}\n}\n";
  CHECK(run_to_file(
            {"tune", "mlp", "--log", dir.str() + "/bad.log", "--config", dir.str() + "/bad.json"},
            dir.str() + "/bad.out") == 2);
  CHECK(lines(dir.str() + "/bad.log") == 0);
}

}  // namespace tune_kill
#endif  // DLAVM_EXE
