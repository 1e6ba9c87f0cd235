// The TIR passes of the VTA pipeline that rewrite storage: reuse_inplace (an element-wise stage
// writes into its dead input's buffer) and inject_virtual_threads (vthread loops become
// interleaved threads with per-thread buffers), with the Rewriter both are built on. Every
// rewrite is run by the interpreter against the function before it (the interpreter runs a
// vthread loop as a serial loop) and, where small, against values computed here.
#include <dlavm/schedule.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/tir/rewrite.hpp>
#include <dlavm/tir/storage_rewrite.hpp>
#include <dlavm/tir/vthread.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
using dlavm::DType;
using te::Buffer;

namespace {

const DType i32 = DType::int32();
constexpr const char* kAcc = "local.acc_buffer";
constexpr const char* kInp = "local.inp_buffer";

Buffer buffer(std::string name, std::vector<ne::Expr> shape, DType t = DType::int32(),
              std::string scope = "global") {
  return te::make_buffer(std::move(name), t, std::move(shape), std::move(scope));
}

// for (name, 0, n) { body(var) }
template <class F>
tir::Stmt loop(const std::string& name, std::int64_t n, F body) {
  const auto v = ne::var(name, 0, n - 1);
  return tir::make_for(v, 0, n, tir::ForKind::Serial, body(ne::Expr(v)));
}

tir::Stmt allocate(const std::vector<Buffer>& buffers, tir::Stmt body) {
  for (auto it = buffers.rbegin(); it != buffers.rend(); ++it) body = tir::make_allocate(*it, body);
  return body;
}

te::Expr ld(const Buffer& b, ne::Expr i) { return te::load(b, {std::move(i)}); }
tir::Stmt st(const Buffer& b, ne::Expr i, te::Expr v) {
  return tir::make_store(b, {std::move(i)}, std::move(v));
}

// Names of the buffers allocated in s, outermost first.
std::vector<std::string> allocations(const tir::Stmt& s) {
  struct V : tir::StmtVisitor<V> {
    std::vector<std::string> names;
    void visit_allocate(const tir::AllocateNode& n, const tir::Stmt&) {
      names.push_back(n.buffer.name());
      visit(n.body);
    }
  } v;
  v.visit(s);
  return v.names;
}

// Every store of s as "name[indices]" and every intrinsic call as "@name(buffers; args)", in
// program order (loops are not unrolled).
std::vector<std::string> leaves(const tir::Stmt& s) {
  struct V : tir::StmtVisitor<V> {
    std::vector<std::string> out;
    void visit_store(const tir::StoreNode& n, const tir::Stmt&) {
      std::vector<std::string> idx;
      for (const auto& i : n.indices) idx.push_back(fmt::format("{}", i));
      out.push_back(fmt::format("{}[{}]", n.buffer.name(), fmt::join(idx, ", ")));
    }
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      out.push_back(te::to_string(n.value));
    }
  } v;
  v.visit(s);
  return v.out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

tir::PrimFunc func(std::vector<Buffer> params, tir::Stmt body) {
  return tir::PrimFunc{"f", std::move(params), std::move(body), {}};
}

// Runs f on arrays of its parameters filled from `seed` and returns them afterwards.
std::vector<te::NDArray> run(const tir::PrimFunc& f, std::uint64_t seed,
                             const tir::IntrinsicHandler& handler = {}) {
  std::vector<te::NDArray> arrays;
  for (std::size_t k = 0; k < f.params.size(); ++k) {
    std::vector<std::int64_t> shape;
    for (const auto& d : f.params[k].shape()) shape.push_back(*ne::simplify(d).as_int());
    arrays.push_back(te::NDArray::random(f.params[k].dtype(), shape, seed * 17 + k, -1000, 1000));
  }
  std::vector<te::NDArray*> ptrs;
  for (auto& a : arrays) ptrs.push_back(&a);
  tir::run(f, ptrs, {}, handler);
  return arrays;
}

// The pass must not change what f computes: every parameter array ends equal, on several
// random inputs. The last parameter must actually be written (so that equality means
// something). Returns the arrays of the rewritten function for the first seed.
std::vector<te::NDArray> check_same(const tir::PrimFunc& before, const tir::Stmt& after_body,
                                    const tir::IntrinsicHandler& handler = {}) {
  tir::PrimFunc after = before;
  after.body = after_body;
  std::vector<te::NDArray> first;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const auto initial = run(func(before.params, tir::make_seq({})), seed);
    const auto want = run(before, seed, handler);
    const auto got = run(after, seed, handler);
    REQUIRE(want.size() == got.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      CAPTURE(before.params[k].name());
      CHECK(want[k] == got[k]);
    }
    CHECK_FALSE(want.back() == initial.back());
    if (seed == 1) first = got;
  }
  return first;
}

std::int64_t at(const te::NDArray& a, std::size_t i) { return a.data()[i]; }

}  // namespace

// ---- Rewriter -------------------------------------------------------------------------------

TEST_CASE("rewrite: variables and buffers are replaced in bounds, guards, indices and operands") {
  const auto n = ne::var("n", 1, 16);
  const auto In = buffer("In", {16}), Out = buffer("Out", {16}), Out2 = buffer("Out2", {16});
  const auto T = buffer("T", {16}, i32, kAcc), U = buffer("U", {16}, i32, kAcc);
  const auto s = allocate(
      {T},
      tir::make_seq({
          loop("i", 16,
               [&](ne::Expr i) {
                 return tir::make_if(i < n, st(T, i, ld(In, i) + te::index_value(n)));
               }),
          tir::make_for(ne::var("j", 0, 15), 0, n, tir::ForKind::Serial, st(Out, 0, ld(T, n - 1))),
          tir::make_evaluate(te::call("test.probe", i32, {te::index_value(n * 2)}, {T, In})),
      }));
  // Nothing to replace: the statement itself comes back.
  CHECK(tir::rewrite(s, {}).same_as(s));
  CHECK(tir::rewrite(s, {}, {{U.get(), T}}).same_as(s));

  const auto r = tir::rewrite(s, {{n, 5}}, {{T.get(), U}, {Out.get(), Out2}});
  CHECK(tir::to_string(r) == R"(  allocate(U, int32, [16]), storage_scope = local.acc_buffer
  for (i, 0, 16) {
    if (i < 5) {
      U[i] = (In[i] + 5)
    }
  }
  for (j, 0, 5) {
    Out2[0] = U[4]
  }
  @test.probe(U, In; 10)
)");
  CHECK_FALSE(tir::uses_buffer(r, T.get()));
  CHECK_FALSE(tir::uses_buffer(r, Out.get()));
  CHECK(tir::uses_buffer(r, U.get()));
  // The original is untouched.
  CHECK(tir::uses_buffer(s, T.get()));
  CHECK_FALSE(tir::uses_buffer(s, U.get()));
}

