// The integer softmax (host/integer_ops.hpp, runtime::integer_softmax) as te stages that VTA's
// ALU computes: a block of int32 scores in the accumulator with the keys along dim 0 and the
// rows being normalized along the lanes (dim 1, whole tiles), so that the max and the sum over
// keys combine accumulator tiles lane by lane. The arithmetic is runtime::integer_softmax's,
// stage for stage:
//   max over keys; t = -s * multiplier + bias, bias = max * multiplier + 4 * 2^frac_bits a row
//   of the block (runtime::integer_exponent's t, with 4 added to z, and the multiplier's
//   factors of two taken out of frac_bits, which leaves every bit as it was);
//   z = (t >> (frac_bits - 7)) >> 7 (no first shift where frac_bits is then 7) and the
//   fraction r; v = (45 r - 22120) r + 2^22;
//   e = (v >> min(z - 8, 15)) >> 8 (runtime::integer_exp's v >> (z + 4): a z of 23 or more
//   gives 0, v < 2^23; below 8 the first shift is left, by up to 4, and the second takes it
//   back); sum over keys;
//   R = floor(127 * 2^23 / sum) by restoring division, 12 quotient bits (the ALU cannot
//   divide: compare, subtract, shift); y = (e * R + 2^22) >> 23 with R split in two 6-bit
//   halves, as ((e * R >> 8) + 2^14) >> 15.
// Every tile-by-tile multiply and shift reads its second operand from a tile whose lanes fit
// what the hardware takes from it (VTA's compute module uses the low 8 bits of a multiplier
// and the low LOG_ACC_WIDTH bits of a shift amount, the functional simulator the whole value):
// multipliers r in [0, 127] and R's halves in [0, 63] (the division adds the sum back by a
// MAX, not a multiply by the quotient bit); shift amounts in [-4, 15] (check_softmax_shifts:
// a design that reads them unsigned is refused).
// The max and the sum over a constant number of keys halve the block level by level, one ALU
// instruction per level over the entries that remain (its micro-ops write distinct entries, so
// no micro-op reads an entry the one before it wrote); over a symbolic number they are window
// reductions, one instruction per key.
// integer_softmax_stages normalizes whole blocks, every key counted; IntegerSoftmaxKernel, the
// graph strategy's kernel, runs the same stages over chunks of a block's keys, masking keys.
//
//   auto st = graph::integer_softmax_stages(scores, host::integer_exp_for(0.125), "sm");
//   // a [blocks, keys, lanes] scores: s[t].compute_at(s[res], block_axis) for each stage
//   for (const auto& t : st.alu) { s[t].set_scope(env.acc_scope); s[t].pragma(...); }
//
//   graph::IntegerSoftmaxKernel k(env, {.products = token, .keys = n, .lanes = 8,
//                                       .queries = token, .fixed = host::integer_exp_for(0.125)},
//                                 256, "sm");
//   auto s = k.schedule();
//   auto rewrite = k.skip_masked_work(s);  // the function the kernel's arguments compute
//   graph::VtaKernel declared{std::move(s), k.args(), "", 0, 0, rewrite, k.constants()};
//   vta::Program prog(env, graph::lower_kernel(declared, env, "sm"));  // run with constants()
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>
#include <dlavm/graph/strategy/sram.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/runtime/kernels.hpp>
#include <dlavm/schedule/schedule.hpp>
#include <dlavm/te/tensor.hpp>
#include <dlavm/tir/stmt.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::graph {

struct IntegerSoftmaxStages {
  te::Tensor result;            // int32 [lead..., keys, lanes]: probabilities in units of 1/127
  std::vector<te::Tensor> alu;  // every stage, in order (the ALU computes each; result last)
};

// The fixed point the stages compute with: `fixed` with the multiplier's factors of two taken
// out of its fraction bits (down to 7). t and t >> (frac_bits - 7) both halve with each, so z
// and r, and every bit after them, stay the same; where frac_bits reaches 7 the exponent needs
// no shift of t (host::integer_exp_for(0.125)'s 92 with 9 bits is 23 with 7).
inline runtime::IntegerExp fewest_fraction_bits(runtime::IntegerExp fixed) {
  while (fixed.frac_bits > 7 && fixed.multiplier % 2 == 0) {
    fixed.multiplier /= 2;
    --fixed.frac_bits;
  }
  return fixed;
}

