#!/usr/bin/env bash
# What a translation unit pays to include keyschema, against the bar <range/v3/all.hpp> alone.
#
#   bench/compile_time.sh [reps]            # default 7 rounds
#   CXX=clang++ bench/compile_time.sh 5
#   MODE=-c bench/compile_time.sh           # also generate code (-O0)
#   bench/compile_time.sh --headers         # which standard headers each translation unit pulls
#   UNITS="a e" bench/compile_time.sh 5     # only these units (a, the bar, is always compiled)
#   BASE=/tmp/old bench/compile_time.sh     # also b..e against the headers of another checkout
#                                           # (e.g. git archive <rev> include adapters | tar -x -C /tmp/old),
#                                           # in the same rounds: before and after in one run
#
# The translation units (bench/compile_time/):
#   a  rangev3_all.cpp      <range/v3/all.hpp> alone: the bar
#   b  umbrella_broker.cpp  <keyschema/keyschema.hpp>, the broker schema of
#                           examples/broker/wso2_schema.hpp and a store<broker, memory_backend>
#                           doing a broker's usual operations (broker_ops.inc)
#   c  store_memory.cpp     the same schema and operations with only store.hpp, memory_backend.hpp
#                           and the headers of the schema features it uses
#   d  store_<ADAPTER>.cpp  the same over one adapter (ADAPTER=lmdb by default) instead of the
#                           memory backend
#   e  umbrella_schema.cpp  <keyschema/keyschema.hpp> and the broker schema's declarations only
#                           (no store): the cost of the include itself
# Each round compiles every unit once, in turn (round-robin, so a change of the machine's load
# falls on all of them alike), and times the compiler's CPU time (user + system). It prints per
# unit the median, minimum and maximum, and the ratios of the medians to (a); the spread of the
# ratio is the range of the per-round ratios (the units of one round ran back to back).
#
# MODE: -fsyntax-only by default: the front end only (preprocessing, parsing, template
# instantiation), which is what including a header costs; with -c the compiler also generates
# code at -O0 for the operations of broker_ops.inc, which <range/v3/all.hpp> alone has none of, so
# the ratio then compares unlike work.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cxx=${CXX:-g++}
mode=${MODE:--fsyntax-only}
adapter=${ADAPTER:-lmdb}
units=(a:rangev3_all b:umbrella_broker c:store_memory "d:store_$adapter" e:umbrella_schema)
if [[ -n ${UNITS:-} ]]; then
  chosen=(a:rangev3_all)
  for k in $UNITS; do
    [[ $k == a ]] && continue
    found=
    for u in "${units[@]}"; do [[ ${u%%:*} == "$k" ]] && chosen+=("$u") && found=1; done
    [[ -n $found ]] || { echo "compile_time.sh: UNITS names '$k'; the units are a b c d e" >&2; exit 2; }
  done
  units=("${chosen[@]}")
fi
base=${BASE:-}
if [[ -n $base ]]; then
  base=$(cd "$base" && pwd)
  units+=(B:umbrella_broker C:store_memory "D:store_$adapter" E:umbrella_schema)
fi
# The include directories of a unit: upper-case units (BASE) use the other checkout's headers.
unit_flags() {
  local r=$root
  [[ $1 == [A-Z] ]] && r=$base
  printf '%s\n' -std=c++20 -O0 -w -I"$r/include" -I"$r/adapters/$adapter/include"
  [[ $mode == -c ]] && printf '%s\n' -o /dev/null
  return 0
}

if [[ ${1:-} == --headers ]]; then
  # -H prints every header opened, one dot per level of nesting.
  for u in "${units[@]}"; do
    f="$here/compile_time/${u#*:}.cpp"
    mapfile -t flags < <(unit_flags "${u%%:*}")
    echo "== ${u%%:*} ${u#*:}.cpp: standard headers included directly by a header outside the standard library"
    "$cxx" "${flags[@]}" -fsyntax-only -H "$f" 2>&1 >/dev/null | awk '
      /^\.+ / { depth = index($0, " ") - 1; file = $2
                std = (file ~ /\/c\+\+\/[0-9]+\//)
                if (std && !parent_std[depth - 1]) { sub(/.*\/c\+\+\/[0-9]+\//, "", file); if (!seen[file]++) printf " <%s>", file }
                parent_std[depth] = std }
      END { print "" }'
    echo "   headers opened: $("$cxx" "${flags[@]}" -fsyntax-only -H "$f" 2>&1 >/dev/null | grep -c '^\.')"
  done
  exit 0
fi

reps=${1:-7}
declare -A times
for ((r = 0; r < reps; ++r)); do
  for u in "${units[@]}"; do
    f="$here/compile_time/${u#*:}.cpp"
    mapfile -t flags < <(unit_flags "${u%%:*}")
    TIMEFORMAT='%3U %3S'
    t=$({ time "$cxx" "${flags[@]}" "$mode" "$f" >/dev/null 2>&1; } 2>&1) || {
      echo "compile_time.sh: $f does not compile:" >&2
      "$cxx" "${flags[@]}" "$mode" "$f" >&2 || true
      exit 1
    }
    times[${u%%:*}]+="$(awk '{ printf "%.3f", $1 + $2 }' <<<"$t") "
  done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%s %s, %d rounds; CPU seconds (user + system)\n' "$($cxx --version | head -n 1)" "$mode" "$reps"
[[ -n $base ]] && printf 'upper-case units: the headers of %s\n' "$base"
printf '%-24s %8s %8s %8s %9s %15s\n' unit median min max 'ratio/a' 'per-round range'
for u in "${units[@]}"; do
  k=${u%%:*}
  read -r -a v <<<"${times[$k]}"
  read -r -a va <<<"${times[a]}"
  med=$(median <<<"${times[$k]}")
  mina=$(printf '%s\n' "${v[@]}" | sort -g | head -n 1)
  maxa=$(printf '%s\n' "${v[@]}" | sort -g | tail -n 1)
  ratio=$(awk -v x="$med" -v y="$(median <<<"${times[a]}")" 'BEGIN { printf "%.2f", x / y }')
  range=$(for ((i = 0; i < ${#v[@]}; ++i)); do awk -v x="${v[i]}" -v y="${va[i]}" 'BEGIN { printf "%.3f\n", x / y }'; done |
    sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }')
  printf '%-24s %8.2f %8.2f %8.2f %9s %15s\n' "$k ${u#*:}" "$med" "$mina" "$maxa" "$ratio" "$range"
done
if [[ -n $base ]]; then
  printf '%-24s %8s %15s\n' 'this / BASE' median 'per-round range'
  for k in b c d e; do
    K=${k^^}
    [[ -n ${times[$k]:-} ]] || continue
    read -r -a v <<<"${times[$k]}"
    read -r -a w <<<"${times[$K]}"
    rs=$(for ((i = 0; i < ${#v[@]}; ++i)); do awk -v x="${v[i]}" -v y="${w[i]}" 'BEGIN { printf "%.3f\n", x / y }'; done | sort -g)
    printf '%-24s %8.2f %15s\n' "$k / $K" "$(median <<<"$(tr '\n' ' ' <<<"$rs")")" \
      "$(awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }' <<<"$rs")"
  done
fi