TEST_CASE("rewrite: annotation values are substituted too") {
  const auto tx = ne::var("tx", 0, 1);
  const auto Out = buffer("Out", {4});
  const auto s = tir::make_attr("pragma_probe", "Out", ne::Expr(tx) * 3, st(Out, tx, 1));
  CHECK(tir::to_string(tir::rewrite(s, {{tx, 1}})) == R"(  // attr [Out] pragma_probe = 3
  Out[1] = 1
)");
}

TEST_CASE("rewrite: fresh allocations get new buffers named with the suffix") {
  const auto In = buffer("In", {8}), Out = buffer("Out", {8});
  const auto k = ne::var("k", 0, 3);
  const auto T = buffer("T", {k + 2}, i32, kAcc);
  const auto s = allocate({T}, tir::make_seq({
                                   st(T, 0, ld(In, k)),
                                   st(T, k + 1, ld(In, k + 4)),
                                   st(Out, k, ld(T, 0) - ld(T, k + 1)),
                               }));
  const auto r = tir::rewrite(s, {{k, 3}}, {}, /*fresh_allocations=*/true, ".v7");
  CHECK(tir::to_string(r) == R"(  allocate(T.v7, int32, [5]), storage_scope = local.acc_buffer
  T.v7[0] = In[3]
  T.v7[4] = In[7]
  Out[3] = (T.v7[0] - T.v7[4])
)");
  CHECK_FALSE(tir::uses_buffer(r, T.get()));
  const auto* a = r.as<tir::AllocateNode>();
  REQUIRE(a != nullptr);
  CHECK(tir::uses_buffer(r, a->buffer.get()));
  // Without fresh allocations the allocation keeps its identity.
  const auto kept = tir::rewrite(s, {{k, 3}});
  REQUIRE(kept.as<tir::AllocateNode>() != nullptr);
  CHECK(kept.as<tir::AllocateNode>()->buffer.same_as(T));
  // Both compute Out[3] = In[3] - In[7].
  const auto got = run(func({In, Out}, r), 4);
  CHECK(at(got[1], 3) == at(got[0], 3) - at(got[0], 7));
}

TEST_CASE("uses_buffer: stores, loads, intrinsic operands and allocations") {
  const auto A = buffer("A", {4}), B = buffer("B", {4}), C = buffer("C", {4}), D = buffer("D", {4});
  const auto E = buffer("E", {4}), F = buffer("F", {4});
  const auto s = loop("i", 4, [&](ne::Expr i) {
    return allocate({D}, tir::make_seq({
                             tir::make_if(i < 2, st(A, i, ld(B, i) + 1)),
                             tir::make_evaluate(te::call("test.probe", i32, {}, {C})),
                         }));
  });
  CHECK(tir::uses_buffer(s, A.get()));  // stored
  CHECK(tir::uses_buffer(s, B.get()));  // loaded
  CHECK(tir::uses_buffer(s, C.get()));  // an intrinsic operand
  CHECK(tir::uses_buffer(s, D.get()));  // allocated, even unused
  CHECK_FALSE(tir::uses_buffer(s, E.get()));
  // A load inside an intrinsic's argument counts too.
  const auto t = tir::make_evaluate(te::call("test.probe", i32, {ld(E, 0)}, {}));
  CHECK(tir::uses_buffer(t, E.get()));
  CHECK_FALSE(tir::uses_buffer(t, F.get()));
}

// ---- reuse_inplace --------------------------------------------------------------------------

namespace {

// allocate A, B { A = In; B = f(A); Out = B }, f given per test; every buffer of 8 elements
// unless the caller's B says otherwise.
struct Ewise {
  Buffer In = buffer("In", {8}), Out = buffer("Out", {8});
  Buffer A = buffer("A", {8}, i32, kAcc), B = buffer("B", {8}, i32, kAcc);
  tir::Stmt fill_a() const {
    return loop("i", 8, [&](ne::Expr i) { return st(A, i, ld(In, i)); });
  }
  tir::Stmt copy_out() const {
    return loop("k", 8, [&](ne::Expr k) { return st(Out, k, ld(B, k)); });
  }
  template <class F>
  tir::Stmt stage(F value) const {
    return loop("j", 8, [&](ne::Expr j) { return st(B, j, value(j)); });
  }
  tir::PrimFunc program(std::vector<tir::Stmt> seq) const {
    return func({In, Out}, allocate({A, B}, tir::make_seq(seq)));
  }
};

}  // namespace

TEST_CASE("reuse_inplace: an element-wise stage writes into its dead input's buffer") {
  Ewise e;
  const auto f = e.program({
      e.fill_a(),
      tir::make_attr("pragma_alu", "j", 1,
                     e.stage([&](ne::Expr j) { return ld(e.A, j) * ld(e.A, j) - 3; })),
      e.copy_out(),
  });
  const auto r = tir::reuse_inplace(f.body);
  CHECK(tir::to_string(r) == R"(  allocate(A, int32, [8]), storage_scope = local.acc_buffer
  for (i, 0, 8) {
    A[i] = In[i]
  }
  // attr [j] pragma_alu = 1
  for (j, 0, 8) {
    A[j] = ((A[j]*A[j]) - 3)
  }
  for (k, 0, 8) {
    Out[k] = A[k]
  }
)");
  CHECK_FALSE(tir::uses_buffer(r, e.B.get()));
  const auto got = check_same(f, r);
  for (std::size_t k = 0; k < 8; ++k) CHECK(at(got[1], k) == at(got[0], k) * at(got[0], k) - 3);
}

