// Definitions for dlavm/vta/layout.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/layout.hpp>

namespace dlavm::vta::detail {

DLAVM_INLINE std::int64_t tiles(std::int64_t n, std::int64_t t) { return (n + t - 1) / t; }

DLAVM_INLINE void require_rank(const te::NDArray& a, std::size_t rank, const char* what,
                               const char* layout) {
  if (a.ndim() != rank)
    raise<ShapeError>("{}: expected a {}-dimensional {} array, got shape [{}]", what, rank, layout,
                      fmt::join(a.shape(), ", "));
}

DLAVM_INLINE te::NDArray pack4(const te::NDArray& in, std::int64_t ta, std::int64_t tb) {
  const auto& s = in.shape();
  te::NDArray out(in.dtype(), {tiles(s[0], ta), tiles(s[1], tb), s[2], s[3], ta, tb});
  auto dst = out.data();
  const auto src = in.data();
  for_each_tiled(s[0], s[1], s[2], s[3], ta, tb, tiles(s[1], tb),
                 [&](std::size_t plain, std::size_t packed) { dst[packed] = src[plain]; });
  return out;
}

DLAVM_INLINE te::NDArray unpack4(const te::NDArray& in, std::int64_t a, std::int64_t b) {
  const auto& s = in.shape();
  te::NDArray out(in.dtype(), {a, b, s[2], s[3]});
  auto dst = out.data();
  const auto src = in.data();
  for_each_tiled(a, b, s[2], s[3], s[4], s[5], s[1],
                 [&](std::size_t plain, std::size_t packed) { dst[plain] = src[packed]; });
  return out;
}

}  // namespace dlavm::vta::detail

namespace dlavm::vta {

DLAVM_INLINE te::NDArray pack_tiled(const te::NDArray& abhw, std::int64_t ta, std::int64_t tb) {
  detail::require_rank(abhw, 4, "pack_tiled", "[A, B, H, W]");
  if (ta < 1 || tb < 1) raise<ShapeError>("pack_tiled: tiles of {} x {} elements", ta, tb);
  return detail::pack4(abhw, ta, tb);
}

DLAVM_INLINE te::NDArray unpack_tiled(const te::NDArray& packed, std::int64_t a, std::int64_t b) {
  detail::require_rank(packed, 6, "unpack_tiled", "packed [A/ta, B/tb, H, W, ta, tb]");
  const auto& s = packed.shape();
  if (a < 1 || b < 1 || a > s[0] * s[4] || b > s[1] * s[5])
    raise<ShapeError>("unpack_tiled: {} x {} asked of a packed array holding {} x {}", a, b,
                      s[0] * s[4], s[1] * s[5]);
  return detail::unpack4(packed, a, b);
}

DLAVM_INLINE te::NDArray pack_activation(const te::NDArray& nchw, const Env& env) {
  detail::require_rank(nchw, 4, "pack_activation", "NCHW");
  return detail::pack4(nchw, env.batch, env.block_in);
}

DLAVM_INLINE te::NDArray unpack_activation(const te::NDArray& packed, std::int64_t n,
                                           std::int64_t c) {
  detail::require_rank(packed, 6, "unpack_activation", "packed [N/B, C/BO, H, W, B, BO]");
  const auto& s = packed.shape();
  if (n < 1 || c < 1 || n > s[0] * s[4] || c > s[1] * s[5])
    raise<ShapeError>(
        "unpack_activation: {} images of {} channels asked of a packed array holding {} x {}", n, c,
        s[0] * s[4], s[1] * s[5]);
  return detail::unpack4(packed, n, c);
}

DLAVM_INLINE te::NDArray pack_weight(const te::NDArray& oihw, const Env& env) {
  detail::require_rank(oihw, 4, "pack_weight", "OIHW");
  return detail::pack4(oihw, env.block_out, env.block_in);
}

}  // namespace dlavm::vta

namespace dlavm::vta::detail {

DLAVM_INLINE te::NDArray pack_rows(const te::NDArray& rc, std::int64_t tr, std::int64_t tc,
                                   const char* what, const char* layout) {
  require_rank(rc, 2, what, layout);
  te::NDArray as4(rc.dtype(), {rc.shape()[0], rc.shape()[1], 1, 1});
  std::copy(rc.data().begin(), rc.data().end(), as4.data().begin());
  const auto p = pack4(as4, tr, tc);
  te::NDArray out(rc.dtype(), {p.shape()[0], p.shape()[1], p.shape()[4], p.shape()[5]});
  std::copy(p.data().begin(), p.data().end(), out.data().begin());
  return out;
}

}  // namespace dlavm::vta::detail

namespace dlavm::vta {

DLAVM_INLINE te::NDArray pack_matrix(const te::NDArray& mk, const Env& env) {
  return detail::pack_rows(mk, env.batch, env.block_in, "pack_matrix", "[M, K]");
}

DLAVM_INLINE te::NDArray pack_matrix_weight(const te::NDArray& nk, const Env& env) {
  return detail::pack_rows(nk, env.block_out, env.block_in, "pack_matrix_weight", "[N, K]");
}

DLAVM_INLINE te::NDArray unpack_matrix(const te::NDArray& packed, std::int64_t m, std::int64_t n) {
  detail::require_rank(packed, 4, "unpack_matrix", "packed [M/B, N/BO, B, BO]");
  const auto& s = packed.shape();
  if (m < 1 || n < 1 || m > s[0] * s[2] || n > s[1] * s[3])
    raise<ShapeError>("unpack_matrix: a {} x {} matrix asked of a packed array holding {} x {}", m,
                      n, s[0] * s[2], s[1] * s[3]);
  te::NDArray as6(packed.dtype(), {s[0], s[1], 1, 1, s[2], s[3]});
  std::copy(packed.data().begin(), packed.data().end(), as6.data().begin());
  const auto u = detail::unpack4(as6, m, n);
  te::NDArray out(packed.dtype(), {m, n});
  std::copy(u.data().begin(), u.data().end(), out.data().begin());
  return out;
}

}  // namespace dlavm::vta
