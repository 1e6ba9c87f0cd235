#!/usr/bin/env bash
# Measures what compiling with dlavm costs, in both modes (docs/performance.md, "Compile
# times"): the compiler's user+system CPU seconds (the best of REPEAT runs, the least disturbed
# by other load) and peak memory for
#   - a translation unit holding only `#include <dlavm/<layer>.hpp>` and `int main() {}`, for
#     each layer umbrella and for dlavm/dlavm.hpp;
#   - a real operator file, examples/gemm.cpp (declare, schedule, build, run, report);
# each header-only (the default) and with DLAVM_COMPILED_LIB (what linking
# dlavm::dlavm_compiled defines), and the compiled library's own translation units.
#   tools/compile_times.sh                       g++ -O2, everything
#   CXX=clang++ FLAGS=-O0 tools/compile_times.sh
#   REPEAT=5 tools/compile_times.sh umbrella     umbrella | example | library (one part)
# Informational only: nothing fails on a slow machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CXX="${CXX:-g++}"
FLAGS="${FLAGS:--O2}"
REPEAT="${REPEAT:-3}"
parts=("$@")
[[ ${#parts[@]} -gt 0 ]] || parts=(umbrella example library)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# best_of <source> <extra flags...>: prints "seconds peak-MB" of the fastest of REPEAT runs.
best_of() {
  local src="$1"
  shift
  local best="" mem=""
  for ((i = 0; i < REPEAT; ++i)); do
    /usr/bin/time -f '%U %S %M' -o "$work/time" "$CXX" -std=c++20 $FLAGS "$@" \
      -I"$root/include" -I"$root/examples" -c "$src" -o "$work/tu.o" 2>"$work/err" || {
      cat "$work/err" >&2
      exit 1
    }
    read -r user sys kb <"$work/time"
    local s
    s=$(awk -v u="$user" -v y="$sys" 'BEGIN { printf "%.2f", u + y }')
    if [[ -z "$best" ]] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best="$s"
      mem=$((kb / 1024))
    fi
  done
  echo "$best $mem"
}

row() {  # row <name> <source>
  read -r h hm < <(best_of "$2")
  read -r c cm < <(best_of "$2" -DDLAVM_COMPILED_LIB)
  printf '%-22s %12s %10s %12s %10s\n' "$1" "$h" "$hm" "$c" "$cm"
}

printf '%s %s, best of %s; CPU seconds and peak MB\n' "$CXX" "$FLAGS" "$REPEAT"
printf '%-22s %12s %10s %12s %10s\n' "" header-only MB compiled MB
for part in "${parts[@]}"; do
  case "$part" in
    umbrella)
      for h in core runtime ne te schedule tir vta host graph dlavm; do
        [[ -f "$root/include/dlavm/$h.hpp" ]] || continue
        printf '#include <dlavm/%s.hpp>\nint main() {}\n' "$h" >"$work/$h.cpp"
        row "dlavm/$h.hpp" "$work/$h.cpp"
      done
      ;;
    example)
      row "examples/gemm.cpp" "$root/examples/gemm.cpp"
      ;;
    library)
      # One unit per folder, as CMakeLists.txt generates them.
      for dir in $(cd "$root/include" && find dlavm -name '*-inl.hpp' -printf '%h\n' | sort -u); do
        unit="$work/${dir//\//_}.cpp"
        for f in "$root/include/$dir"/*-inl.hpp; do
          printf '#include <%s>\n' "${f#"$root/include/"}"
        done >"$unit"
        read -r c cm < <(best_of "$unit" -DDLAVM_COMPILED_LIB)
        printf '%-22s %12s %10s %12s %10s\n' "library: ${dir#dlavm/}" "" "" "$c" "$cm"
      done
      ;;
    *)
      echo "compile_times.sh: unknown part '$part' (umbrella, example, library)" >&2
      exit 2
      ;;
  esac
done
