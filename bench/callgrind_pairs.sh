#!/bin/sh
# Instructions per operation of a benchmark's pairs (store_bench, codec_bench), counted by
# callgrind (independent of the machine's load, unlike the timings). Each benchmark runs alone at two fixed iteration counts
# (KEYSCHEMA_BENCH_ITERATIONS) with collection on inside the benchmark functions only; the difference of
# the two Ir totals divided by the difference of the counts is the cost of one operation (the
# database's set-up and the first iteration's misses cancel out).
#
#   bench/callgrind_pairs.sh build/bench/bench/store_bench 'lmdb/(get|scan_owning)/'
#   bench/callgrind_pairs.sh build/bench/bench/codec_bench .
#
# Arguments: the benchmark binary, a --benchmark_filter regex (default: store_bench's read pairs;
# its write pairs: '(put|batch100|erase_batch)/'). Scans and drained_first(_named): counts per scan /
# lookup, divide a scan's by 1,000 for one entry; batch100 and erase_batch: per batch of 100.
# The keys erase_batch erases are written outside the count (bench/fixed_iterations.hpp,
# not_counted).
set -eu
bin=${1:?usage: callgrind_pairs.sh <store_bench> [filter]}
filter=${2:-'(get|get_into|scan_owning|scan_views|scan_keys|scan_keys_raw|scan_reverse|drained_first|drained_first_named)/'}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# A name's /iterations:N suffix (a fixed count) changes with KEYSCHEMA_BENCH_ITERATIONS: dropped.
names=$("$bin" --benchmark_list_tests=true --benchmark_filter="$filter" | grep -E '^[^ ]+/[^ ]+$' |
  sed 's#/iterations:[0-9]*$##')
ir() {  # ir <benchmark name> <iterations>: Ir collected inside the benchmark run
  KEYSCHEMA_BENCH_ITERATIONS=$2 valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
    --toggle-collect='*(benchmark::State&)' \
    "$bin" --benchmark_filter="^$1(/|$)" >/dev/null 2>&1
  sed -n 's/^summary: *//p; s/^totals: *//p' "$out/cg" | head -n 1
}
printf '%-32s %14s\n' benchmark 'Ir/op'
for name in $names; do
  case $name in
    */scan_*) lo=20 hi=120 ;;
    */batch100/* | */erase_batch/*) lo=100 hi=600 ;;  # 100 operations per iteration
    *) lo=2000 hi=12000 ;;
  esac
  a=$(ir "$name" $lo)
  b=$(ir "$name" $hi)
  printf '%-32s %14s\n' "$name" $(( (b - a) / (hi - lo) ))
done
