// The consumer's firmware: the generated header, on dlavm's runtime headers alone.
#include "tiny.hpp"

dlavm::runtime::ModelStatus run_tiny(tiny::Session& s, const std::uint8_t* weights,
                                     std::size_t size, std::int64_t batch) {
  auto st = tiny::open(s);
  if (st == dlavm::runtime::ModelStatus::Ok) st = tiny::load_params(s, weights, size);
  if (st == dlavm::runtime::ModelStatus::Ok) st = tiny::prepare(s);
  static tiny::Workspace workspace;  // the caller's, where it likes
  if (st == dlavm::runtime::ModelStatus::Ok) st = tiny::run(s, workspace, batch);
  return st;
}
