// Lowering: golden loop structures of TVM's VTA GEMM walkthroughs (matrix_multiply and
// matrix_multiply_opt), checked by the interpreter against te::evaluate.
#include <dlavm/schedule.hpp>
#include <dlavm/tir.hpp>

#include <doctest/doctest.h>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
using dlavm::DType;

namespace {

// matrix_multiply: C[1, m, 1, 16] = A[1, n, 1, 16] x B[m, n, 16, 16]^T, through on-chip copies.
struct Gemm {
  te::Tensor A, B, A_buf, B_buf, C_buf, C;
  te::IterVar ko, ki;
  Gemm(int m, int n) {
    A = te::placeholder(te::shape(1, n, 1, 16), DType::int8(), "A");
    B = te::placeholder(te::shape(m, n, 16, 16), DType::int8(), "B");
    A_buf = te::compute(
        te::shape(1, n, 1, 16), [&](auto... i) { return A(i...); }, "A_buf");
    B_buf = te::compute(
        te::shape(m, n, 16, 16), [&](auto... i) { return B(i...); }, "B_buf");
    ko = te::reduce_axis({0, n}, "ko");
    ki = te::reduce_axis({0, 16}, "ki");
    C_buf = te::compute(te::shape(1, m, 1, 16),
                        [&](auto bo, auto co, auto bi, auto ci) {
                          return te::sum(te::cast(DType::int32(), A_buf(bo, ko, bi, ki)) *
                                             te::cast(DType::int32(), B_buf(co, ko, ci, ki)),
                                         {ko, ki});
                        },
                        "C_buf", {"bo", "co", "bi", "ci"});
    C = te::compute(
        te::shape(1, m, 1, 16), [&](auto... i) { return te::cast(DType::int8(), C_buf(i...)); },
        "C");
  }
  te::Schedule scoped_schedule() const {
    auto s = te::create_schedule(C);
    s[A_buf].set_scope("local.inp_buffer");
    s[B_buf].set_scope("local.wgt_buffer");
    s[C_buf].set_scope("local.acc_buffer");
    s[A_buf].compute_at(s[C_buf], ko);
    s[B_buf].compute_at(s[C_buf], ko);
    s[A_buf].pragma(s[A_buf].axis(0), "dma_copy");
    s[B_buf].pragma(s[B_buf].axis(0), "dma_copy");
    s[C].pragma(s[C].axis(0), "dma_copy");
    return s;
  }
  void check(const tir::PrimFunc& f, int m, int n, std::uint64_t seed) const {
    auto a = te::NDArray::random(DType::int8(), {1, n, 1, 16}, seed);
    auto b = te::NDArray::random(DType::int8(), {m, n, 16, 16}, seed + 1);
    te::NDArray c(DType::int8(), {1, m, 1, 16});
    tir::run(f, {&a, &b, &c});
    CHECK(c == te::evaluate(C, {{A, a}, {B, b}}));
  }
};

std::string body_of(const tir::PrimFunc& f) { return tir::to_string(f.body); }

}  // namespace

TEST_CASE("lower: matrix_multiply walkthrough, scopes and compute_at at ko") {
  Gemm g(16, 16);
  auto s = g.scoped_schedule();
  auto f = te::lower(s, {g.A, g.B, g.C}, "gemm");
  CHECK(body_of(f) == R"(  allocate(C_buf, int32, [256]), storage_scope = local.acc_buffer
  for (co, 0, 16) {
    for (ci, 0, 16) {
      C_buf[(co*16) + ci] = 0
      for (ko, 0, 16) {
        allocate(A_buf, int8, [16]), storage_scope = local.inp_buffer
        allocate(B_buf, int8, [16]), storage_scope = local.wgt_buffer
        // attr [i0] pragma_dma_copy = 1
        for (i3, 0, 16) {
          A_buf[i3] = A[i3 + (ko*16)]
        }
        // attr [i0] pragma_dma_copy = 1
        for (i3_1, 0, 16) {
          B_buf[i3_1] = B[i3_1 + (ko*256) + (co*4096) + (ci*16)]
        }
        for (ki, 0, 16) {
          C_buf[(co*16) + ci] = (C_buf[(co*16) + ci] + (cast(int32, A_buf[ki])*cast(int32, B_buf[ki])))
        }
      }
    }
  }
  // attr [i0] pragma_dma_copy = 1
  for (i1, 0, 16) {
    for (i3_2, 0, 16) {
      C[(i1*16) + i3_2] = cast(int8, C_buf[(i1*16) + i3_2])
    }
  }
)");
  g.check(f, 16, 16, 1);
}