// The stages over `scores` (int32 [lead..., keys, lanes], a stage in the accumulator): each
// block of the leading dims normalized on its own, every stage with the same leading dims (a
// kernel computes them at its block loop, so that one block's buffers are live at a time).
// Their tensors' names start with `name`. ShapeError for scores of rank below 2.
IntegerSoftmaxStages integer_softmax_stages(const te::Tensor& scores, runtime::IntegerExp fixed,
                                            const std::string& name);

// The VTA kernel of a graph integer_softmax whose keys are the rows of a BatchedMatrix value
// [B..., N, C] (packed [prod(B), N, C/BO, 1, BO]): every product and lane tile a block of N
// keys, normalized lane by lane, in chunks of `chunk` keys so that any N fits the accumulator.
// Three passes over a block's chunks, each loading them again:
//   1. the max: each chunk halved to one row, then one ALU max per chunk;
//   2. the sum of the exponentials, likewise (one ALU add per chunk);
//   3. the probabilities: the exponentials again, times the reciprocal of the sum, stored;
//      rewritten by skip_masked_work, from those pass 2 kept in the chunks the accumulator
//      holds beside the passes' buffers (kept_chunks: 27 of the 32 chunks of 64 keys in the
//      gallery's 2,048-token prefill), where pass 3 loads nothing and computes no exponential
//      (and, not in uniform tiles, pass 2 loads nothing: pass 1 loads those chunks there).
// Keys at N and after, and those after N - M + q for a causal softmax not in uniform tiles
// (below; query q: the product index modulo M, the queries the last batch dim), load as -32768,
// whose exponential is 0: a padded copy (an ALU fill and a clipped load), no mask in DRAM.
// There a causal softmax's passes 1 and 2 run over the chunks that hold a key its query sees,
// ceil((N - M + q + 1) / chunk) of them: the others add nothing to the max or the sum (a
// prefill of 2,048 tokens in chunks of 256 keys skips 7 of 16 chunk iterations); pass 3,
// rewritten by skip_masked_work, stores each other chunk from a fill of the epilogue of 0. Each
// pass fills only the last chunk its query sees (the max only where that chunk is also its
// first), and computes the exponentials there for the keys its queries see alone (in uniform
// tiles: for the N keys).
//
// Lane groups (`groups` G > 1, G x C <= BLOCK_OUT): the scores in graph/layout.hpp's
// BatchedMatrix with G lane groups, G products of the last batch dim side by side in a tile's
// lanes (8 heads: two queries a tile, every lane busy), `products` the packed products
// (prod(B[:-1]) x ceil(M / G)). A causal softmax's queries then see keys that differ by lane
// group: packed product p holds queries q0 .. q0 + G - 1, q0 = (p mod ceil(M / G)) x G, and
// query q0 + g sees N - M + q0 + g + 1 keys. The keys none of them sees load as -32768; the
// G - 1 keys only some see get -32768 added in the lanes of the groups that do not see them.
// VTA's ALU has no lane index, and a micro-op's entries are fixed (a decode step's stream is
// rewritten in place only where no micro-op reads a dim), so those rows come from DRAM (the
// kernel's constant, int32 [2 (G - 1), BATCH, BLOCK_OUT]: G - 1 rows that leave a key as it
// is, then the masks): as lowered, each pass copies the rows of the keys its chunk holds into
// a chunk buffer of zeros (a padded copy, like the scores') and adds it; skip_masked_work
// applies them to those keys' rows alone, in the chunks that hold such a key only.
//
// Uniform tiles (detail::softmax_uniform): a causal softmax of at most 16 queries M (its bound:
// a decode step's tokens) whose products are one batch's (products = ceil(M / G), so that block
// p's first query is q0 = p x G) runs every block the same: each computes all N keys, in all
// ceil(N / chunk) chunks, and no value of a block's instructions but its DRAM offsets (affine in
// p) reads p, so that a replay copies one block's instructions to the next. The keys some query
// of some block does not see are the same window for every block, N - M + 1 to N - 1; key
// N - M + 1 + j is d = j - q0 after the last that block p's first group sees, and groups 0 to
// min(d, G - 1) do not see it. Their masks come from the kernel's constant, int32 [3 (M - 1),
// BATCH, BLOCK_OUT] of the bound M: 2 (M - 1) rows that leave a key as it is, then row
// 2 (M - 1) + d for d = 0 to M - 2, so that the window of block p starts at row 2 (M - 1) - q0, a
// DRAM offset affine in p (G = 1 too, where a kernel that is not in uniform tiles has no
// constant). A masked key's score is its own minus 32768 (its exponential 0, as -32768's: the
// same bits as the host's), or its exponential times 0; a block computes up to M - 1 keys more
// than its queries see (a decode step of 16 tokens after 2,032 keys: 0.4% more cycles, and
// 0.2% for the masks). skip_masked_work loads the window's masks once a block and applies
// them in the chunks that hold its keys, a piece a chunk.
//
// Parts (`part`): the whole softmax (host::integer_softmax), or one of its two halves, each a
// kernel of two passes, so that each exponential is computed once and kept in DRAM as int8:
//   - Exp (host::integer_softmax_exp): pass 1, then pass 3 storing each exponential in units
//     of 1/127 of its row's largest;
//   - Normalize (host::integer_softmax_normalize): pass 2 summing the int8 exponentials it
//     loads, then pass 3 their probabilities. A masked key loads as 0, and the lane masks
//     multiply (rows of 0 and 1) where the other parts add -32768.
enum class IntegerSoftmaxPart : std::uint8_t { Whole, Exp, Normalize };