TEST_CASE("reuse_inplace: a stage that writes an element more than once keeps its own buffer") {
  Ewise e;
  const auto plus_one = [&](ne::Expr j) { return st(e.B, j, ld(e.A, j) + 1); };
  const auto twice = [&](auto&& store) {
    return loop("r", 2, [&](ne::Expr) { return loop("j", 8, store); });
  };
  // Each element written twice (an outer loop the index ignores): in place, the second write
  // would read the first one's result.
  const auto f = e.program({e.fill_a(), twice(plus_one), e.copy_out()});
  const auto r = tir::reuse_inplace(f.body);
  CHECK(tir::uses_buffer(r, e.B.get()));
  const auto got = check_same(f, r);
  for (std::size_t k = 0; k < 8; ++k) CHECK(at(got[1], k) == at(got[0], k) + 1);
  // One element written eight times.
  const auto g =
      e.program({e.fill_a(), loop("j", 8, [&](ne::Expr) { return st(e.B, 0, ld(e.A, 0) + 1); }),
                 e.copy_out()});
  CHECK(tir::uses_buffer(tir::reuse_inplace(g.body), e.B.get()));
  // Strides that separate the iterations (j*2 + r over r < 2) write each element once.
  const auto h = e.program({e.fill_a(),
                            loop("r", 2,
                                 [&](ne::Expr r) {
                                   return loop("j", 4, [&](ne::Expr j) {
                                     return st(e.B, j * 2 + r, ld(e.A, j * 2 + r) + 1);
                                   });
                                 }),
                            e.copy_out()});
  const auto rh = tir::reuse_inplace(h.body);
  CHECK_FALSE(tir::uses_buffer(rh, e.B.get()));
  check_same(h, rh);
}

TEST_CASE("reuse_inplace: a block of a symbolic extent (symbolic strides) is reused in place") {
  // A and B of n x 4 elements, n symbolic: the flat index j + 4i has strides 1 and 4 over
  // extents 4 and n, a numbering of the iterations whatever n is; B = A + 1 lives in A.
  auto n = ne::var("n", 1, 6);
  const auto In = buffer("In", {24}), Out = buffer("Out", {24});
  const auto A = buffer("A", {n * 4}, i32, kAcc), B = buffer("B", {n * 4}, i32, kAcc);
  const auto nest = [&](const char* i, const char* j, auto body) {
    const auto vi = ne::var(i, 0, 5), vj = ne::var(j, 0, 3);
    return tir::make_for(vi, 0, n, tir::ForKind::Serial,
                         tir::make_for(vj, 0, 4, tir::ForKind::Serial, body(vi, vj)));
  };
  const auto flat = [](ne::Expr i, ne::Expr j) { return i * 4 + j; };
  const auto program = [&](auto stage_index) {
    return func({In, Out}, allocate({A, B}, tir::make_seq({
                                                nest("i", "j",
                                                     [&](ne::Expr i, ne::Expr j) {
                                                       return st(A, flat(i, j), ld(In, flat(i, j)));
                                                     }),
                                                nest("p", "q",
                                                     [&](ne::Expr i, ne::Expr j) {
                                                       const auto k = stage_index(i, j);
                                                       return st(B, k, ld(A, k) + 1);
                                                     }),
                                                nest("r", "s",
                                                     [&](ne::Expr i, ne::Expr j) {
                                                       return st(Out, flat(i, j),
                                                                 ld(B, flat(i, j)));
                                                     }),
                                            })));
  };
  const auto f = program(flat);
  CHECK_FALSE(tir::uses_buffer(tir::reuse_inplace(f.body), B.get()));
  // strides 1 and 3 over extents 4 and n: rows overlap, B keeps its own buffer
  const auto g = program([](ne::Expr i, ne::Expr j) { return i * 3 + j; });
  CHECK(tir::uses_buffer(tir::reuse_inplace(g.body), B.get()));
}

TEST_CASE("reuse_inplace: of two dead inputs, the output takes one and the other stays") {
  Ewise e;
  const auto C = buffer("C", {8}, i32, kAcc);
  const auto f = func(
      {e.In, e.Out},
      allocate(
          {e.A, C, e.B},
          tir::make_seq(
              {e.fill_a(), loop("c", 8, [&](ne::Expr c) { return st(C, c, ld(e.In, 7 - c)); }),
               e.stage([&](ne::Expr j) { return ld(e.A, j) - ld(C, j) * 2; }), e.copy_out()})));
  const auto r = tir::reuse_inplace(f.body);
  CHECK(allocations(r) == std::vector<std::string>{"A", "C"});
  CHECK_FALSE(tir::uses_buffer(r, e.B.get()));
  const auto got = check_same(f, r);
  for (std::size_t k = 0; k < 8; ++k) CHECK(at(got[1], k) == at(got[0], k) - at(got[0], 7 - k) * 2);
}

namespace {

// A lowered copy -> shift -> clip -> cast chain in the accumulator, as in TVM's
// matrix_multiply_opt: 4 rows in blocks of 2, every stage computed at the block loop (bound to
// a virtual thread on request).
struct ClipChain {
  te::Tensor X, X_buf, shr, mx, mn, res;
  ClipChain() {
    X = te::placeholder(te::shape(4, 16), i32, "X");
    X_buf = te::compute(
        te::shape(4, 16), [&](auto... i) { return X(i...); }, "X_buf");
    shr = te::compute(
        te::shape(4, 16), [&](auto... i) { return X_buf(i...) >> 3; }, "shr");
    mx = te::compute(
        te::shape(4, 16), [&](auto... i) { return te::max(shr(i...), 0); }, "mx");
    mn = te::compute(
        te::shape(4, 16), [&](auto... i) { return te::min(mx(i...), 127); }, "mn");
    res = te::compute(
        te::shape(4, 16), [&](auto... i) { return te::cast(DType::int8(), mn(i...)); }, "res");
  }
  tir::PrimFunc lower(bool bind_thread) const {
    auto s = te::create_schedule(res);
    auto [o, in] = s[res].split(s[res].axis(0), 2);
    if (bind_thread) s[res].bind(o, te::thread_axis("cthread"));
    for (const auto& t : {X_buf, shr, mx, mn}) {
      s[t].set_scope(kAcc);
      s[t].compute_at(s[res], o);
    }
    (void)in;
    return te::lower(s, {X, res});
  }
};

}  // namespace

