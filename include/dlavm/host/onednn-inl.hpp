// Definitions for host/onednn.hpp. Every call describes the convolution afresh: oneDNN's
// primitive cache returns the kernel it generated for the same description before.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/host/onednn.hpp>

#ifdef DLAVM_WITH_ONEDNN
#include <dnnl.hpp>
#endif

namespace dlavm::host::onednn {

#ifdef DLAVM_WITH_ONEDNN
namespace detail {

struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

// One per thread: a stream is not to be shared between threads.
inline Context& context() {
  thread_local Context c;
  return c;
}

}  // namespace detail

DLAVM_INLINE bool convolution(const ConvShape& s, const float* x, const float* w, float* y) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const memory::data_type f32 = memory::data_type::f32;
  try {
    auto& ctx = detail::context();
    const memory::dims src_dims{s.n, s.c, s.h, s.w}, dst_dims{s.n, s.o, s.oh, s.ow};
    const memory::dims strides{s.strides[0], s.strides[1]};
    const memory::dims dilations{s.dilations[0] - 1, s.dilations[1] - 1};  // oneDNN counts gaps
    const memory::dims pad_l{s.padding[0], s.padding[1]}, pad_r{s.padding[2], s.padding[3]};
    // the weights as they lie in memory: forward [G, O/G, C/G, KH, KW]; transposed
    // [G, C/G, O/G, KH, KW], which oneDNN's (g, o, i) dims call giohw
    const std::int64_t g = s.groups;
    const memory::desc w_plain =
        g == 1 ? memory::desc({s.o, s.c, s.kh, s.kw}, f32, s.transposed ? tag::iohw : tag::oihw)
               : memory::desc({g, s.o / g, s.c / g, s.kh, s.kw}, f32,
                              s.transposed ? tag::giohw : tag::goihw);
    const memory::desc w_any = g == 1
                                   ? memory::desc({s.o, s.c, s.kh, s.kw}, f32, tag::any)
                                   : memory::desc({g, s.o / g, s.c / g, s.kh, s.kw}, f32, tag::any);
    const memory::desc src_any(src_dims, f32, tag::any), dst_any(dst_dims, f32, tag::any);
    const auto inference = dnnl::prop_kind::forward_inference;
    dnnl::primitive conv;
    memory::desc src_desc, w_desc, dst_desc;
    // the primitive (forward or transposed) and the layouts it chose
    const auto describe = [&]<class Primitive>(Primitive, dnnl::algorithm algorithm) {
      const typename Primitive::primitive_desc pd(
          typename Primitive::desc(inference, algorithm, src_any, w_any, dst_any, strides,
                                   dilations, pad_l, pad_r),
          ctx.engine);
      conv = Primitive(pd);
      src_desc = pd.src_desc();
      w_desc = pd.weights_desc();
      dst_desc = pd.dst_desc();
    };
    if (s.transposed)
      describe(dnnl::deconvolution_forward(), dnnl::algorithm::deconvolution_direct);
    else
      describe(dnnl::convolution_forward(), dnnl::algorithm::convolution_direct);
    // oneDNN reads the plain arrays through the reorders and never writes them
    memory src_plain({src_dims, f32, tag::nchw}, ctx.engine, const_cast<float*>(x));
    memory w_mem(w_plain, ctx.engine, const_cast<float*>(w));
    memory dst_plain({dst_dims, f32, tag::nchw}, ctx.engine, y);
    const auto blocked = [&](memory& plain, const memory::desc& want) {
      if (plain.get_desc() == want) return plain;
      memory m(want, ctx.engine);
      dnnl::reorder(plain, m).execute(ctx.stream, plain, m);
      return m;
    };
    memory src = blocked(src_plain, src_desc), wts = blocked(w_mem, w_desc);
    const bool dst_is_plain = dst_desc == dst_plain.get_desc();
    memory dst = dst_is_plain ? dst_plain : memory(dst_desc, ctx.engine);
    conv.execute(ctx.stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, dst}});
    if (!dst_is_plain) dnnl::reorder(dst, dst_plain).execute(ctx.stream, dst, dst_plain);
    ctx.stream.wait();
    return true;
  } catch (const dnnl::error&) {
    return false;  // no kernel for this shape: the caller's loops compute it
  }
}
#else
DLAVM_INLINE bool convolution(const ConvShape&, const float*, const float*, float*) {
  return false;
}
#endif

}  // namespace dlavm::host::onednn
