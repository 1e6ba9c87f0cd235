// Definitions for host/onednn.hpp. Every call describes the convolution afresh: oneDNN's
// primitive cache returns the kernel it generated for the same description before.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/host/onednn.hpp>

// (oneDNN's C API: dnnl.h parses in a twentieth of a second, where the C++ API's dnnl.hpp
// costs two seconds in every translation unit that includes dlavm)
#ifdef DLAVM_WITH_ONEDNN
#include <dnnl.h>
#endif

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace dlavm::host::onednn {

#ifdef DLAVM_WITH_ONEDNN
namespace detail {

// One engine and stream per thread (a stream is not to be shared between threads).
struct Context {
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  Context() {
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) engine = nullptr;
    if (engine != nullptr &&
        dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success)
      stream = nullptr;
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() {
    if (stream != nullptr) dnnl_stream_destroy(stream);
    if (engine != nullptr) dnnl_engine_destroy(engine);
  }
};

inline Context& context() {
  thread_local Context c;
  return c;
}

// What one call creates, destroyed when it returns.
struct Owned {
  std::vector<dnnl_primitive_desc_t> descs;
  std::vector<dnnl_primitive_t> primitives;
  std::vector<dnnl_memory_t> memories;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    for (auto m : memories) dnnl_memory_destroy(m);
    for (auto p : primitives) dnnl_primitive_destroy(p);
    for (auto d : descs) dnnl_primitive_desc_destroy(d);
  }
};

}  // namespace detail