TEST_CASE("reuse_inplace: a chain of element-wise stages collapses into one buffer") {
  const ClipChain c;
  const auto f = c.lower(false);
  CHECK(allocations(f.body) == std::vector<std::string>{"X_buf", "shr", "mx", "mn"});
  const auto r = tir::reuse_inplace(f.body);
  CHECK(allocations(r) == std::vector<std::string>{"X_buf"});
  const auto stored = leaves(r);
  REQUIRE(stored.size() == 5);
  for (std::size_t k = 0; k < 4; ++k) CHECK(stored[k].rfind("X_buf[", 0) == 0);
  CHECK(stored[4].rfind("res[", 0) == 0);
  const auto got = check_same(f, r);
  CHECK(got[1] == te::evaluate(c.res, {{c.X, got[0]}}));
}

TEST_CASE("reuse_inplace: no reuse while the input is still read afterwards") {
  Ewise e;
  const auto stage = e.stage([&](ne::Expr j) { return ld(e.A, j) + 1; });
  SUBCASE("by a load") {
    const auto f = e.program({
        e.fill_a(),
        stage,
        loop("k", 8, [&](ne::Expr k) { return st(e.Out, k, ld(e.A, k) - ld(e.B, k)); }),
    });
    const auto r = tir::reuse_inplace(f.body);
    CHECK(tir::to_string(r) == tir::to_string(f.body));
    CHECK(allocations(r) == std::vector<std::string>{"A", "B"});
    const auto got = check_same(f, r);
    for (std::size_t k = 0; k < 8; ++k) CHECK(at(got[1], k) == -1);
  }
  SUBCASE("as an intrinsic operand") {
    const auto f = e.program({e.fill_a(), stage, e.copy_out(),
                              tir::make_evaluate(te::call("test.probe", i32, {}, {e.A}))});
    CHECK(allocations(tir::reuse_inplace(f.body)) == std::vector<std::string>{"A", "B"});
  }
  SUBCASE("control: with the later read gone, B does move into A") {
    const auto f = e.program({e.fill_a(), stage, e.copy_out()});
    CHECK(allocations(tir::reuse_inplace(f.body)) == std::vector<std::string>{"A"});
  }
}

TEST_CASE("reuse_inplace: buffers of another dtype, scope or size are not shared") {
  struct Case {
    const char* what;
    DType dtype;
    std::string scope;
    std::int64_t size;
    bool reused;
  };
  for (const auto& c :
       {Case{"same", i32, kAcc, 8, true}, Case{"int8", DType::int8(), kAcc, 8, false},
        Case{"int16", DType::int16(), kAcc, 8, false}, Case{"scope", i32, kInp, 8, false},
        Case{"size", i32, kAcc, 16, false}}) {
    CAPTURE(c.what);
    Ewise e;
    e.B = buffer("B", {c.size}, c.dtype, c.scope);
    e.Out = buffer("Out", {8}, c.dtype);
    const auto f = e.program({
        e.fill_a(),
        e.stage([&](ne::Expr j) { return te::cast(c.dtype, ld(e.A, j) + 100); }),
        e.copy_out(),
    });
    const auto r = tir::reuse_inplace(f.body);
    CHECK(allocations(r) ==
          (c.reused ? std::vector<std::string>{"A"} : std::vector<std::string>{"A", "B"}));
    CHECK(tir::uses_buffer(r, e.B.get()) == !c.reused);
    check_same(f, r);
  }
}

TEST_CASE("reuse_inplace: a halving stage that reads ahead of its stores lives in its input") {
  // A = In (8); B[j] = A[j] op A[j + d] over j < n (B of n elements); Out = B: the halving
  // levels of a reduction. In place B[j] = B[j] op B[j + d] reads each element ahead of the
  // iteration that writes it.
  struct Case {
    std::string what;
    std::int64_t n, d;
    bool reversed;     // the loop visits j from n - 1 down
    bool first_ahead;  // the first operand is the element ahead
    bool reused;
  };
  for (const auto& c : {Case{"half", 4, 4, false, false, true},
                        Case{"odd count, overlapping halves", 4, 3, false, false, true},
                        Case{"one element ahead", 7, 1, false, false, true},
                        Case{"stores moving backward", 4, 3, true, false, false},
                        Case{"the element ahead as the first operand", 4, 4, false, true, false}}) {
    CAPTURE(c.what);
    Ewise e;
    e.B = buffer("B", {c.n}, i32, kAcc);
    e.Out = buffer("Out", {c.n});
    const auto index = [&](ne::Expr j) { return c.reversed ? (c.n - 1) - j : j; };
    const auto halving = loop("j", c.n, [&](ne::Expr j) {
      const auto k = index(j);
      const auto here = ld(e.A, k), ahead = ld(e.A, k + c.d);
      return st(e.B, k, c.first_ahead ? te::max(ahead, here) : te::max(here, ahead));
    });
    const auto out = loop("k", c.n, [&](ne::Expr k) { return st(e.Out, k, ld(e.B, k)); });
    const auto f = e.program({e.fill_a(), tir::make_attr("pragma_alu", "j", 1, halving), out});
    const auto r = tir::reuse_inplace(f.body);
    CHECK(allocations(r) ==
          (c.reused ? std::vector<std::string>{"A"} : std::vector<std::string>{"A", "B"}));
    const auto got = check_same(f, r);
    for (std::size_t k = 0; k < static_cast<std::size_t>(c.n); ++k)
      CHECK(at(got[1], k) ==
            std::max(at(got[0], k), at(got[0], k + static_cast<std::size_t>(c.d))));
  }
  // The softmax block's form: A [4 rows, 4 lanes], B[k][l] = A[k][l] + A[k + 2][l] over k < 2
  // (flat index 4k + l, a read 8 entries ahead) inside a loop of one iteration; with the lanes
  // outside the rows the stores do not move forward, and B keeps its own buffer.
  for (const bool lanes_outside : {false, true}) {
    CAPTURE(lanes_outside);
    const auto In = buffer("In", {16}), Out = buffer("Out", {8});
    const auto A = buffer("A", {16}, i32, kAcc), B = buffer("B", {8}, i32, kAcc);
    const auto half = [&](ne::Expr k, ne::Expr l) {
      return st(B, k * 4 + l, ld(A, k * 4 + l) + ld(A, (k + 2) * 4 + l));
    };
    const auto rows_then_lanes = [&](ne::Expr) {
      return loop("k", 2,
                  [&](ne::Expr k) { return loop("l", 4, [&](ne::Expr l) { return half(k, l); }); });
    };
    const auto lanes_then_rows = [&](ne::Expr) {
      return loop("l", 4,
                  [&](ne::Expr l) { return loop("k", 2, [&](ne::Expr k) { return half(k, l); }); });
    };
    const auto nest =
        lanes_outside ? loop("one", 1, lanes_then_rows) : loop("one", 1, rows_then_lanes);
    const auto f = func(
        {In, Out},
        allocate({A, B},
                 tir::make_seq({loop("i", 16, [&](ne::Expr i) { return st(A, i, ld(In, i)); }),
                                tir::make_attr("pragma_alu", "one", 1, nest),
                                loop("o", 8, [&](ne::Expr o) { return st(Out, o, ld(B, o)); })})));
    const auto r = tir::reuse_inplace(f.body);
    CHECK(allocations(r) ==
          (lanes_outside ? std::vector<std::string>{"A", "B"} : std::vector<std::string>{"A"}));
    const auto got = check_same(f, r);
    for (std::size_t k = 0; k < 8; ++k) CHECK(at(got[1], k) == at(got[0], k) + at(got[0], k + 8));
  }
  // B larger than A: not a prefix
  Ewise e;
  e.A = buffer("A", {8}, i32, kAcc);
  e.B = buffer("B", {9}, i32, kAcc);
  const auto f =
      e.program({e.fill_a(),
                 loop("j", 4, [&](ne::Expr j) { return st(e.B, j, ld(e.A, j) + ld(e.A, j + 4)); }),
                 e.copy_out()});
  CHECK(allocations(tir::reuse_inplace(f.body)) == std::vector<std::string>{"A", "B"});
}