struct IntegerSoftmaxShape {
  ne::Expr products = 1;   // prod(B), or the packed products with lane groups: may be symbolic
  ne::Expr keys = 1;       // N: may be symbolic
  std::int64_t lanes = 1;  // C
  ne::Expr queries = 0;    // a causal softmax's M (the last batch dim); 0: not causal
  runtime::IntegerExp fixed{};
  std::int64_t groups = 1;  // G: products side by side in the lanes
  IntegerSoftmaxPart part = IntegerSoftmaxPart::Whole;
};

class IntegerSoftmaxKernel {
 public:
  // `chunk`: keys per step of a pass, a power of two of at least 2 (check_chunk). `epilogue`:
  // immediate steps (add, shift, max, min) applied to the probabilities before the int8 store;
  // ValueError for an operand step or an int32 result.
  IntegerSoftmaxKernel(const vta::Env& env, const IntegerSoftmaxShape& shape, std::int64_t chunk,
                       const std::string& name, const Epilogue& epilogue = {});
  // The scores, the masks of a causal softmax with lane groups or in uniform tiles and the
  // weight tiles where the GEMM core computes stages (by_gemm(); constants() holds them), and
  // the probabilities, int8 in the packed layout.
  std::vector<te::Tensor> args() const {
    std::vector<te::Tensor> a{data_};
    for (const auto& t : {masks_, weights_})
      if (t.defined()) a.push_back(t);
    a.push_back(res_);
    return a;
  }
  // The data of the kernel's constant parameters (VtaKernel::constants): the masks' first rows
  // leave a key as it is (0; a normalization's 1), G - 1 of them with lane groups, 2 (M - 1) in
  // uniform tiles; then the row of a key d after the first group's last seen (d from 0 to G - 2,
  // or M - 2) is -32768 in the lanes of groups 0 to min(d, G - 1) (those that do not see it), 0
  // elsewhere; a normalization's 0 there and 1 elsewhere. Then, where by_gemm(), the weight
  // tiles, int8 [T BLOCK_OUT (+ 1), BLOCK_IN]: diag(-multiplier) where the GEMM core forms t0,
  // the identity where it sums the normalization's exponentials; a tile for each constant it
  // adds (gemm_adds()), every row its weights against the input row after the tiles (127 in
  // each lane but the last, 1 there).
  std::vector<te::NDArray> constants() const;
  // Whether the GEMM core computes stages of the kernel (t0, the sum, constants added): then
  // only the function skip_masked_work rewrites takes the weight tiles (no stage reads them:
  // graph::lower_kernel lowers the schedule without them), and only that function computes
  // the softmax.
  bool by_gemm() const { return weights_.defined(); }
  // Whether the GEMM core forms t0 = -s * multiplier (detail::softmax_scores_by_gemm; not the
  // normalization's, which has no exponent).
  bool scores_by_gemm() const { return scores_by_gemm_; }
  // Whether the GEMM core sums the normalization's exponentials (detail::softmax_sums_by_gemm).
  bool sums_by_gemm() const { return sums_by_gemm_; }
  // The constants the GEMM core adds where the stages add them to a key's value (the
  // quadratic's, the roundings': detail::softmax_gemm_adds), in the order of their tiles.
  const std::vector<std::int64_t>& gemm_adds() const { return gemm_adds_; }
  te::Schedule schedule() const;
  // For the function lowered from schedule() `s`, the work on keys no query sees skipped,
  // which te stages cannot say:
  //   - each pass fills a chunk with -32768 before its load only where the chunk may hold a key
  //     the block's query does not see (the last chunk it sees); those before it are loaded
  //     whole. The max not even there where the block saw a chunk before: its halving left that
  //     chunk's maxima, of keys the block sees, in the rows the last chunk does not load (the
  //     pass's buffers live across its chunks);
  //   - of a causal softmax, in that last chunk, the exponentials of passes 2 and 3 (each ALU
  //     pass and reset from the load to the sum's halving, or to the store) run over the keys
  //     the block sees alone, min(chunk, keys seen - c * chunk) rows; the buffer they end in is
  //     filled beforehand with what an unseen key gives there (the sum's 0, pass 3's epilogue
  //     of 0), and the load's fill, then read by no one, is dropped. Not where that constant is
  //     no ALU immediate;
  //   - pass 3 of a causal softmax, over a chunk its query sees none of, stores the epilogue of
  //     0 (each exponential there is 0) in place of the exponentials, the stored buffer filled
  //     with it at the first such chunk of a block only; not where that constant is no ALU
  //     immediate;
  //   - a causal softmax not in uniform tiles takes its blocks in pairs, p and P - 1 - p
  //     (detail::pair_blocks): a block stores all N keys but computes only the chunks it sees,
  //     and the first blocks, in order, would leave the store module behind and the compute
  //     module waiting for it (the gallery's 2,048-token prefill: the exponentials' compute
  //     module waited 0.79 M of their 41.56 M cycles; in pairs p and p + ceil(P / 2) 0.36 M of
  //     41.13 M; in these pairs, where a block's stores of the keys it does not see are
  //     followed by a block that sees about as many, 0.31 M of 35.85 M, where the other pairs
  //     left 0.36 M of 35.90 M);
  //   - with lane groups, each pass applies the masks only in the chunks that hold a key only
  //     some of a block's queries see (the others' rows are zero), and there only to the rows
  //     of those keys: the constant loaded whole, one ALU instruction whose outer level's two
  //     iterations apply its rows that change nothing at row 0 and the masks at those keys;
  //   - in uniform tiles, likewise in the chunks that hold keys of the window (a piece of it
  //     each), the window's masks and as many rows that change nothing loaded once a block,
  //     before its passes, by one LOAD of two rows from a DRAM row affine in p (2 (M - 1)
  //     accumulator rows; where the keys fit one chunk, each pass loads them, where its chunk
  //     of mask rows holds 2 (M - 1), else applies the lowering's padded copy of them);
  //   - the whole softmax loads each score and computes each exponential once in a block's
  //     first kept_chunks() chunks: pass 1 loads them into a buffer of those chunks, where it
  //     masks them (its max then from running rows, a MAX a chunk over the keys it loads,
  //     halved after the loop), pass 2 computes their exponentials there, with no load or
  //     masks, each chunk's added to running rows of the sum that are halved after the loop
  //     (in uniform tiles, whose replay copies a chunk's iterations, and where the kept rows
  //     take more than one reset's loop, pass 2 loads them again, computes them where the other
  //     chunks do and copies them there, an ADD a key, before its sum adds them up in place),
  //     and pass 3 computes the probabilities there and stores them, with no load, masks or
  //     exponential (36 of its ALU cycles a key at the gallery's scale). It does so before its
  //     chunk loop, for the kept chunks the block sees, in spans of as many chunks as its chunk
  //     buffers' entries hold of those these stages use (a span's buffers take their place):
  //     each stage one kernel over a span's rows and a STORE a span (where pass 1 keeps the
  //     scores; else one STORE after the spans), where a chunk took one of each (the gallery's
  //     layer: 26 kept chunks of 64 keys in 6 spans of 5). Where the keys fit one
  //     chunk the lowering has no chunk loop, and pass 3 computes them again. The halves (not in
  //     uniform tiles) keep their input likewise: the exponentials' pass 1 loads their scores
  //     into the kept rows, and the normalization's pass 2 its int8 exponentials (its sum from
  //     running rows, an ADD a chunk over the keys it loads, reset before the loop and halved
  //     after it), and pass 3 computes from there;
  //   - the normalization's pass 3 copies the reciprocal beside its chunk by a MAX (each
  //     probability it leaves there is at most the reciprocal), its buffer reset once a block;
  //     not in uniform tiles, its chunks compute and store in that buffer and a second of its
  //     size by turns, so that the STORE of a chunk overlaps the ALU passes of the next; a
  //     causal one resets a buffer once a block only where its first chunk is not the last the
  //     block sees (which resets it whole), fills the buffer its last seen chunk did not store
  //     from for the chunks it does not see, and allocates both around the block's passes
  //     (detail::stored_at_block_level: no buffer of pass 2 in their entries, whose first write
  //     would wait for the block before's STOREs; the gallery's 2,048-token prefill: the
  //     normalization 12.970 -> 12.711 M cycles);
  //   - the exponentials' copies of z in passes 2 and 3 (a reset and an ADD each a chunk): z
  //     taken from u by a MAX, its buffer reset once before the chunk loop. What a chunk's chain
  //     leaves in it (a shift amount, at most 15) is below u (at least 128);
  //   - with no epilogue, the exponent's z_down = -128 z as a MIN of z_down by -128 and a
  //     multiply by z, in place of a reset, a copy of z and a multiply by -128: u clipped first
  //     by a MIN (a key past it has the exponential 0 either way), so that z fits the
  //     multiplier's 8 bits: the exponentials' (IntegerSoftmaxPart::Exp) to 2^11 - 1, z <= 15,
  //     so that the shift needs no MIN by 15; the whole softmax's, in passes 2 and 3, to
  //     24 x 2^7 - 1, z <= 23 (v >> 23 is 0), so that its first shift amount, z - 8, needs no
  //     MIN by 15; z_down reset once a block, before the chunk loop (every value a chunk leaves
  //     in it is at least -128);
  //   - the exponentials' (IntegerSoftmaxPart::Exp) z and z_down reset once before the blocks,
  //     not once a block, and allocated around them: what a block's chains leave in them is
  //     what the next block's first chunk needs (z below u, z_down at least -128), as within a
  //     block. The chunks a block does not see are filled with 0 and stored from z's buffer
  //     (which may hold the reset's 0), not from the one the last seen chunk stored from, whose
  //     STORE the fill waited for (the gallery's 2,048-token prefill: the exponentials 35.847
  //     -> 35.567 M cycles). Not in the whole softmax (its six such buffers, live through all three
  //     passes, would take room from the kept chunks), nor the normalization (what its copy of the
  //     reciprocal leaves is bounded by the block's own reciprocal, not the next block's);
  //   - where scores_by_gemm() (not in uniform tiles), t0 = -s * multiplier by the GEMM core
  //     (detail::scores_by_gemm): each load of the scores into the accumulator (ACC_8BIT,
  //     through the compute module's port) a load of the same rows into the input buffer (on
  //     the load module) and a reset and a GEMM of them by the weight tile, so that the chain's
  //     multiply goes (2 cycles a key in place of 4); pass 1 the min of t0 where it was the max
  //     of the scores, a masked key's t0 32,767 (a fill) or 32,768 more than its own (the
  //     masks, negated where loaded), whose exponential is 0 either way (the gallery's
  //     2,048-token prefill: the exponentials 41.13 -> 38.80 M cycles, the whole softmax
  //     73.29 -> 70.63 M);
  //   - where sums_by_gemm() (not in uniform tiles, a sum in running rows), the
  //     normalization's sum by the GEMM core (detail::sums_by_gemm): pass 2 loads each chunk
  //     into the input buffer too (on the load module), and a GEMM of its rows by the identity
  //     adds them to the running rows where an ALU ADD did (1 cycle a key in place of 2); a
  //     chunk past the kept ones loads into the accumulator only where the lane masks apply to
  //     its keys, whose ADD of the masked rows stays (the gallery's 2,048-token prefill: the
  //     normalization 15.62 -> 14.64 M cycles);
  //   - where gemm_adds() (not in uniform tiles), each ALU ADD of one of those constants (the
  //     quadratic's -c1, the exponential's and the probability's roundings) a GEMM of an input
  //     row by a tile whose rows add it (detail::adds_by_gemm; the tiles and the row loaded
  //     once): 1 cycle a key where the ALU's immediate took 2 (the exponentials 38.80 -> 36.70
  //     M cycles, the normalization 14.64 -> 13.59 M, the whole softmax 70.63 -> 68.47 M);
  //   - a causal softmax not in uniform tiles computes the rows every block computes from
  //     constants alone (the exponent's z_offset and top: a reset and up to three ALU
  //     immediates each) once, before the blocks, allocated around them
  //     (detail::constant_rows_once; the gallery's 2,048-token prefill: the exponentials
  //     35.960 -> 35.904 M cycles, the normalization 13.272 -> 13.259 M, the whole softmax
  //     68.214 -> 68.173 M). Not in uniform tiles: a decode step's few blocks would gain little,
  //     and its stream, which the firmware replays, stays as it was;
  // A chunk loop not as the lowering writes it is left as it is (its mask rows then copied and
  // added in every chunk: the same results).
  std::function<tir::PrimFunc(const tir::PrimFunc&)> skip_masked_work(te::Schedule& s) const;
  // The chunks of a block whose exponentials the whole softmax computes once, or whose input
  // the halves load once (not in uniform tiles; skip_masked_work): as many as the accumulator
  // holds beside the passes' buffers, at most the block's chunks; 0 where the keys fit one
  // chunk.
  std::int64_t kept_chunks() const;