TEST_CASE("lower: matrix_multiply walkthrough, reorder ko outermost for tensorization") {
  Gemm g(1024, 1024);
  auto s = g.scoped_schedule();
  s[g.C_buf].reorder(
      {g.ko, s[g.C_buf].axis(0), s[g.C_buf].axis(1), s[g.C_buf].axis(2), s[g.C_buf].axis(3), g.ki});
  auto f = te::lower(s, {g.A, g.B, g.C}, "gemm");
  CHECK(body_of(f) == R"(  allocate(C_buf, int32, [16384]), storage_scope = local.acc_buffer
  for (co.init, 0, 1024) {
    for (ci.init, 0, 16) {
      C_buf[(co.init*16) + ci.init] = 0
    }
  }
  for (ko, 0, 1024) {
    allocate(A_buf, int8, [16]), storage_scope = local.inp_buffer
    allocate(B_buf, int8, [262144]), storage_scope = local.wgt_buffer
    // attr [i0] pragma_dma_copy = 1
    for (i3, 0, 16) {
      A_buf[i3] = A[i3 + (ko*16)]
    }
    // attr [i0] pragma_dma_copy = 1
    for (i0, 0, 1024) {
      for (i2, 0, 16) {
        for (i3_1, 0, 16) {
          B_buf[(i0*256) + (i2*16) + i3_1] = B[(i0*262144) + (i2*16) + i3_1 + (ko*256)]
        }
      }
    }
    for (co, 0, 1024) {
      for (ci, 0, 16) {
        for (ki, 0, 16) {
          C_buf[(co*16) + ci] = (C_buf[(co*16) + ci] + (cast(int32, A_buf[ki])*cast(int32, B_buf[ki + (co*256) + (ci*16)])))
        }
      }
    }
  }
  // attr [i0] pragma_dma_copy = 1
  for (i1, 0, 1024) {
    for (i3_2, 0, 16) {
      C[(i1*16) + i3_2] = cast(int8, C_buf[(i1*16) + i3_2])
    }
  }
)");
  // The same schedule on a size the interpreter checks quickly.
  Gemm small(8, 4);
  auto s2 = small.scoped_schedule();
  s2[small.C_buf].reorder({small.ko, s2[small.C_buf].axis(0), s2[small.C_buf].axis(1),
                           s2[small.C_buf].axis(2), s2[small.C_buf].axis(3), small.ki});
  small.check(te::lower(s2, {small.A, small.B, small.C}), 8, 4, 2);
}

namespace {

// matrix_multiply_opt: 1 x 1024 x 1024 blocked by 256, with shift and clip on the ALU.
struct BlockedGemm {
  te::Tensor data, weight, data_buf, weight_buf, res_gemm, res_shr, res_max, res_min, res;
  te::IterVar ic, ic_tns;
  int channels;
  BlockedGemm(int in_channels, int out_channels) : channels(in_channels) {
    const int n = in_channels / 16, m = out_channels / 16;
    data = te::placeholder(te::shape(1, n, 1, 16), DType::int8(), "data");
    weight = te::placeholder(te::shape(m, n, 16, 16), DType::int8(), "weight");
    data_buf = te::compute(
        te::shape(1, n, 1, 16), [&](auto... i) { return data(i...); }, "data_buf");
    weight_buf = te::compute(
        te::shape(m, n, 16, 16), [&](auto... i) { return weight(i...); }, "weight_buf");
    ic = te::reduce_axis({0, n}, "ic");
    ic_tns = te::reduce_axis({0, 16}, "ic_tns");
    const auto out = te::shape(1, m, 1, 16);
    res_gemm =
        te::compute(out,
                    [&](auto bo, auto co, auto bi, auto ci) {
                      return te::sum(te::cast(DType::int32(), data_buf(bo, ic, bi, ic_tns)) *
                                         te::cast(DType::int32(), weight_buf(co, ic, ci, ic_tns)),
                                     {ic, ic_tns});
                    },
                    "res_gem", {"bo", "co", "bi", "ci"});
    res_shr = te::compute(
        out, [&](auto... i) { return res_gemm(i...) >> 8; }, "res_shr");
    res_max = te::compute(
        out, [&](auto... i) { return te::max(res_shr(i...), 0); }, "res_max");
    res_min = te::compute(
        out, [&](auto... i) { return te::min(res_max(i...), 127); }, "res_min");
    res = te::compute(
        out, [&](auto... i) { return te::cast(DType::int8(), res_min(i...)); }, "res");
  }
  te::Schedule schedule(int block) const {
    auto s = te::create_schedule(res);
    for (const auto& t : {res_gemm, res_shr, res_max, res_min}) s[t].set_scope("local.acc_buffer");
    s[data_buf].set_scope("local.inp_buffer");
    s[weight_buf].set_scope("local.wgt_buffer");
    auto [b_out, b_inn] = s[res].split(s[res].axis(0), 1);
    auto [oc_out, oc_inn] = s[res].split(s[res].axis(1), block / 16);
    s[res].reorder({b_out, oc_out, b_inn, oc_inn});
    for (const auto& t : {res_gemm, res_shr, res_max, res_min}) s[t].compute_at(s[res], oc_out);
    auto [ic_out, ic_inn] = s[res_gemm].split(ic, block / 16);
    s[res_gemm].reorder({ic_out, s[res_gemm].axis(0), s[res_gemm].axis(1), ic_inn,
                         s[res_gemm].axis(2), s[res_gemm].axis(3), ic_tns});
    s[data_buf].compute_at(s[res_gemm], ic_out);
    s[weight_buf].compute_at(s[res_gemm], ic_out);
    s[data_buf].pragma(s[data_buf].axis(0), "dma_copy");
    s[weight_buf].pragma(s[weight_buf].axis(0), "dma_copy");
    for (const auto& t : {res_shr, res_max, res_min}) s[t].pragma(s[t].axis(0), "alu");
    s[res].pragma(oc_inn, "dma_copy");
    return s;
  }
};

}  // namespace