TEST_CASE("reuse_inplace: the MIN or MAX of each entry with its mirror image lives in its input") {
  // A [2 rows, 4 lanes]; B[k][l] = min(A[k][l], A[1 - k][l]): in place the second row's
  // micro-op reads the first row's new value min(A[0], A[1]), and min(A[1], min(A[0], A[1])) is
  // min(A[1], A[0]) still. Only a MIN or a MAX, with its first operand at the store's index and
  // the other the mirror image in one loop, is so.
  struct Case {
    std::string what;
    te::ExprKind kind;
    bool mirror_first;  // min(A[m(i)], A[i])
    bool both_loops;    // the image mirrored in the lanes too
    bool reused;
  };
  for (const auto& c :
       {Case{"min", te::ExprKind::Min, false, false, true},
        Case{"max", te::ExprKind::Max, false, false, true},
        Case{"add", te::ExprKind::Add, false, false, false},
        Case{"the image as the first operand", te::ExprKind::Min, true, false, false},
        Case{"mirrored in two loops", te::ExprKind::Min, false, true, false}}) {
    CAPTURE(c.what);
    const auto In = buffer("In", {8}), Out = buffer("Out", {8});
    const auto A = buffer("A", {8}, i32, kAcc), B = buffer("B", {8}, i32, kAcc);
    const auto pairs = loop("k", 2, [&](ne::Expr k) {
      return loop("l", 4, [&](ne::Expr l) {
        const auto here = ld(A, k * 4 + l);
        const auto image = ld(A, (1 - k) * 4 + (c.both_loops ? 3 - l : l));
        const auto first = c.mirror_first ? image : here, second = c.mirror_first ? here : image;
        const auto value = c.kind == te::ExprKind::Min   ? te::min(first, second)
                           : c.kind == te::ExprKind::Max ? te::max(first, second)
                                                         : first + second;
        return st(B, k * 4 + l, value);
      });
    });
    const auto f = func(
        {In, Out},
        allocate({A, B},
                 tir::make_seq({loop("i", 8, [&](ne::Expr i) { return st(A, i, ld(In, i)); }),
                                tir::make_attr("pragma_alu", "k", 1, pairs),
                                loop("o", 8, [&](ne::Expr o) { return st(Out, o, ld(B, o)); })})));
    const auto r = tir::reuse_inplace(f.body);
    CHECK(allocations(r) ==
          (c.reused ? std::vector<std::string>{"A"} : std::vector<std::string>{"A", "B"}));
    const auto got = check_same(f, r);
    for (std::size_t k = 0; k < 2; ++k)
      for (std::size_t l = 0; l < 4; ++l) {
        const auto here = at(got[0], k * 4 + l);
        const auto image = at(got[0], (1 - k) * 4 + (c.both_loops ? 3 - l : l));
        CHECK(at(got[1], k * 4 + l) == (c.kind == te::ExprKind::Min   ? std::min(here, image)
                                        : c.kind == te::ExprKind::Max ? std::max(here, image)
                                                                      : here + image));
      }
  }
}

TEST_CASE("reuse_inplace: a stage that is not element-wise in its input keeps its own buffer") {
  Ewise e;
  const auto rejected = [&](const tir::PrimFunc& f, bool run_it = true) {
    const auto r = tir::reuse_inplace(f.body);
    CHECK(tir::to_string(r) == tir::to_string(f.body));
    if (run_it) check_same(f, r);
  };
  SUBCASE("the input read at another index") {
    rejected(
        e.program({e.fill_a(), e.stage([&](ne::Expr j) { return ld(e.A, 7 - j); }), e.copy_out()}));
  }
  SUBCASE("the input read at its index and another") {
    rejected(e.program(
        {e.fill_a(), e.stage([&](ne::Expr j) { return ld(e.A, j) + ld(e.A, ne::min(j + 1, 7)); }),
         e.copy_out()}));
  }
  SUBCASE("the output read by its own value") {
    rejected(e.program(
        {e.fill_a(), e.stage([&](ne::Expr j) { return ld(e.A, j) + ld(e.B, j); }), e.copy_out()}));
  }
  SUBCASE("the output written before the stage") {
    rejected(
        e.program({loop("z", 8, [&](ne::Expr z) { return st(e.B, z, te::make_const(5, i32)); }),
                   e.fill_a(), e.stage([&](ne::Expr j) { return ld(e.A, j) * 2; }), e.copy_out()}));
  }
  SUBCASE("the input passed to an intrinsic inside the value") {
    rejected(e.program({e.fill_a(), e.stage([&](ne::Expr j) {
                          return ld(e.A, j) + te::call("test.probe", i32, {}, {e.A});
                        }),
                        e.copy_out()}),
             /*run_it=*/false);
  }
  SUBCASE("the store under a guard") {
    rejected(e.program(
        {e.fill_a(),
         loop("j", 8, [&](ne::Expr j) { return tir::make_if(j < 6, st(e.B, j, ld(e.A, j))); }),
         e.copy_out()}));
  }
  SUBCASE("a loop between the allocations and the sequence") {
    const auto body = tir::make_seq(
        {e.fill_a(), e.stage([&](ne::Expr j) { return ld(e.A, j) + 1; }), e.copy_out()});
    rejected(
        func({e.In, e.Out}, allocate({e.A, e.B}, loop("r", 2, [&](ne::Expr) { return body; }))));
  }
  SUBCASE("the input is a parameter, not an allocation of the run") {
    const auto f = func(
        {e.In, e.Out},
        allocate({e.B}, tir::make_seq(
                            {loop("j", 8, [&](ne::Expr j) { return st(e.B, j, ld(e.In, j) + 1); }),
                             e.copy_out()})));
    rejected(f);
  }
}

