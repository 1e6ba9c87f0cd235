#!/usr/bin/env bash
# dlavm/ne.hpp on a 32-bit target, which has no __int128: one error, the one that says what the
# compiler layers need and what a 32-bit target uses instead (ne/int_math.hpp), not a page of
# errors about a missing type. Exit 77 (skipped) without the ARM cross compiler.
#   int128_error.sh <dlavm include dir>
set -uo pipefail
cxx=arm-linux-gnueabihf-g++
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "skipped: no $cxx (tools/setup.sh installs g++-arm-linux-gnueabihf)"
  exit 77
fi
# the third-party headers from the host's include path, after the target's own
out=$(printf '#include <dlavm/ne.hpp>\n' |
  "$cxx" -std=c++20 -fsyntax-only -I"$1" -idirafter /usr/include -x c++ - 2>&1)
first=$(grep -m1 'error:' <<<"$out")
errors=$(grep -c 'error:' <<<"$out")
if [[ "$first" == *"compiler layers need __int128"* && "$errors" -eq 1 ]]; then
  echo "PASS: $first"
else
  echo "FAIL: $errors errors, the first: $first"
  exit 1
fi
