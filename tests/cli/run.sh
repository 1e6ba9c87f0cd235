#!/usr/bin/env bash
# The dlavm tool end to end (tests/CMakeLists.txt: the cli test): every subcommand on an ONNX
# model that write_cli_model wrote, the run's output against the reference executor's, and bad
# input (a missing file, wrong dims, a wrong array shape or dtype, an unknown subcommand), each
# with exit status 2 and a message naming what is wrong.
#   run.sh DLAVM WRITE_CLI_MODEL WORKDIR
set -uo pipefail
dlavm=$1 writer=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
failed=0
output=$("$writer" "$dir") || { echo "FAIL write_cli_model"; exit 1; }
model=$dir/model.onnx

# expect STATUS TEXT -- ARGS: dlavm's exit status is STATUS and its output holds TEXT
expect() {
  local status=$1 text=$2
  shift 3
  local got
  got=$("$dlavm" "$@" 2>&1)
  local s=$?
  if [[ $s -ne $status || $got != *"$text"* ]]; then
    echo "FAIL dlavm $*: status $s (want $status), output:"
    echo "$got" | head -20
    failed=1
  else
    echo "ok   dlavm $* ($s)"
  fi
}

expect 0 "Subcommands:" -- --help
expect 0 "dlavm 0.1.0" -- --version
expect 0 "--input" -- run --help
expect 0 "multiply-accumulates on VTA: 100.0%" -- inspect "$model" --dims batch=1..4 \
  --dot "$dir/model.dot" --svg "$dir/model.svg"
grep -q "digraph" "$dir/model.dot" || { echo "FAIL --dot wrote no DOT"; failed=1; }
grep -q "<svg" "$dir/model.svg" || { echo "FAIL --svg wrote no SVG"; failed=1; }
expect 0 "VTA cycles" -- run "$model" --dims batch=1..4 --input "image=$dir/image.npy" \
  --output "$dir/out" --dump "$dir/dump"
# a dump per VTA step: its manifest, stream and DRAM images
steps=$(ls -d "$dir"/dump/step*/ 2>/dev/null | wc -l)
if [ "$steps" -lt 1 ] || ! ls "$dir"/dump/step*/manifest.json > /dev/null 2>&1 ||
  ! ls "$dir"/dump/step*/insn.bin > /dev/null 2>&1; then
  echo "FAIL --dump wrote no step dumps ($steps)"
  failed=1
fi
if ! cmp -s "$dir/out/$output.npy" "$dir/want.npy"; then
  echo "FAIL the run's $output.npy differs from the reference executor's"
  failed=1
fi
expect 0 "softmax" -- inspect mlp
# built for a board's design (vta::preset, or a vta_config.json naming it): the same outputs
expect 0 "VTA cycles" -- run "$model" --dims batch=1..4 --input "image=$dir/image.npy" \
  --preset pynq --output "$dir/out_pynq"
cmp -s "$dir/out_pynq/$output.npy" "$dir/want.npy" || { echo "FAIL --preset pynq output"; failed=1; }
cat > "$dir/de10.json" << 'JSON'
{"TARGET": "de10nano", "HW_VER": "0.0.2", "LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3,
 "LOG_ACC_WIDTH": 5, "LOG_BATCH": 0, "LOG_BLOCK": 4, "LOG_UOP_BUFF_SIZE": 13,
 "LOG_INP_BUFF_SIZE": 15, "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 17,
 "VARIANT": "chisel"}
JSON
expect 0 "VTA cycles" -- run "$model" --dims batch=1..4 --input "image=$dir/image.npy" \
  --vta-config "$dir/de10.json" --output "$dir/out_de10"
cmp -s "$dir/out_de10/$output.npy" "$dir/want.npy" || { echo "FAIL --vta-config output"; failed=1; }
expect 0 "static streams" -- compile resnet18 --image 32 --preset de10nano -o "$dir/fw_de10"
expect 0 "of the layers' multiply-accumulates on VTA" -- quantize "$dir/float.onnx" \
  --dims batch=1..4 --calib "$dir/calib" -o "$dir/q_pynq.onnx" --preset pynq
expect 0 "of the layers' multiply-accumulates on VTA" -- quantize "$dir/float.onnx" \
  --dims batch=1..4 --calib "$dir/calib" -o "$dir/q.onnx" --report "$dir/report.svg"
