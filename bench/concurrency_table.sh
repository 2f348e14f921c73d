#!/usr/bin/env bash
# The concurrency measurements against native code, in one run on one machine, as one table with
# each row's ratio, its bar and PASS/FAIL:
#   - durable single-message commits (bench/concurrency_bench, sync on, 1 and 16 threads):
#     LevelDB and RocksDB keyschema / native at 16 threads >= 0.90; LMDB and SQLite keyschema at
#     16 threads / keyschema at 1 thread >= 4.00 (the engines allow one writer; the store merges
#     concurrent commits); beside these two, the ceiling: keyschema's rate with 16 threads and sync
#     off (no fsync at all), over the single-thread durable rate, which no merging of durable
#     commits can exceed (the engine's own work per commit: page writes, locks, checkpoints);
#   - LevelDB publish with {.sync = false} (bench/leveldb_publish_bench, 100k and 1M messages):
#     plain LevelDB wall time / keyschema wall time >= 0.95 (median of the rounds' ratios);
#   - readers (keyschema-bench readers_1, _2, _4, _8 on LevelDB, LMDB, RocksDB, SQLite):
#     keyschema / native (same settings) >= 0.95, the median of the repetitions' ratios. Each
#     repetition is a keyschema-bench run of its own with one repetition, in which a readers_N
#     workload runs on keyschema and on the native side within seconds of each other (within one
#     keyschema-bench run, every keyschema repetition runs before the first native one), so a
#     change in the machine's load hits both alike; the repetitions' min..max and the user-view
#     ratio are printed beside it. LevelDB and LMDB read 3 to 5 times as fast as RocksDB and 15 to
#     20 times as fast as SQLite: their samples take FAST_READS_PER_SAMPLE reads (a keyschema-bench
#     run of their own), so that no sample lasts only a few scheduling slices (200,000 LMDB reads
#     took 23-44 ms, LevelDB's about 70 ms). RocksDB's point reads vary most from one sample to
#     the next, on the native side as much as on keyschema's (plain RocksDB reading 1,000 entries
#     from its memtable in a loop of its own: 850k to 1,213k reads/s from one second to the next
#     on the idle machine): its rows take ROCKSDB_READERS_REPETITIONS repetitions;
#   - the include (bench/compile_time.sh, units a and e): <keyschema/keyschema.hpp> and the broker
#     schema / <range/v3/all.hpp> alone <= 1.00.
#
#   bench/concurrency_table.sh [BUILD_DIR]     # default build/bench: a Release build with
#                                              # -DKEYSCHEMA_BUILD_BENCH=ON; builds nothing
# Environment (defaults in brackets): SECONDS_PER_SIDE [2] and ROUNDS [5] for concurrency_bench,
# PUBLISH_ROUNDS [5], READERS_REPETITIONS [9], ROCKSDB_READERS_REPETITIONS [27], READS_PER_SAMPLE
# [200000] (RocksDB, SQLite) and
# FAST_READS_PER_SAMPLE [1000000] (LevelDB, LMDB) for keyschema-bench, COMPILE_ROUNDS [7], OUT [a
# fresh temporary directory: every bench's raw output is kept there]. About 11 minutes on a 2-core
# machine. Exit status 0 when every row passes, 1 when one fails, 2 when a bench is missing or
# fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build/bench}
seconds=${SECONDS_PER_SIDE:-2}
rounds=${ROUNDS:-5}
publish_rounds=${PUBLISH_ROUNDS:-5}
readers_repetitions=${READERS_REPETITIONS:-9}
rocksdb_readers_repetitions=${ROCKSDB_READERS_REPETITIONS:-27}
reads_per_sample=${READS_PER_SAMPLE:-200000}
fast_reads_per_sample=${FAST_READS_PER_SAMPLE:-1000000}
compile_rounds=${COMPILE_ROUNDS:-7}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/concurrency_table.XXXXXX")}
mkdir -p "$out"

concurrency=$build/bench/concurrency_bench
publish=$build/bench/leveldb_publish_bench
kbench=$build/tools/keyschema-bench
for exe in "$concurrency" "$publish" "$kbench"; do
  [[ -x $exe ]] || {
    echo "concurrency_table.sh: $exe is missing; build it first: ninja -C $build concurrency_bench leveldb_publish_bench keyschema-bench" >&2
    exit 2
  }
