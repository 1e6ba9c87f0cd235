#!/usr/bin/env bash
# The deployment figures that are sizes and compile times rather than run times
# (docs/performance.md, "Deployment"):
#   - the text size of the runtime's replay in a 32-bit ARM build (bench/size/runtime_replay.cpp:
#     the writer, the dependency tracker, the replay, the session), by arm-linux-gnueabihf-size,
#     at -Os (how examples/firmware is cross-compiled) and at -O2;
#   - the compile time of ResNet-18's generated header: a C++17 translation unit that opens,
#     loads, prepares and runs it, natively and for ARM (user+system seconds, best of REPEAT).
#   bench/deploy_sizes.sh [BUILD_DIR]     default: build; the firmware example's models must exist
#                                         (cmake --build BUILD_DIR --target firmware)
# Exits 77 (a skipped test to CTest, which runs it once as bench_deploy_sizes) where the cross
# compiler is missing, 1 where a compile fails or the runtime's text at -Os reaches
# RUNTIME_BUDGET (16,384 bytes).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
models="$build/examples/firmware/firmware_code_models"
REPEAT="${REPEAT:-3}"
RUNTIME_BUDGET="${RUNTIME_BUDGET:-16384}"  # bytes of text: 16 KiB
ARM_CXX="${ARM_CXX:-arm-linux-gnueabihf-g++}"
ARM_SIZE="${ARM_SIZE:-arm-linux-gnueabihf-size}"
flags=(-std=c++17 -fno-exceptions -fno-rtti -Wall -Wextra -Werror -I"$root/include")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! command -v "$ARM_CXX" >/dev/null || ! command -v "$ARM_SIZE" >/dev/null; then
  echo "deploy_sizes: $ARM_CXX or $ARM_SIZE not found (tools/setup.sh installs" \
       "g++-arm-linux-gnueabihf)" >&2
  exit 77
fi
if [[ ! -f "$models/resnet18.hpp" ]]; then
  echo "deploy_sizes: $models/resnet18.hpp not found; build the firmware example first" >&2
  exit 1
fi

echo "runtime replay, 32-bit ARM text (bytes):"
for opt in -Os -O2; do
  "$ARM_CXX" "${flags[@]}" "$opt" -c "$root/bench/size/runtime_replay.cpp" -o "$work/replay.o"
  text=$("$ARM_SIZE" "$work/replay.o" | awk 'NR == 2 { print $1 }')
  printf '  %-4s %8d  (%.1f KiB)\n' "$opt" "$text" "$(awk -v t="$text" 'BEGIN { print t / 1024 }')"
  # the budget at -Os, how firmware is cross-compiled (docs/performance.md)
  if [[ "$opt" == -Os && "$text" -ge "$RUNTIME_BUDGET" ]]; then
    echo "deploy_sizes: the runtime's replay is $text bytes at -Os, over its budget of" \
         "$RUNTIME_BUDGET" >&2
    exit 1
  fi
done

cat >"$work/resnet18_tu.cpp" <<'CPP'
#include "resnet18.hpp"
static std::uint8_t weights[16u << 20], insts[1u << 20];
static resnet18::Workspace workspace;
int main() {
  resnet18::Session s;
  if (resnet18::open(s) != dlavm::runtime::ModelStatus::Ok) return 1;
  if (resnet18::load_params(s, weights, sizeof weights) != dlavm::runtime::ModelStatus::Ok) return 1;
  if (resnet18::prepare(s, insts, sizeof insts) != dlavm::runtime::ModelStatus::Ok) return 1;
  return resnet18::run(s, workspace) == dlavm::runtime::ModelStatus::Ok ? 0 : 1;
}
CPP
# best <compiler> <flags...>: the fastest of REPEAT compiles, user+system seconds; a compile
# that fails stops the script (no time is printed for it)
best() {
  local b=""
  for ((i = 0; i < REPEAT; ++i)); do
    if ! /usr/bin/time -f '%U %S' -o "$work/time" "$@" -c "$work/resnet18_tu.cpp" -o "$work/tu.o"; then
      echo "deploy_sizes: compiling ResNet-18's header failed: $*" >&2
      exit 1
    fi
    local s
    s=$(awk '{ printf "%.2f", $1 + $2 }' "$work/time")
    if [[ -z "$b" ]] || awk -v a="$s" -v c="$b" 'BEGIN { exit !(a < c) }'; then b="$s"; fi
  done
  echo "$b"
}
header_bytes=$(stat -c %s "$models/resnet18.hpp")
echo "ResNet-18's generated header ($header_bytes bytes), compile of a TU that runs it (s):"
native=$(best g++ "${flags[@]}" -O2 -I"$models")
arm=$(best "$ARM_CXX" "${flags[@]}" -Os -I"$models")
printf '  native g++ -O2  %s\n  ARM g++ -Os     %s\n' "$native" "$arm"