grep -q "<svg" "$dir/report.svg" || { echo "FAIL --report wrote no SVG"; failed=1; }
expect 0 "VTA cycles" -- run "$dir/q.onnx" --dims batch=1..4 --input "image=$dir/image.npy"
expect 0 "static streams" -- compile "$model" --dims batch=1..4 -o "$dir/fw" --ns cnn
[[ -f $dir/fw/cnn.hpp && -f $dir/fw/cnn.weights.bin ]] || {
  echo "FAIL compile wrote no cnn.hpp or cnn.weights.bin"
  failed=1
}
# the header as firmware compiles it (the rescale of a QDQ layer has its firmware kernel), its
# byte sizes functions of the batch: a float32 image of 3x8x8 in, 16 float32 features out
include=$(cd "$(dirname "$0")/../../include" && pwd)
cat >"$dir/fw/sizes.cpp" <<'CPP'
#include "cnn.hpp"
static_assert(cnn::input_image_bytes(2) == 2 * 3 * 8 * 8 * 4);
static_assert(cnn::output_0_bytes(3) == 3 * 16 * 4);
CPP
if ! "${CXX:-c++}" -std=c++17 -fno-exceptions -fno-rtti -fsyntax-only -I"$include" \
     "$dir/fw/sizes.cpp" 2>"$dir/fw/cxx.log"; then
  echo "FAIL the emitted header does not compile as firmware:"
  head -20 "$dir/fw/cxx.log"
  failed=1
fi

expect 0 "candidates evaluated" -- tune "$model" --dims batch=1..4 --log "$dir/model.log" \
  --top 2 --threads 1
[[ -s $dir/model.log ]] || { echo "FAIL tune wrote no log"; failed=1; }
expect 0 "candidates evaluated" -- tune "$model" --dims batch=1..4 --log "$dir/model.log" \
  --top 3 --threads 1 --resume
# the knob spaces, a second log, the two merged and the best schedules of each
expect 0 '"workloads"' -- tune-space "$model" --dims batch=1..4
"$dlavm" tune-space "$model" --dims batch=1..4 >"$dir/spaces.json" 2>/dev/null
expect 0 "candidates evaluated" -- tune "$model" --dims batch=1..4 --log "$dir/second.log" \
  --top 1 --threads 1 --config "$dir/spaces.json"
expect 0 "into $dir/merged.log" -- tune-merge "$dir/merged.log" "$dir/model.log" "$dir/second.log"
expect 0 " cycles  " -- tune-best "$dir/merged.log"
# the best of the merged logs, whichever order they are merged in
"$dlavm" tune-merge "$dir/merged2.log" "$dir/second.log" "$dir/model.log" >/dev/null
if ! diff <("$dlavm" tune-best "$dir/merged.log") <("$dlavm" tune-best "$dir/merged2.log"); then
  echo "FAIL tune-best depends on the order of the merged logs"
  failed=1
fi
# a log of two VTA designs: each one's best, named, not one chosen across them
expect 0 "candidates evaluated" -- tune "$model" --dims batch=1..4 --log "$dir/pynq.log" \
  --top 1 --threads 1 --preset pynq
cat "$dir/model.log" "$dir/pynq.log" >"$dir/mixed.log"
expect 0 "target 2 of 2: 'pynq', tiles 1x16x16" -- tune-best "$dir/mixed.log"
expect 0 "target 1 of 2: 'sim'" -- tune-best "$dir/mixed.log"
expect 0 "workloads" -- tune-space resnet18 --image 32
# the log's schedules in run and compile: every kernel tuned, the same outputs
expect 0 "3 of 3 VTA kernels take the schedule of $dir/merged.log" -- run "$model" \
  --dims batch=1..4 --input "image=$dir/image.npy" --output "$dir/out_tuned" \
  --tune-log "$dir/merged.log"
if ! cmp -s "$dir/out_tuned/$output.npy" "$dir/want.npy"; then
  echo "FAIL the tuned run's $output.npy differs from the reference executor's"
  failed=1
fi
expect 0 "static streams" -- compile "$model" --dims batch=1..4 -o "$dir/fw_tuned" --ns cnn \
  --tune-log "$dir/merged.log"
expect 2 "--tune-log: '$dir/none.log': no such log" -- compile "$model" --dims batch=1..4 \
  -o "$dir/fw_none" --tune-log "$dir/none.log"

# bad input: status 2, the file, the dim, the input named
expect 2 "holds records already: --resume continues it" -- tune "$model" --dims batch=1..4 \
  --log "$dir/model.log"
expect 2 "shard '3/2'" -- tune mlp --log "$dir/mlp.log" --shard 3/2
expect 2 "'$dir/none.onnx': no such file" -- inspect "$dir/none.onnx"
expect 2 "--dims batch: 0..4 is no range" -- inspect "$model" --dims batch=0..4
expect 2 "the range is MIN..MAX" -- inspect "$model" --dims batch=4
expect 2 "input %image is float32[2, 3, 4, 4], expected float32[2, 3, 8, 8]" -- \
  run "$model" --dims batch=1..4 --input "image=$dir/image_small.npy"
expect 2 "input %image is int8[2, 3, 8, 8], expected float32[2, 3, 8, 8]" -- \
  run "$model" --dims batch=1..4 --input "image=$dir/image_int8.npy"