done

step() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
run() {  # run <log> <command...>: the command's output into the log; its failure stops the script
  local log=$1
  shift
  "$@" >"$log" 2>&1 || {
    echo "concurrency_table.sh: '$*' failed; its output:" >&2
    cat "$log" >&2
    exit 2
  }
}

start=$(date +%s)
step "concurrency_bench: sync on, 1 and 16 threads, $rounds rounds of $seconds s per side"
run "$out/concurrency.txt" "$concurrency" --threads 1,16 --sync on --seconds "$seconds" --rounds "$rounds" \
  --backends leveldb,rocksdb,lmdb,sqlite
step "concurrency_bench: the ceiling, sync off, 16 threads, LMDB and SQLite"
run "$out/concurrency_off.txt" "$concurrency" --threads 16 --sync off --seconds "$seconds" --rounds "$rounds" \
  --backends lmdb,sqlite
for n in 100000 1000000; do
  step "leveldb_publish_bench: $n messages, $publish_rounds rounds"
  run "$out/publish_$n.txt" "$publish" "$n" "$publish_rounds"
done
step "keyschema-bench: readers_1, _2, _4, _8, $readers_repetitions repetitions ($rocksdb_readers_repetitions on RocksDB) of $reads_per_sample reads ($fast_reads_per_sample on LevelDB and LMDB)"
for ((i = 1; i <= rocksdb_readers_repetitions || i <= readers_repetitions; i++)); do
  for part in fast rocksdb sqlite; do
    if [[ $part == rocksdb ]]; then ((i <= rocksdb_readers_repetitions)) || continue; else ((i <= readers_repetitions)) || continue; fi
    case $part in
      fast) backends=leveldb,lmdb n=$fast_reads_per_sample ;;
      *) backends=$part n=$reads_per_sample ;;
    esac
    run "$out/readers_${part}_$i.txt" "$kbench" --backends "$backends" --workloads readers_1,readers_2,readers_4,readers_8 \
      --sync off --repetitions 1 --reads-per-sample "$n" --no-progress --dir "$out/readers-db" \
      --json "$out/readers_${part}_$i.json" --svg "$out/readers_${part}_$i.svg"
  done
done
step "compile_time.sh: units a and e, $compile_rounds rounds"
UNITS="a e" run "$out/compile.txt" bash "$here/compile_time.sh" "$compile_rounds"
elapsed=$(($(date +%s) - start))

python3 - "$out" "$elapsed" "$rounds" "$seconds" "$publish_rounds" "$readers_repetitions" "$compile_rounds" <<'EOF'
import json, os, statistics, sys

out, elapsed, rounds, seconds, publish_rounds, readers_repetitions, compile_rounds = sys.argv[1:]
rows = []  # (measurement, detail, ratio, op, bar)
problems = []


def row(what, detail, ratio, op, bar):
    rows.append((what, detail, ratio, op, bar))


# concurrency_bench: "backend sync threads keyschema native ratio x1thr kmin..kmax nmin..nmax"
conc, ceiling = {}, {}
for name in ("concurrency.txt", "concurrency_off.txt"):
    with open(os.path.join(out, name)) as f:
        for line in f:
            p = line.split()
            if len(p) >= 7 and p[0] in ("leveldb", "rocksdb", "lmdb", "sqlite") and p[1] in ("on", "off"):
                (conc if p[1] == "on" else ceiling)[(p[0], int(p[2]))] = (float(p[3]), float(p[4]))
for b in ("leveldb", "rocksdb", "lmdb", "sqlite"):
    if (b, 1) not in conc or (b, 16) not in conc:
        problems.append(f"concurrency_bench printed no sync-on row for {b} at 1 and 16 threads")
        continue
    (k1, n1), (k16, n16) = conc[(b, 1)], conc[(b, 16)]
    if b in ("leveldb", "rocksdb"):
        row(f"{b} durable commits, 16 thr", f"keyschema {k16:,.0f}/s, native {n16:,.0f}/s", k16 / n16, ">=", 0.90)
    else:
        top = ""
        if (b, 16) in ceiling:
            top = f"; ceiling (sync off, 16 thr) {ceiling[(b, 16)][0]:,.0f}/s = {ceiling[(b, 16)][0] / k1:.2f} x"
        else:
            problems.append(f"concurrency_bench printed no sync-off row for {b} at 16 threads")
        row(f"{b} durable commits, 16 / 1 thr", f"keyschema {k16:,.0f}/s vs {k1:,.0f}/s (native {n16:,.0f} vs {n1:,.0f}){top}",
            k16 / k1, ">=", 4.00)