// ---- inject_virtual_threads ------------------------------------------------------------------

namespace {

// The caller's modules: writes of on-chip buffers load (0), writes of DRAM store (1),
// intrinsic calls compute (2).
int module_of(const tir::Stmt& leaf) {
  if (const auto* s = leaf.as<tir::StoreNode>()) return s->buffer.scope() == "global" ? 1 : 0;
  return 2;
}

tir::Stmt vthread(const ne::Var& tx, std::int64_t n, tir::Stmt body) {
  return tir::make_for(tx, 0, n, tir::ForKind::VThread, std::move(body));
}

}  // namespace

TEST_CASE("inject_virtual_threads: a shared loop, per-thread buffers, modules interleaved") {
  // Double buffering: each thread loads its block into X, then writes it back doubled.
  const auto In = buffer("In", {24}), Out = buffer("Out", {24});
  const auto X = buffer("X", {4}, i32, kInp);
  const auto tx = ne::var("tx", 0, 1);
  const auto s = vthread(
      tx, 2, loop("k", 3, [&](ne::Expr k) {
        return allocate(
            {X},
            tir::make_seq({
                loop("i", 4, [&](ne::Expr i) { return st(X, i, ld(In, (tx * 3 + k) * 4 + i)); }),
                loop("j", 4,
                     [&](ne::Expr j) {
                       return st(Out, (tx * 3 + k) * 4 + j, ld(X, j) * 2 + te::index_value(tx));
                     }),
            }));
      }));
  const auto r = tir::inject_virtual_threads(s, module_of);
  CHECK(tir::to_string(r) == R"(  for (k, 0, 3) {
    allocate(X.v0, int32, [4]), storage_scope = local.inp_buffer
    allocate(X.v1, int32, [4]), storage_scope = local.inp_buffer
    for (i, 0, 4) {
      X.v0[i] = In[(k*4) + i]
    }
    for (i, 0, 4) {
      X.v1[i] = In[(k*4) + i + 12]
    }
    for (j, 0, 4) {
      Out[(k*4) + j] = ((X.v0[j]*2) + 0)
    }
    for (j, 0, 4) {
      Out[(k*4) + j + 12] = ((X.v1[j]*2) + 1)
    }
  }
)");
  CHECK_FALSE(tir::uses_buffer(r, X.get()));
  const auto got = check_same(func({In, Out}, s), r);
  for (std::size_t t = 0; t < 2; ++t)
    for (std::size_t k = 0; k < 12; ++k)
      CHECK(at(got[1], t * 12 + k) == at(got[0], t * 12 + k) * 2 + static_cast<std::int64_t>(t));
}

TEST_CASE("inject_virtual_threads: runs of one module are replicated as blocks, in order") {
  // Three threads; load, load, store, store, load, store: each run of one module becomes the
  // run for thread 0, then for thread 1, then for thread 2.
  const auto In = buffer("In", {6}), Out = buffer("Out", {9});
  const auto X = buffer("X", {1}, i32, kInp), Y = buffer("Y", {1}, i32, kInp);
  const auto tx = ne::var("tx", 0, 2);
  const auto s = vthread(tx, 3,
                         allocate({X, Y}, tir::make_seq({
                                              st(X, 0, ld(In, tx)),
                                              st(Y, 0, ld(In, tx + 3)),
                                              st(Out, tx, ld(X, 0) + ld(Y, 0)),
                                              st(Out, tx + 3, ld(X, 0) - ld(Y, 0)),
                                              st(X, 0, ld(In, tx) * 3),
                                              st(Out, tx + 6, ld(X, 0)),
                                          })));
  const auto r = tir::inject_virtual_threads(s, module_of);
  CHECK(allocations(r) == std::vector<std::string>{"X.v0", "X.v1", "X.v2", "Y.v0", "Y.v1", "Y.v2"});
  CHECK(leaves(r) == std::vector<std::string>{
                         "X.v0[0]", "Y.v0[0]", "X.v1[0]", "Y.v1[0]", "X.v2[0]", "Y.v2[0]",  //
                         "Out[0]", "Out[3]", "Out[1]", "Out[4]", "Out[2]", "Out[5]",        //
                         "X.v0[0]", "X.v1[0]", "X.v2[0]",                                   //
                         "Out[6]", "Out[7]", "Out[8]"});
  const auto got = check_same(func({In, Out}, s), r);
  for (std::size_t t = 0; t < 3; ++t) {
    CHECK(at(got[1], t) == at(got[0], t) + at(got[0], t + 3));
    CHECK(at(got[1], t + 3) == at(got[0], t) - at(got[0], t + 3));
    CHECK(at(got[1], t + 6) == at(got[0], t) * 3);
  }
}