 private:
  tir::PrimFunc skip_masked(const tir::PrimFunc& f, const ne::Var& product,
                            const std::vector<ne::Var>& chunks) const;
  te::NDArray mask_data() const;  // constants()'s masks

  vta::Env env_;
  IntegerSoftmaxShape shape_;
  Epilogue epilogue_;
  std::int64_t chunk_;
  te::Tensor data_, masks_, res_;
  // where the GEMM core computes stages: the weight tiles and the input row (constants())
  te::Tensor weights_;
  bool scores_by_gemm_ = false, sums_by_gemm_ = false;
  std::vector<std::int64_t> gemm_adds_;
  // the stages of pass 1 and 2 computed per chunk (the load first, the chunk's max or sum
  // last), the rows of a block (the max, the sum, the reciprocal; with them the kernel's
  // constant rows, of no leading dim, computed at the schedule's root) and pass 3 per chunk; a
  // part's absent pass has no stages and no total
  std::vector<te::Tensor> max_chunk_, sum_chunk_, rows_, out_chunk_;
  std::vector<te::Tensor> mask_loads_;  // with masks: each pass's copy of the mask rows
  te::Tensor max_total_, sum_total_;    // the block's max and sum, reductions over its chunks
};

// Why the kernel cannot apply `epilogue`, or nullopt: an operand step (a bias, a residual) or
// an int32 result.
std::optional<std::string> check_softmax_epilogue(const Epilogue& epilogue);
// Why the design of `env` cannot compute `part`'s shifts, or nothing: the whole softmax's
// exponential shifts left where the exponent is below 8, which a design that reads a shift
// amount's low bits unsigned (Chisel's) would take for a long shift right.
std::optional<std::string> check_softmax_shifts(const vta::Env& env, IntegerSoftmaxPart part);
// Why `chunk` cannot run `shape`, or nullopt: not a power of two of at least 2, or a pass's
// buffers that do not fit the accumulator (footprint).
std::optional<std::string> check_chunk(const vta::Env& env, const IntegerSoftmaxShape& shape,
                                       std::int64_t chunk);
