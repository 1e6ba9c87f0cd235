#!/usr/bin/env bash
# Installs the Debian packages dlavm needs, only those missing. Idempotent and quiet when all
# is present. Without root (and without passwordless sudo) it prints the command to run.
#   tools/setup.sh            build, test and benchmark dependencies (graphviz: the test that
#                             renders graph::to_dot's text, skipped without it; oneDNN, the
#                             host's float convolutions, optional for the library), the ONNX
#                             importer's, the 32-bit ARM cross compiler and qemu-arm
#                             (examples/firmware), Slurm with munge (the tuner's job-array
#                             test, tests/tune/slurm_shards.sh) and clang (the tests that
#                             parse the single header, a firmware unit and the deploy test's
#                             constant-expression replays with Clang: clang_single_header,
#                             clang_firmware, clang_constexpr_replay)
#   tools/setup.sh --minimal  without the ONNX importer's, the cross build's, Slurm's and
#                             clang's packages
#   tools/setup.sh --fuzz     also clang and its libFuzzer runtime (make fuzz; make test
#                             replays the fuzz corpora without them)
#   tools/setup.sh --lint     also clang-format and clang-tidy (make format, make lint; the
#                             build and the tests need neither)
set -euo pipefail

packages=(g++ make cmake libboost-dev librange-v3-dev libfmt-dev doctest-dev nlohmann-json3-dev
          libhwy-dev libbenchmark-dev libdnnl-dev graphviz)
onnx_packages=(libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
               libfreetype-dev fonts-dejavu-core libcli11-dev)
cross_packages=(g++-arm-linux-gnueabihf qemu-user)
cluster_packages=(slurm-wlm munge)
second_compiler_packages=(clang)
fuzz_packages=(clang libclang-rt-dev)
lint_packages=(clang-format clang-tidy)
minimal=0
for arg in "$@"; do
  case "$arg" in
    --minimal) minimal=1 ;;
    --fuzz) packages+=("${fuzz_packages[@]}") ;;
    --lint) packages+=("${lint_packages[@]}") ;;
    *) echo "setup: unknown option '$arg' (--minimal, --fuzz, --lint)" >&2; exit 2 ;;
  esac
done
if [[ $minimal -eq 0 ]]; then
  packages+=("${onnx_packages[@]}" "${cross_packages[@]}" "${cluster_packages[@]}"
             "${second_compiler_packages[@]}")
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "setup: this is not a Debian-based system; install the equivalents of:" >&2
  echo "  ${packages[*]}" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup: installing ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  run=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  run=(sudo -n)
else
  echo "setup: these Debian packages are missing and this user cannot install them:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  echo "Run that command (or ask an administrator to), then run make again." >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${run[@]}" apt-get update -qq
"${run[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