TEST_CASE(
    "inject_virtual_threads: loops and guards that depend on the thread are replicated whole") {
  const auto In = buffer("In", {8}), Out = buffer("Out", {11});
  const auto X = buffer("X", {4}, i32, kInp);
  const auto tx = ne::var("tx", 0, 1);
  const auto k = ne::var("k", 0, 2), m = ne::var("m", 0, 1);
  const auto s = vthread(
      tx, 2,
      allocate(
          {X},
          tir::make_seq({
              // Bounds in tx: one loop per thread, its two modules left together.
              tir::make_for(
                  k, 0, tx + 2, tir::ForKind::Serial,
                  tir::make_seq({st(X, k, ld(In, tx * 4 + k)), st(Out, tx * 4 + k, ld(X, k) + 1)})),
              tir::make_if(tx == 1, tir::make_seq({st(Out, 8, ld(X, 0) * 5), st(X, 3, 0)})),
              // Bounds without tx: the loop and its guard are shared, threads inside.
              tir::make_for(m, 0, 2, tir::ForKind::Serial,
                            tir::make_if(m < 1, tir::make_seq({st(X, m + 2, ld(In, m)),
                                                               st(Out, tx + 9, ld(X, m + 2))}))),
          })));
  const auto r = tir::inject_virtual_threads(s, module_of);
  CHECK(tir::to_string(r) == R"(  allocate(X.v0, int32, [4]), storage_scope = local.inp_buffer
  allocate(X.v1, int32, [4]), storage_scope = local.inp_buffer
  for (k, 0, 2) {
    X.v0[k] = In[k]
    Out[k] = (X.v0[k] + 1)
  }
  for (k, 0, 3) {
    X.v1[k] = In[k + 4]
    Out[k + 4] = (X.v1[k] + 1)
  }
  if (0) {
    Out[8] = (X.v0[0]*5)
    X.v0[3] = 0
  }
  if (1) {
    Out[8] = (X.v1[0]*5)
    X.v1[3] = 0
  }
  for (m, 0, 2) {
    if (m < 1) {
      X.v0[m + 2] = In[m]
      X.v1[m + 2] = In[m]
      Out[9] = X.v0[m + 2]
      Out[10] = X.v1[m + 2]
    }
  }
)");
  check_same(func({In, Out}, s), r);
}

TEST_CASE("inject_virtual_threads: a lowered schedule with a virtual thread computes the same") {
  // C[i] = sum_k (A[i, k] + 1) over 12 rows in 3 virtual threads of 5, 5 and 2 rows, each with
  // its own copy of B.
  const auto A = te::placeholder(te::shape(12, 10), i32, "A");
  const auto B = te::compute(
      te::shape(12, 10), [&](auto i, auto j) { return A(i, j) + 1; }, "B");
  const auto k = te::reduce_axis({0, 10}, "k");
  const auto C = te::compute(
      te::shape(12), [&](auto i) { return te::sum(B(i, k), {k}); }, "C");
  auto s = te::create_schedule(C);
  auto [o, i] = s[C].split(s[C].axis(0), 5);
  s[C].bind(o, te::thread_axis("cthread"));
  s[B].set_scope(kInp);
  s[B].compute_at(s[C], o);
  (void)i;
  const auto f = te::lower(s, {A, C});
  const auto before = tir::to_string(f.body);
  REQUIRE(before.find("vthread (i0.outer, 0, 3)") != std::string::npos);
  const auto r = tir::inject_virtual_threads(f.body, module_of);
  const auto after = tir::to_string(r);
  CHECK(after.find("vthread") == std::string::npos);
  CHECK(allocations(r) == std::vector<std::string>{"B.v0", "B.v1", "B.v2"});
  // Every statement inside the thread loop is there once per thread.
  CHECK(count(after, "C[") == 3 * count(before, "C["));
  // The partial last block: loops of 5, 5 and 2 rows (B's copy, then C's rows).
  CHECK(count(after, "for (i0, 0, 5)") == 2);
  CHECK(count(after, "for (i0, 0, 2)") == 1);
  CHECK(count(after, "for (i0.inner, 0, 5)") == 2);
  CHECK(count(after, "for (i0.inner, 0, 2)") == 1);
  const auto got = check_same(f, r);
  CHECK(got[1] == te::evaluate(C, {{A, got[0]}}));
}

TEST_CASE("inject_virtual_threads: nested virtual threads get a buffer per thread pair") {
  const auto In = buffer("In", {4}), Out = buffer("Out", {4});
  const auto X = buffer("X", {2}, i32, kInp);
  const auto tx = ne::var("tx", 0, 1), ty = ne::var("ty", 0, 1);
  const auto s =
      vthread(tx, 2,
              vthread(ty, 2,
                      allocate({X}, tir::make_seq({st(X, 0, ld(In, tx * 2 + ty)),
                                                   st(X, 1, ld(In, 3 - tx * 2 - ty) * 10),
                                                   st(Out, tx * 2 + ty, ld(X, 0) + ld(X, 1))}))));
  const auto r = tir::inject_virtual_threads(s, module_of);
  CHECK(allocations(r) == std::vector<std::string>{"X.v0.v0", "X.v0.v1", "X.v1.v0", "X.v1.v1"});
  CHECK(leaves(r) == std::vector<std::string>{"X.v0.v0[0]", "X.v0.v0[1]", "X.v1.v0[0]",
                                              "X.v1.v0[1]", "X.v0.v1[0]", "X.v0.v1[1]",
                                              "X.v1.v1[0]", "X.v1.v1[1]", "Out[0]", "Out[1]",
                                              "Out[2]", "Out[3]"});
  const auto got = check_same(func({In, Out}, s), r);
  for (std::size_t t = 0; t < 4; ++t)
    CHECK(at(got[1], t) == at(got[0], t) + at(got[0], 3 - t) * 10);
}

TEST_CASE("inject_virtual_threads: per-thread buffers take their thread's shape") {
  const auto In = buffer("In", {8}), Out = buffer("Out", {8});
  const auto tx = ne::var("tx", 0, 1);
  const auto X = buffer("X", {tx + 2}, i32, kInp);
  const auto body =
      allocate({X}, tir::make_seq({st(X, tx + 1, ld(In, tx)), st(Out, tx, ld(X, tx + 1) * 7)}));
  SUBCASE("an allocation the threads share (modules differ)") {
    const auto r = tir::inject_virtual_threads(vthread(tx, 2, body), module_of);
    CHECK(tir::to_string(r) == R"(  allocate(X.v0, int32, [2]), storage_scope = local.inp_buffer
  allocate(X.v1, int32, [3]), storage_scope = local.inp_buffer
  X.v0[1] = In[0]
  X.v1[2] = In[1]
  Out[0] = (X.v0[1]*7)
  Out[1] = (X.v1[2]*7)
)");
    check_same(func({In, Out}, vthread(tx, 2, body)), r);
  }
  SUBCASE("an allocation inside a block replicated whole (one module)") {
    const auto one = [](const tir::Stmt&) { return 0; };
    const auto r = tir::inject_virtual_threads(vthread(tx, 2, body), one);
    CHECK(tir::to_string(r) == R"(  allocate(X.v0, int32, [2]), storage_scope = local.inp_buffer
  X.v0[1] = In[0]
  Out[0] = (X.v0[1]*7)
  allocate(X.v1, int32, [3]), storage_scope = local.inp_buffer
  X.v1[2] = In[1]
  Out[1] = (X.v1[2]*7)
)");
    check_same(func({In, Out}, vthread(tx, 2, body)), r);
  }
}