// The accumulator entries the kernel allocates: the rows of a block, the largest pass's
// buffers for one chunk (the normalization's stored buffer twice where it has a chunk loop, not
// in uniform tiles; with masks, the 2 (G - 1) mask rows a chunk applies with lane groups, a
// chunk of mask rows in uniform tiles), a block's masks in uniform tiles (2 (M - 1) rows), and
// the kept chunks' rows (as many chunks as the rest leaves room for;
// IntegerSoftmaxKernel::kept_chunks). Exact where the keys' maximum is at least a chunk (the
// lowering then allocates these entries); above it where fewer keys leave the chunk's buffers
// smaller, or where a kernel with lane groups, not in uniform tiles, has one chunk (its mask
// rows 2 (G - 1), not a chunk's). Where the GEMM core forms t0 or the normalization's sum, a
// chunk's rows of the input buffer and one weight tile; where it adds the part's constants,
// the input row and a tile a constant more.
SramFootprint footprint(const vta::Env& env, const IntegerSoftmaxShape& shape, std::int64_t chunk);
// One knob, "keys": the chunk, the powers of two from 2 to the key count's maximum (rounded up).
// The estimate is cycles per key a block's queries see, per key of the chunks that hold them
// (the max, the fills and the sums' halvings compute those whole) and per chunk iteration, less
// the cycles the whole softmax saves per key seen and per chunk iteration in its kept chunks
// (fitted to the cycle model): all keys in whole chunks where the softmax is not causal; for a
// causal one, averaged over runs of the most queries after 16 counts of keys before them
// (smaller chunks pad fewer masked keys and keep more chunks, larger ones have fewer
// iterations), every block of a run all its keys in uniform tiles. Of the chunks within 2% of the
// least, the largest is estimated at the least (fewer instructions for a decode step to rewrite).
KnobSpace knob_space(const vta::Env& env, const IntegerSoftmaxShape& shape);
// DRAM bytes the kernel moves: the scores three times, the probabilities once (a part: its
// input twice, its result once).
ne::Expr softmax_traffic(const vta::Env& env, const IntegerSoftmaxShape& shape);

