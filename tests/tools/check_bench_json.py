#!/usr/bin/env python3
"""Runs keyschema-bench --quick and checks its JSON and SVG.

usage: check_bench_json.py <keyschema-bench> <work dir> <backend>...

Fails (exit 1, saying why) unless the program exits 0 (it stops with an error when the sides of
readers_N did not hold the same entries), the JSON parses, is format 2 (format_version,
keyschema_version, timestamp, settings, machine, runs, recommendations; every run keeps its
repetitions' samples; a figure not measured is null, never 0), every run has the documented fields with sane values, every listed backend appears, and
the durable backends appear at sync on and off with a native ratio for the LevelDB and LMDB
write and read workloads, every broker variant (queue counts, 64 KiB chunked bodies, drained
lookup after compaction, XA, reopen, grouped recovery, expiry) has a row for every durable backend,
and the write workloads of the file backends carry a disk size after compaction. Both native
baselines (same settings, user view) are measured, with their samples, for every write and read
workload of every backend that has a native side (LevelDB, LMDB, RocksDB, SQLite), the mixed
workload's three roles included, and the table prints both columns; the placed variant of the
64 KiB workloads (the stores "lmdb-placed" and "rocksdb-blobs") has a row for each of them, with
null native figures (its native side is the unplaced rows').
"""
import json
import os
import subprocess
import sys

exe, work, *backends = sys.argv[1:]
os.makedirs(work, exist_ok=True)
js, svg = os.path.join(work, "bench.json"), os.path.join(work, "bench.svg")
for f in (js, svg):
    if os.path.exists(f):
        os.remove(f)
proc = subprocess.run([exe, "--quick", "--no-progress", "--json", js, "--svg", svg],
                      cwd=work, capture_output=True, text=True, timeout=600)
sys.stdout.write(proc.stdout)
sys.stderr.write(proc.stderr)
if proc.returncode != 0:
    sys.exit(f"keyschema-bench exited with {proc.returncode}")
with open(js) as f:
    doc = json.load(f)
errors = []
for k in ("format_version", "keyschema_version", "timestamp", "settings", "machine", "runs", "recommendations"):
    if k not in doc:
        errors.append(f"JSON lacks {k}")
if doc.get("format_version") != 2:
    errors.append(f"format_version is {doc.get('format_version')}, not 2")
if not doc.get("settings", {}).get("quick"):
    errors.append("settings.quick is not true in a --quick run")
if "INDICATIVE" not in proc.stdout:
    errors.append("the --quick table is not marked indicative")
if "\033" in proc.stderr:
    errors.append("progress escape codes on a stderr that is not a terminal")
fields = ["backend", "sync", "workload", "ops_per_s", "min_ops_per_s", "max_ops_per_s", "samples", "p50_us", "p99_us",
          "native_ops_per_s", "native_samples", "user_ops_per_s", "user_samples", "disk_bytes", "disk_bytes_compacted"]


def num(v):
    """A figure, or 0 for null (not measured)."""
    if v == 0:
        errors.append("a figure is 0 where null (not measured) is meant")
    return 0 if v is None else v


runs = doc.get("runs", [])
for r in runs:
    for k in fields:
        if k not in r:
            errors.append(f"run {r} lacks {k}")
    if r.get("ops_per_s", 0) <= 0:
        errors.append(f"run {r.get('backend')}/{r.get('workload')} has ops_per_s {r.get('ops_per_s')}")
    if len(r.get("samples", [])) != doc.get("settings", {}).get("repetitions"):
        errors.append(f"run {r.get('backend')}/{r.get('workload')} keeps {len(r.get('samples', []))} samples")
seen = {r["backend"] for r in runs}
for b in backends:
    if b not in seen:
        errors.append(f"backend {b} is missing from the JSON (seen: {sorted(seen)})")
    if b != "memory" and {r["sync"] for r in runs if r["backend"] == b} != {True, False}:
        errors.append(f"backend {b} is not measured at both sync on and off")