expect 2 "--input image: '$dir/nothing.npy': no such file" -- \
  run "$model" --dims batch=1..4 --input "image=$dir/nothing.npy"
expect 2 "--input image: $model: not a .npy file" -- \
  run "$model" --dims batch=1..4 --input "image=$model"
expect 2 "'photo' is not an input" -- \
  run "$model" --dims batch=1..4 --input "photo=$dir/image.npy"
expect 2 "symbolic dim 'batch' = 9 is outside its range [1, 4]" -- \
  run "$model" --dims batch=1..4 --input "image=$dir/image.npy" --bind batch=9
expect 2 "calibration sample 0: " -- quantize "$dir/float.onnx" --dims batch=1..4 \
  --calib "$dir/calib_bad" -o "$dir/bad.onnx"
expect 2 "--calib: '$dir/none' is no directory" -- quantize "$dir/float.onnx" \
  --dims batch=1..4 --calib "$dir/none" -o "$dir/bad.onnx"
expect 2 "unknown subcommand 'frob' (inspect, run, quantize, tune, tune-space, tune-merge, \
tune-best, compile)" -- frob
expect 2 "'$dir/none.log': no such log" -- tune-best "$dir/none.log"
expect 2 "'$dir/none.log': no such log" -- tune-merge "$dir/m.log" "$dir/none.log"
expect 2 "LOG is required" -- tune-merge "$dir/m.log"
expect 2 "--image: only the gallery's resnet18 has an image size" -- tune-space mlp --image 32
expect 2 "--image: Value 0 not in range" -- tune-space resnet18 --image 0
expect 2 "MODEL is required" -- inspect
expect 2 "--preset: no VTA preset named 'pynk'; the presets are sim, pynq" -- inspect mlp \
  --preset pynk
expect 2 "--preset and --vta-config both name the VTA" -- inspect mlp --preset pynq \
  --vta-config "$dir/de10.json"
# paths and values a user can get wrong: refused with status 2, nothing run or overwritten
expect 2 "is a directory, not a file" -- inspect "$dir"
expect 2 "--input image: '$dir' is a directory, not a file" -- \
  run "$model" --dims batch=1..4 --input "image=$dir"
expect 2 "--input image: the array is float32[], of rank 0; input %image is float32[batch, 3, 8, 8]" \
  -- run "$model" --dims batch=1..4 --input "image=$dir/scalar.npy"
expect 2 "--input image is given twice" -- run "$model" --dims batch=1..4 \
  --input "image=$dir/image.npy" --input "image=$dir/image.npy"
expect 2 "--dims batch is given twice" -- inspect "$model" --dims batch=1..4 --dims batch=2..2
expect 2 "--dims nosuch: the model's inputs have no symbolic dim of that name (theirs: batch)" \
  -- inspect "$model" --dims batch=1..4 --dims nosuch=1..4
printf 'not a log\n' >"$dir/garbage.log"
expect 2 "has no record of a candidate" -- tune-best "$dir/garbage.log"
expect 2 "--output: '$model' is not a directory" -- run "$model" --dims batch=1..4 \
  --input "image=$dir/image.npy" --output "$model"
expect 2 "--dump: '$model' is not a directory" -- run "$model" --dims batch=1..4 \
  --input "image=$dir/image.npy" --dump "$model"
expect 2 "-o: '$model' is not a directory" -- compile "$model" --dims batch=1..4 -o "$model"
expect 2 "--ns: 'class' is a C++ keyword" -- compile mlp -o "$dir/fw_class" --ns class
expect 2 "--ns: '1abc' is no C++ identifier" -- compile mlp -o "$dir/fw_1abc" --ns 1abc
expect 2 "--top: Value -1 not in range" -- tune mlp --log "$dir/top.log" --top -1
expect 2 "--budget: nan is no number" -- tune mlp --log "$dir/nan.log" --budget nan
# a file that is no tuning log is left as it is by --resume
cp "$model" "$dir/victim.onnx"
expect 2 "is not a tuning log (no line of it is a record); it is left as it is" -- \
  tune "$model" --dims batch=1..4 --log "$dir/victim.onnx" --resume
cmp -s "$model" "$dir/victim.onnx" || { echo "FAIL --resume changed a file that is no log"; failed=1; }
# --svg's path reaches Graphviz's dot as an argument, never through a shell
if ! (cd "$dir" && "$dlavm" inspect mlp --svg "x'; touch INJECTED; '.svg" > /dev/null 2>&1) ||
  [ -e "$dir/INJECTED" ] || ! grep -q "<svg" "$dir/x'; touch INJECTED; '.svg"; then
  echo "FAIL --svg with a quote in its path"
  failed=1
else
  echo "ok   dlavm inspect mlp --svg (a path with a quote: written, nothing else run)"
fi
expect 2 "--svg: cannot write" -- inspect mlp --svg "$dir/none/x.svg"
exit $failed