// The least work a stream does on VTA's compute module to run `part`'s arithmetic over a block
// of `keys` keys (at least 1) of one lane tile: each of the part's stages computed once a key
// (every exponential once), a stage one ALU micro-op a key (the ALU has no fused operation:
// t = -s * multiplier + bias is two), a reduction over k keys k - 1 micro-ops, the block's rows
// once (a micro-op a row; the kernel's constant rows, computed once before the blocks, none); and
// the part's int8 input loaded into the accumulator once, which VTA loads through its compute
// module (BATCH x BLOCK_OUT bytes a key). Where the GEMM core may form t0 = -s * multiplier
// (detail::softmax_scores_by_gemm), that stage is a GEMM micro-op a key (its rows started by no
// reset: a fill of the bias could do it) and the input loads through the load module, no
// accumulator load; where it may sum the normalization's exponentials
// (detail::softmax_sums_by_gemm, of a least chunk of 4 keys: more keys than that), the sum is a
// GEMM micro-op a key, the input still loaded into the accumulator once (for the
// probabilities); where it may add the part's constants (detail::softmax_adds_by_gemm), a
// stage adding one to a key's value is a GEMM micro-op a key. It counts no copy but the one the
// stages write (the quadratic's r_copy), no fill, mask or padded key and no instruction's overhead:
// a lower bound of every kernel's work (tests/graph), whose distance from it is what chunks, masks
// and the accumulator's size cost. At the cycle model's 2 cycles an ALU micro-op, 1 a GEMM micro-op
// and 8 bytes a cycle it is the floor docs/performance.md holds the LLM layer's integer prefill to.
struct SoftmaxWork {
  std::int64_t alu_uops = 0;
  std::int64_t acc_load_bytes = 0;
  std::int64_t gemm_uops = 0;
};
SoftmaxWork softmax_floor(const vta::Env& env, IntegerSoftmaxPart part, runtime::IntegerExp fixed,
                          std::int64_t keys);