for b in ("leveldb", "lmdb"):
    if b in backends:
        for w in ("publish", "bulk_load", "random_reads"):
            if not any(r["backend"] == b and r["workload"] == w and num(r["native_ops_per_s"]) > 0 for r in runs):
                errors.append(f"{b} {w} has no native figure")
variants = ["publish_1_queue", "publish_100_queues", "publish_10000_queues", "publish_64k", "drained_lookup",
            "drained_lookup_compacted", "xa_commit", "xa_rollback", "reopen", "recovery_grouped",
            "recovery_per_topic", "expiry"]
for b in backends:
    if b == "memory":
        continue
    for w in variants:
        if not any(r["backend"] == b and r["workload"] == w for r in runs):
            errors.append(f"{b} has no {w} row")
    for w in ("publish_1_queue", "publish_10000_queues", "publish_64k"):
        if not any(r["backend"] == b and r["workload"] == w and num(r["native_ops_per_s"]) > 0 for r in runs):
            errors.append(f"{b} {w} has no native figure")
    writes = [r for r in runs if r["backend"] == b and r["workload"] == "publish"]
    if not writes or any(num(r["disk_bytes_compacted"]) <= 0 for r in writes):
        errors.append(f"{b} publish has no disk size after compaction")
# Every write and read workload the program runs, each with both native baselines on the engines
# that have a native side; the placed variant's rows (lmdb-placed, rocksdb-blobs) have none (null).
placed = ["publish_64k", "consume_64k", "browse_64k"]
with_native = ["publish", "publish_1_queue", "publish_100_queues", "publish_10000_queues", "publish_64k",
               "consume_64k", "browse_64k", "browse", "consume", "drain", "drained_lookup",
               "drained_lookup_compacted", "xa_commit", "xa_rollback", "reopen", "recovery_grouped",
               "recovery_per_topic", "expiry", "bulk_load", "individual_writes", "batch_writes", "random_reads",
               "random_reads_2_threads", "random_range_reads", "removals", "mixed_publishers", "mixed_consumers",
               "mixed_sweeper"] + [f"{k}_{n}" for k in ("writers", "readers") for n in (1, 2, 4, 8)]
unlisted = sorted({r["workload"] for r in runs} - set(with_native))
if unlisted:
    errors.append(f"workloads this check does not know (a native side, or none?): {unlisted}")
for b in backends:
    if b == "memory":
        continue
    for w in with_native:
        rows = [r for r in runs if r["backend"] == b and r["workload"] == w]
        if not rows:
            errors.append(f"{b} has no {w} row")
        for r in rows:
            for base in ("native", "user"):
                if num(r.get(f"{base}_ops_per_s")) <= 0 or len(r.get(f"{base}_samples", [])) != len(r["samples"]):
                    errors.append(f"{b} {w} sync {r['sync']} has no {base} figure with its samples")
for w in placed:
    for engine, store in (("lmdb", "lmdb-placed"), ("rocksdb", "rocksdb-blobs")):
        rows = [r for r in runs if r["workload"] == w and r["backend"] == store]
        if engine in backends and not rows:
            errors.append(f"{store} has no {w} row")
        for r in rows:
            if r.get("native_ops_per_s") is not None or r.get("user_ops_per_s") is not None:
                errors.append(f"{r['backend']} {w}: a native figure where none is measured (null expected)")
header = next((line for line in proc.stdout.splitlines() if line.startswith("workload ")), "")
if " native " not in header or " user " not in header:
    errors.append(f"the table's header lacks the native and user columns: {header!r}")
if num(doc.get("machine", {}).get("fsync_per_s")) <= 0:
    errors.append("machine.fsync_per_s not measured")
with open(svg) as f:
    text = f.read()
if not text.startswith("<svg") or "</svg>" not in text:
    errors.append("SVG is not an <svg> document")
if "recommendation" not in proc.stdout:
    errors.append("table has no recommendation")
if errors:
    sys.exit("\n".join(errors))
print(f"check_bench_json: {len(runs)} runs, backends {sorted(seen)}: ok")