# leveldb_publish_bench: "round first k_wall / k_cpu / k_proc n_wall / n_cpu / n_proc ratio"
for n in (100000, 1000000):
    ratios, kw, nw = [], [], []
    with open(os.path.join(out, f"publish_{n}.txt")) as f:
        for line in f:
            p = line.split()
            if len(p) == 13 and p[0].isdigit():
                kw.append(float(p[2]))
                nw.append(float(p[7]))
                ratios.append(float(p[12]))
    if not ratios:
        problems.append(f"leveldb_publish_bench {n} printed no rounds")
        continue
    row(f"leveldb publish sync off, {'1M' if n == 1000000 else f'{n // 1000}k'}", f"wall s keyschema {statistics.median(kw):.2f}, plain {statistics.median(nw):.2f};"
        f" rounds {min(ratios):.2f}..{max(ratios):.2f}", statistics.median(ratios), ">=", 0.95)

# keyschema-bench JSON: readers_N rows, keyschema / native (same settings); user view beside it.
runs = []
for part in ("fast", "rocksdb", "sqlite"):
    i = 1
    while os.path.exists(os.path.join(out, f"readers_{part}_{i}.json")):
        with open(os.path.join(out, f"readers_{part}_{i}.json")) as f:
            runs.extend(json.load(f)["runs"])
        i += 1
for b in ("leveldb", "lmdb", "rocksdb", "sqlite"):
    for t in (1, 2, 4, 8):
        r = [x for x in runs if x["backend"] == b and x["workload"] == f"readers_{t}" and x.get("native_ops_per_s")]
        if not r:
            problems.append(f"keyschema-bench reported no readers_{t} row with a native figure for {b}")
            continue
        k = statistics.median(x["ops_per_s"] for x in r)
        n = statistics.median(x["native_ops_per_s"] for x in r)
        paired = [x["ops_per_s"] / x["native_ops_per_s"] for x in r]
        users = [x["ops_per_s"] / x["user_ops_per_s"] for x in r if x.get("user_ops_per_s")]
        user = f", user view {statistics.median(users):.2f}" if users else ""
        row(f"{b} readers_{t}", f"keyschema {k:,.0f}/s, native {n:,.0f}/s; {len(paired)} repetitions {min(paired):.2f}..{max(paired):.2f}{user}",
            statistics.median(paired), ">=", 0.95)

# compile_time.sh: "e umbrella_schema median min max ratio/a range"
ratio = None
with open(os.path.join(out, "compile.txt")) as f:
    for line in f:
        p = line.split()
        if len(p) == 7 and p[0] == "e" and p[1] == "umbrella_schema":
            ratio, detail = float(p[5]), f"{p[2]} s vs range-v3; rounds {p[6]}"
if ratio is None:
    problems.append("compile_time.sh printed no row for unit e")
else:
    row("include: umbrella + schema / range-v3", detail, ratio, "<=", 1.00)

print(f"# concurrency table: one run, {os.uname().nodename}, {os.cpu_count()} cores, load average "
      f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end, {elapsed} s in all")
print(f"# commits: {rounds} rounds of {seconds} s per side; publish: {publish_rounds} rounds; "
      f"readers: median of the ratios of the keyschema-bench repetitions; compile: {compile_rounds} rounds; raw output in {out}")
w = max(len(r[0]) for r in rows) if rows else 10
print(f"{'measurement':<{w}}  {'ratio':>6}  {'bar':>7}  result  detail")
failed = 0
for what, detail, ratio, op, bar in rows:
    ok = ratio >= bar if op == ">=" else ratio <= bar
    failed += not ok
    print(f"{what:<{w}}  {ratio:6.2f}  {op} {bar:4.2f}  {'PASS' if ok else 'FAIL':<6}  {detail}")
for p in problems:
    print(f"MISSING: {p}")
print(f"# {len(rows) - failed} of {len(rows)} rows pass" + (f", {len(problems)} missing" if problems else ""))
sys.exit(2 if problems else 1 if failed else 0)
EOF
