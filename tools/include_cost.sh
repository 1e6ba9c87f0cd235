#!/usr/bin/env bash
# Measures what including dlavm costs: compiles a translation unit holding only
# `#include <dlavm/<layer>.hpp>` and `int main() {}` for each layer umbrella and for the
# umbrella dlavm/dlavm.hpp, and prints the compiler's user+system CPU time (the best of
# REPEAT runs, which is the least disturbed by other load on the machine).
#   tools/include_cost.sh                      g++ -O3, every layer and the umbrella
#   CXX=clang++ FLAGS=-O0 tools/include_cost.sh core vta
#   REPEAT=5 tools/include_cost.sh dlavm
# Informational only: nothing fails on a slow machine. Record figures in docs/performance.md.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CXX="${CXX:-g++}"
FLAGS="${FLAGS:--O3}"
REPEAT="${REPEAT:-3}"
if [[ $# -gt 0 ]]; then
  headers=("$@")
else
  headers=(core runtime ne te schedule tir vta dlavm)
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

printf '%-10s %8s   (%s %s, best of %s)\n' header seconds "$CXX" "$FLAGS" "$REPEAT"
for h in "${headers[@]}"; do
  printf '#include <dlavm/%s.hpp>\nint main() {}\n' "$h" >"$work/tu.cpp"
  best=""
  for ((i = 0; i < REPEAT; ++i)); do
    # bash's `time` keyword reports the child's CPU seconds; the compiler's own messages go to
    # a file, shown if it fails.
    t=$( { TIMEFORMAT='%U %S'; time "$CXX" -std=c++20 $FLAGS -I"$root/include" \
             -c "$work/tu.cpp" -o "$work/tu.o" 2>"$work/err"; } 2>&1 ) || {
      cat "$work/err" >&2
      exit 1
    }
    s=$(awk '{ printf "%.2f", $1 + $2 }' <<<"$t")
    if [[ -z "$best" ]] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then best="$s"; fi
  done
  printf '%-10s %8s\n' "$h" "$best"
done