namespace detail {

// The suffix of the running rows' buffers (IntegerSoftmaxKernel::skip_masked: a chunk's rows
// that each chunk's keys are maxed or added into, halved once after the chunk loop), by which
// the rewrite that narrows them (narrow_running_rows) finds them.
inline constexpr std::string_view kRunningRows = ".rows";

// The rows that rewrite leaves of running rows: key k of a chunk goes into row k mod 16, so
// that a kernel writes a row every 16th micro-op, never in two micro-ops in a row.
inline constexpr std::int64_t kNarrowRows = 16;

// The input row the GEMM core adds constants against (IntegerSoftmaxKernel::gemm_adds):
// kAddUnit in every lane but the last, 1 there; a row of weights w adds
// kAddUnit (w[0] + ... + w[L - 2]) + w[L - 1].
inline constexpr std::int64_t kAddUnit = 127;
// The `lanes` weights of a row that adds `c` against that row: c = kAddUnit q + r, r in
// [0, kAddUnit) the last, q spread over the others from the first, each in [-128, 127]
// (|c| up to about 2^18 with 16 lanes); nullopt where they cannot hold q.
std::optional<std::vector<std::int64_t>> gemm_add_weights(std::int64_t c, std::int64_t lanes);

}  // namespace detail

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/strategy/integer_softmax-inl.hpp>
#endif
