#!/bin/sh
# Instructions per message of leveldb_publish_bench's two sides (keyschema's store and plain
# LevelDB), counted by callgrind (independent of the machine's load, unlike the bench's timings).
# Each side's publishing loop (publish_keyschema, publish_native) is collected alone, in the
# publishing thread only (LevelDB's background flushes and compactions run in a thread of their
# own and are not counted), at two message counts; the difference of the two totals divided by
# the difference of the counts is the cost of one message (the open and the first batch's
# misses cancel out).
#
#   bench/callgrind_publish.sh build/bench/bench/leveldb_publish_bench [lo] [hi]
#
# lo and hi: the two message counts (2000 and 22000 by default; multiples of the batch of 100).
# With KEEP=dir the callgrind files of the hi runs are kept in dir, for callgrind_annotate
# --inclusive=yes (where a message's instructions go, by function).
set -eu
bin=${1:?usage: callgrind_publish.sh <leveldb_publish_bench> [lo] [hi]}
lo=${2:-2000}
hi=${3:-22000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ir() {  # ir <function> <messages>: Ir collected inside the function
  valgrind --tool=callgrind --callgrind-out-file="$out/cg-$1-$2" --toggle-collect="*$1(*" \
    "$bin" "$2" 1 >/dev/null 2>&1
  if [ -n "${KEEP:-}" ] && [ "$2" = "$hi" ]; then mkdir -p "$KEEP" && cp "$out/cg-$1-$2" "$KEEP/"; fi
  sed -n 's/^summary: *//p; s/^totals: *//p' "$out/cg-$1-$2" | head -n 1
}
printf '%-20s %12s\n' side 'Ir/message'
for side in publish_keyschema publish_native; do
  a=$(ir $side "$lo")
  b=$(ir $side "$hi")
  printf '%-20s %12s\n' "$side" $(( (b - a) / (hi - lo) ))
done