DLAVM_INLINE bool convolution(const ConvShape& s, const float* x, const float* w, float* y) {
  auto& ctx = detail::context();
  if (ctx.stream == nullptr) return false;
  detail::Owned own;
  bool ok = true;
  const auto check = [&](dnnl_status_t status) { ok = ok && status == dnnl_success; };
  const auto md = [&](std::initializer_list<std::int64_t> dims, dnnl_format_tag_t tag) {
    dnnl_memory_desc_t d{};
    const std::vector<dnnl_dim_t> v(dims.begin(), dims.end());
    check(dnnl_memory_desc_init_by_tag(&d, static_cast<int>(v.size()), v.data(), dnnl_f32, tag));
    return d;
  };
  const std::int64_t g = s.groups;
  // the weights as they lie in memory: forward [G, O/G, C/G, KH, KW]; transposed
  // [G, C/G, O/G, KH, KW], which oneDNN's (g, o, i) dims call giohw
  const auto w_dims = [&](dnnl_format_tag_t plain, dnnl_format_tag_t grouped) {
    return g == 1 ? md({s.o, s.c, s.kh, s.kw}, plain)
                  : md({g, s.o / g, s.c / g, s.kh, s.kw}, grouped);
  };
  const auto src_plain = md({s.n, s.c, s.h, s.w}, dnnl_nchw);
  const auto dst_plain = md({s.n, s.o, s.oh, s.ow}, dnnl_nchw);
  const auto w_plain = s.transposed ? w_dims(dnnl_iohw, dnnl_giohw) : w_dims(dnnl_oihw, dnnl_goihw);
  const auto src_any = md({s.n, s.c, s.h, s.w}, dnnl_format_tag_any);
  const auto dst_any = md({s.n, s.o, s.oh, s.ow}, dnnl_format_tag_any);
  const auto w_any = w_dims(dnnl_format_tag_any, dnnl_format_tag_any);
  if (!ok) return false;
  const dnnl_dims_t strides = {s.strides[0], s.strides[1]};
  const dnnl_dims_t dilations = {s.dilations[0] - 1, s.dilations[1] - 1};  // oneDNN counts gaps
  const dnnl_dims_t pad_l = {s.padding[0], s.padding[1]};
  const dnnl_dims_t pad_r = {s.padding[2], s.padding[3]};
  // the primitive (forward or transposed) in the layouts oneDNN prefers
  dnnl_primitive_desc_t pd = nullptr;
  if (s.transposed) {
    dnnl_deconvolution_desc_t d{};
    check(dnnl_dilated_deconvolution_forward_desc_init(
        &d, dnnl_forward_inference, dnnl_deconvolution_direct, &src_any, &w_any, nullptr, &dst_any,
        strides, dilations, pad_l, pad_r));
    if (ok) check(dnnl_primitive_desc_create(&pd, &d, nullptr, ctx.engine, nullptr));
  } else {
    dnnl_convolution_desc_t d{};
    check(dnnl_dilated_convolution_forward_desc_init(
        &d, dnnl_forward_inference, dnnl_convolution_direct, &src_any, &w_any, nullptr, &dst_any,
        strides, dilations, pad_l, pad_r));
    if (ok) check(dnnl_primitive_desc_create(&pd, &d, nullptr, ctx.engine, nullptr));
  }
  if (!ok) return false;  // no kernel for this shape: the caller's loops compute it
  own.descs.push_back(pd);
  dnnl_primitive_t conv = nullptr;
  check(dnnl_primitive_create(&conv, pd));
  if (!ok) return false;
  own.primitives.push_back(conv);
  // a memory over `data` (never written for the inputs), or one oneDNN allocates
  const auto memory = [&](const dnnl_memory_desc_t* d, void* data) {
    dnnl_memory_t m = nullptr;
    check(dnnl_memory_create(&m, d, ctx.engine, data != nullptr ? data : DNNL_MEMORY_ALLOCATE));
    if (ok) own.memories.push_back(m);
    return m;
  };
  const auto reorder = [&](dnnl_memory_t from, const dnnl_memory_desc_t* from_md, dnnl_memory_t to,
                           const dnnl_memory_desc_t* to_md) {
    dnnl_primitive_desc_t rpd = nullptr;
    check(
        dnnl_reorder_primitive_desc_create(&rpd, from_md, ctx.engine, to_md, ctx.engine, nullptr));
    if (!ok) return;
    own.descs.push_back(rpd);
    dnnl_primitive_t r = nullptr;
    check(dnnl_primitive_create(&r, rpd));
    if (!ok) return;
    own.primitives.push_back(r);
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    check(dnnl_primitive_execute(r, ctx.stream, 2, args));
  };
  // the plain arrays, reordered into the chosen layouts where they differ
  const auto blocked = [&](const dnnl_memory_desc_t* plain_md, const float* data,
                           dnnl_query_t query) {
    const dnnl_memory_desc_t* want = dnnl_primitive_desc_query_md(pd, query, 0);
    dnnl_memory_t plain = memory(plain_md, const_cast<float*>(data));
    if (!ok || dnnl_memory_desc_equal(plain_md, want) != 0) return plain;
    dnnl_memory_t m = memory(want, nullptr);
    if (ok) reorder(plain, plain_md, m, want);
    return m;
  };
  dnnl_memory_t src = blocked(&src_plain, x, dnnl_query_src_md);
  dnnl_memory_t wts = blocked(&w_plain, w, dnnl_query_weights_md);
  const dnnl_memory_desc_t* dst_md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  const bool dst_is_plain = dnnl_memory_desc_equal(&dst_plain, dst_md) != 0;
  dnnl_memory_t out = memory(&dst_plain, y);
  dnnl_memory_t dst = dst_is_plain ? out : memory(dst_md, nullptr);
  if (!ok) return false;
  const dnnl_exec_arg_t args[] = {
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, dst}};
  check(dnnl_primitive_execute(conv, ctx.stream, 3, args));
  if (ok && !dst_is_plain) reorder(dst, dst_md, out, &dst_plain);
  if (ok) check(dnnl_stream_wait(ctx.stream));
  // (not expected: a failure once y may be written leaves it zeros, for the caller's loops)
  if (!ok) std::fill(y, y + s.n * s.o * s.oh * s.ow, 0.0f);
  return ok;
}
#else
DLAVM_INLINE bool convolution(const ConvShape&, const float*, const float*, float*) {
  return false;
}
#endif

}  // namespace dlavm::host::onednn