TEST_CASE("inject_virtual_threads: intrinsic calls get their thread's buffers and arguments") {
  const auto Out = buffer("Out", {12});
  const auto X = buffer("X", {2}, i32, kAcc);
  const auto tx = ne::var("tx", 0, 2);
  const auto s = vthread(
      tx, 3, loop("k", 2, [&](ne::Expr k) {
        return allocate(
            {X},
            tir::make_seq({
                tir::make_evaluate(te::call("test.fill", i32, {te::index_value(tx * 10 + k)}, {X})),
                loop("j", 2,
                     [&](ne::Expr j) {
                       return st(Out, tx * 4 + k * 2 + j, ld(X, j) + te::index_value(j));
                     }),
            }));
      }));
  // test.fill(X; v) sets every element of X to v.
  const tir::IntrinsicHandler fill = [](const te::CallNode& c, std::span<const std::int64_t> args,
                                        std::span<te::NDArray* const> bufs) {
    REQUIRE(c.name == "test.fill");
    for (auto& v : bufs[0]->data()) v = args[0];
  };
  const auto r = tir::inject_virtual_threads(s, module_of);
  const auto calls = leaves(r);
  CHECK(calls == std::vector<std::string>{"@test.fill(X.v0; k)", "@test.fill(X.v1; k + 10)",
                                          "@test.fill(X.v2; k + 20)", "Out[(k*2) + j]",
                                          "Out[(k*2) + j + 4]", "Out[(k*2) + j + 8]"});
  const auto got = check_same(func({Out}, s), r, fill);
  for (std::size_t t = 0; t < 3; ++t)
    for (std::size_t k = 0; k < 2; ++k)
      for (std::size_t j = 0; j < 2; ++j)
        CHECK(at(got[0], t * 4 + k * 2 + j) == static_cast<std::int64_t>(t * 10 + k + j));
}

TEST_CASE("inject_virtual_threads: one thread, and loops without a virtual thread") {
  const auto In = buffer("In", {4}), Out = buffer("Out", {4});
  const auto X = buffer("X", {4}, i32, kInp);
  const auto tx = ne::var("tx", 0, 0);
  const auto inner = allocate(
      {X}, tir::make_seq({loop("i", 4, [&](ne::Expr i) { return st(X, i, ld(In, i + tx)); }),
                          loop("j", 4, [&](ne::Expr j) { return st(Out, j, ld(X, j) - 1); })}));
  const auto r = tir::inject_virtual_threads(vthread(tx, 1, inner), module_of);
  CHECK(tir::to_string(r) == R"(  allocate(X.v0, int32, [4]), storage_scope = local.inp_buffer
  for (i, 0, 4) {
    X.v0[i] = In[i]
  }
  for (j, 0, 4) {
    Out[j] = (X.v0[j] - 1)
  }
)");
  check_same(func({In, Out}, vthread(tx, 1, inner)), r);
  // Without a virtual-thread loop nothing changes.
  const auto serial = loop("o", 2, [&](ne::Expr) { return inner; });
  CHECK(tir::inject_virtual_threads(serial, module_of).same_as(serial));
}

TEST_CASE("inject_virtual_threads: a thread count that is not a constant from 0 is refused") {
  const auto Out = buffer("Out", {8});
  const auto tx = ne::var("tx", 0, 7);
  const auto n = ne::var("n", 1, 4);
  const auto body = st(Out, tx, te::index_value(tx));
  CHECK_THROWS_WITH_AS(
      tir::inject_virtual_threads(tir::make_for(tx, 0, n, tir::ForKind::VThread, body), module_of),
      doctest::Contains("virtual thread 'tx' runs over [0, 0 + n)"), dlavm::ScheduleError);
  CHECK_THROWS_WITH_AS(
      tir::inject_virtual_threads(tir::make_for(tx, 1, 2, tir::ForKind::VThread, body), module_of),
      doctest::Contains(
          "virtual thread 'tx' runs over [1, 1 + 2); it needs a constant count from 0"),
      dlavm::ScheduleError);
  // Nested inside an ordinary loop, still found.
  CHECK_THROWS_WITH_AS(
      tir::inject_virtual_threads(
          loop("o", 2,
               [&](ne::Expr) { return tir::make_for(tx, 0, n, tir::ForKind::VThread, body); }),
          module_of),
      doctest::Contains("'tx'"), dlavm::ScheduleError);
}

TEST_CASE("reuse_inplace then inject_virtual_threads: the pipeline's order on a lowered chain") {
  // The chain's block loop bound to a virtual thread: reuse leaves one accumulator buffer,
  // which each of the two threads then gets a copy of.
  const ClipChain c;
  const auto f = c.lower(true);
  REQUIRE(tir::to_string(f.body).find("vthread") != std::string::npos);
  const auto reused = tir::reuse_inplace(f.body);
  CHECK(allocations(reused) == std::vector<std::string>{"X_buf"});
  const auto r = tir::inject_virtual_threads(reused, module_of);
  CHECK(allocations(r) == std::vector<std::string>{"X_buf.v0", "X_buf.v1"});
  const auto stored = leaves(r);
  REQUIRE(stored.size() == 10);
  // The four on-chip stages of thread 0, then of thread 1, then both threads' stores to DRAM.
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(stored[k].rfind("X_buf.v0[", 0) == 0);
    CHECK(stored[k + 4].rfind("X_buf.v1[", 0) == 0);
  }
  CHECK(stored[8].rfind("res[", 0) == 0);
  CHECK(stored[9].rfind("res[", 0) == 0);
  CHECK(stored[8] != stored[9]);
  const auto got = check_same(f, r);
  CHECK(got[1] == te::evaluate(c.res, {{c.X, got[0]}}));
}