TEST_CASE("lower: matrix_multiply_opt walkthrough, blocking by 256") {
  BlockedGemm g(1024, 1024);
  auto s = g.schedule(256);
  auto f = te::lower(s, {g.data, g.weight, g.res}, "blocked_gemm");
  CHECK(body_of(f) == R"(  for (i1.outer, 0, 4) {
    allocate(res_gem, int32, [256]), storage_scope = local.acc_buffer
    allocate(res_shr, int32, [256]), storage_scope = local.acc_buffer
    allocate(res_max, int32, [256]), storage_scope = local.acc_buffer
    allocate(res_min, int32, [256]), storage_scope = local.acc_buffer
    for (co.init, 0, 16) {
      for (ci.init, 0, 16) {
        res_gem[(co.init*16) + ci.init] = 0
      }
    }
    for (ic.outer, 0, 4) {
      allocate(data_buf, int8, [256]), storage_scope = local.inp_buffer
      allocate(weight_buf, int8, [65536]), storage_scope = local.wgt_buffer
      // attr [i0] pragma_dma_copy = 1
      for (i1, 0, 16) {
        for (i3, 0, 16) {
          data_buf[(i1*16) + i3] = data[(i1*16) + i3 + (ic.outer*256)]
        }
      }
      // attr [i0] pragma_dma_copy = 1
      for (i0, 0, 16) {
        for (i1_1, 0, 16) {
          for (i2, 0, 16) {
            for (i3_1, 0, 16) {
              weight_buf[(i0*4096) + (i1_1*256) + (i2*16) + i3_1] = weight[(i0*16384) + (i1_1*256) + (i2*16) + i3_1 + (i1.outer*262144) + (ic.outer*4096)]
            }
          }
        }
      }
      for (co, 0, 16) {
        for (ic.inner, 0, 16) {
          for (ci, 0, 16) {
            for (ic_tns, 0, 16) {
              res_gem[(co*16) + ci] = (res_gem[(co*16) + ci] + (cast(int32, data_buf[ic_tns + (ic.inner*16)])*cast(int32, weight_buf[ic_tns + (co*4096) + (ci*16) + (ic.inner*256)])))
            }
          }
        }
      }
    }
    // attr [i0] pragma_alu = 1
    for (i1_2, 0, 16) {
      for (i3_2, 0, 16) {
        res_shr[(i1_2*16) + i3_2] = (res_gem[(i1_2*16) + i3_2] >> 8)
      }
    }
    // attr [i0] pragma_alu = 1
    for (i1_3, 0, 16) {
      for (i3_3, 0, 16) {
        res_max[(i1_3*16) + i3_3] = max(res_shr[(i1_3*16) + i3_3], 0)
      }
    }
    // attr [i0] pragma_alu = 1
    for (i1_4, 0, 16) {
      for (i3_4, 0, 16) {
        res_min[(i1_4*16) + i3_4] = min(res_max[(i1_4*16) + i3_4], 127)
      }
    }
    // attr [i1.inner] pragma_dma_copy = 1
    for (i1.inner, 0, 16) {
      for (i3_5, 0, 16) {
        res[i3_5 + (i1.outer*256) + (i1.inner*16)] = cast(int8, res_min[i3_5 + (i1.inner*16)])
      }
    }
  }
)");
  BlockedGemm small(128, 96);
  auto s2 = small.schedule(32);
  auto f2 = te::lower(s2, {small.data, small.weight, small.res});
  auto d = te::NDArray::random(DType::int8(), {1, 8, 1, 16}, 7);
  auto w = te::NDArray::random(DType::int8(), {6, 8, 16, 16}, 8);
  te::NDArray r(DType::int8(), {1, 6, 1, 16});
  tir::run(f2, {&d, &w, &r});
  CHECK(r == te::evaluate(small.res, {{small.data, d}, {small.weight, w}}));
}
