#!/usr/bin/env python3
"""Runs keyschema-bench --quick --backends etcd on a few workloads and checks its etcd rows.

usage: check_bench_etcd.py <keyschema-bench> <work dir> <etcd base port>

The program starts a 3-member cluster (scripts/etcd-cluster.sh) under <work dir>/data. Fails
(exit 1, saying why) unless it exits 0, the JSON has an etcd row for every workload run (write
workloads at sync on only, marked durable, ops/s > 0), the table lists publish's smaller batch
(etcd takes 128 operations per Txn), and the cluster is gone afterwards: its directory removed
and no member process left.
"""
import json
import os
import shutil
import subprocess
import sys

exe, work, port = sys.argv[1:]
data = os.path.join(work, "data")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
js, svg = os.path.join(work, "bench.json"), os.path.join(work, "bench.svg")
workloads = ["publish", "consume", "individual_writes", "random_reads"]
proc = subprocess.run([exe, "--quick", "--no-progress", "--backends", "etcd", "--workloads", ",".join(workloads),
                       "--etcd-port", port, "--dir", data, "--json", js, "--svg", svg],
                      cwd=work, capture_output=True, text=True, timeout=300)
sys.stdout.write(proc.stdout)
sys.stderr.write(proc.stderr)
errors = []
if proc.returncode != 0:
    errors.append(f"keyschema-bench exited with {proc.returncode}")
else:
    with open(js) as f:
        runs = json.load(f)["runs"]
    for w in workloads:
        rows = [r for r in runs if r["backend"] == "etcd" and r["workload"] == w]
        if not rows:
            errors.append(f"no etcd row for {w}")
        for r in rows:
            if r["ops_per_s"] <= 0 or not r["durable"]:
                errors.append(f"etcd {w}: ops_per_s {r['ops_per_s']}, durable {r['durable']}")
            if not r["reads"] and not r["sync"]:
                errors.append(f"etcd {w} measured at sync off (etcd is always durable)")
    with open(svg) as f:
        if "etcd" not in f.read():
            errors.append("the SVG does not show etcd")
    if "publish: 39 per commit instead of 100" not in proc.stdout:
        errors.append("the table does not list publish's smaller batch for etcd")
if os.path.exists(os.path.join(data, "etcd-cluster")):
    errors.append("the cluster directory was not removed")
alive = subprocess.run(["pgrep", "-f", f"listen-client-urls http://127.0.0.1:{port}"], capture_output=True, text=True)
if alive.stdout.strip():
    errors.append(f"etcd members still run: {alive.stdout.split()}")
if errors:
    sys.exit("\n".join(errors))
print(f"check_bench_etcd: {len(workloads)} workloads on etcd: ok")
