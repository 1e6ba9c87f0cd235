// Converters of LSTM, GRU and RNN: one `recurrent` call for Y (the hidden state at every
// step), Y_h and Y_c sliced from it at each direction's last step (Y_c from a second call
// whose result is the cell state), with the default activations only.
#include <fmt/ranges.h>

#include "common.hpp"
#include <limits>

namespace dlavm::onnx::detail {

namespace {

constexpr auto kEnd = std::numeric_limits<std::int64_t>::max();

// y [S, D, B, H] at each direction's last step: [D, B, H].
graph::Expr last_steps(const graph::Expr& y, host::RecurrentDirection direction,
                       std::int64_t hidden) {
  const std::int64_t d = host::directions_of(direction);
  std::vector<graph::Expr> parts;
  for (std::int64_t k = 0; k < d; ++k) {
    const bool backwards = direction == host::RecurrentDirection::Reverse || k == 1;
    auto step = graph::strided_slice(
        y,
        {.begin = {backwards ? 0 : -1, k}, .end = {backwards ? 1 : kEnd, k + 1}, .axes = {0, 1}});
    parts.push_back(graph::reshape(step, {.newshape = {1, -1, hidden}}));
  }
  return d == 1 ? parts[0] : graph::concat(std::move(parts), {.axis = 0});
}

Outs recurrent_of(Importer& im, const Node& n, host::RecurrentCell cell) {
  host::RecurrentParams p{.cell = cell};
  const std::string direction = attr_string(im, n, "direction", "forward");
  if (direction == "forward")
    p.direction = host::RecurrentDirection::Forward;
  else if (direction == "reverse")
    p.direction = host::RecurrentDirection::Reverse;
  else if (direction == "bidirectional")
    p.direction = host::RecurrentDirection::Bidirectional;
  else
    raise<ValueError>("direction '{}' is not forward, reverse or bidirectional", direction);
  const std::int64_t d = host::directions_of(p.direction);
  // the default activations only: sigmoid for the gates, tanh for the rest
  std::vector<std::string> defaults =
      cell == host::RecurrentCell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : cell == host::RecurrentCell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                         : std::vector<std::string>{"Tanh"};
  if (const auto* a = find_attr(n, "activations")) {
    for (int k = 0; k < a->strings_size(); ++k)
      if (a->strings(k) != defaults[static_cast<std::size_t>(k) % defaults.size()])
        unsupported(fmt::format("activation '{}' (the defaults {} only)", a->strings(k), defaults));
  }
  if (find_attr(n, "clip") != nullptr) unsupported("clip");
  if (attr_int(im, n, "input_forget", 0) != 0) unsupported("input_forget = 1");
  p.linear_before_reset = attr_int(im, n, "linear_before_reset", 0) != 0;
  const bool batch_first = attr_int(im, n, "layout", 0) != 0;
  auto x = im.expr(n, 0);
  if (batch_first) x = graph::transpose(x, {.perm = {1, 0, 2}});
  const auto w = im.expr(n, 1), r = im.expr(n, 2);
  const std::int64_t g = host::gates_of(cell);
  p.hidden_size =
      attr_int(im, n, "hidden_size", static_dim(im.type_of(r).shape[2], "R's hidden size"));
  if (Importer::has_input(n, 4)) {
    const std::int64_t steps = static_dim(im.type_of(x).shape[0], "a sequence_lens input");
    for (auto len : ints_of(im.constant(n, 4, "sequence_lens")))
      if (len != steps) unsupported(fmt::format("a sequence length {} of {} steps", len, steps));
  }
  if (Importer::has_input(n, 7)) unsupported("peepholes (input P)");
  const auto b =
      Importer::has_input(n, 3)
          ? im.expr(n, 3)
          : im.make_constant(n, "bias", te::NDArray(DType::float32(), {d, 2 * g * p.hidden_size}));
  graph::Expr h0 = Importer::has_input(n, 5) ? im.expr(n, 5) : graph::Expr();
  graph::Expr c0 = cell == host::RecurrentCell::Lstm && Importer::has_input(n, 6) ? im.expr(n, 6)
                                                                                  : graph::Expr();
  if (c0.defined() && !h0.defined()) {
    const std::int64_t batch = static_dim(im.type_of(x).shape[1], "initial_c without initial_h");
    h0 = im.make_constant(n, "initial_h", te::NDArray(DType::float32(), {d, batch, p.hidden_size}));
  }
  if (batch_first) {
    if (h0.defined()) h0 = graph::transpose(h0, {.perm = {1, 0, 2}});
    if (c0.defined()) c0 = graph::transpose(c0, {.perm = {1, 0, 2}});
  }
  const auto y = graph::recurrent(x, w, r, b, p, h0, c0);
  Outs out;
  const auto wanted = [&](int k) { return n.output_size() > k && !n.output(k).empty(); };
  out.emplace_back(batch_first ? graph::transpose(y, {.perm = {2, 0, 1, 3}}) : y);
  if (wanted(1) || wanted(2)) {
    const auto h = last_steps(y, p.direction, p.hidden_size);
    out.emplace_back(batch_first ? graph::transpose(h, {.perm = {1, 0, 2}}) : h);
  }
  if (wanted(2)) {
    auto cp = p;
    cp.result = host::RecurrentResult::Cell;
    const auto c = last_steps(graph::recurrent(x, w, r, b, cp, h0, c0), p.direction, p.hidden_size);
    out.emplace_back(batch_first ? graph::transpose(c, {.perm = {1, 0, 2}}) : c);
  }
  return out;
}

}  // namespace

namespace convert {

Outs lstm(Importer& im, const Node& n) { return recurrent_of(im, n, host::RecurrentCell::Lstm); }
Outs gru(Importer& im, const Node& n) { return recurrent_of(im, n, host::RecurrentCell::Gru); }
Outs rnn(Importer& im, const Node& n) { return recurrent_of(im, n, host::RecurrentCell::Rnn); }

}  // namespace convert

}  // namespace dlavm::onnx::detail
