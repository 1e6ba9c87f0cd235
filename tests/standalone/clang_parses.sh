#!/usr/bin/env bash
# A unit parsed by Clang as well as by the compiler that builds the suite, warnings as errors.
# Debian 12's clang is 14, which lacks some C++20 that GCC 12 has (a structured binding
# captured by a lambda, an aggregate initialized from parentheses) and instantiates some
# templates later: these checks keep the headers within what both take.
#   clang_parses.sh <clang++ arguments...>   (-fsyntax-only is added; exit 77, skipped,
#                                             where no clang++ is installed)
set -euo pipefail
cxx=""
for name in clang++ clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14; do
  if command -v "$name" >/dev/null 2>&1; then
    cxx="$name"
    break
  fi
done
if [[ -z "$cxx" ]]; then
  echo "skipped: no clang++ on the PATH (tools/setup.sh installs Debian's clang)"
  exit 77
fi
"$cxx" --version | head -n 1
"$cxx" -fsyntax-only -Wall -Wextra -Wpedantic -Werror "$@"
echo "PASS: $cxx parses it"
