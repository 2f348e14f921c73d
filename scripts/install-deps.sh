#!/usr/bin/env bash
# scripts/install-deps.sh: install the Debian 12 packages keyschema's build, tests, examples and
# benchmarks need. Does nothing (and never calls apt-get) when they are all installed; otherwise
# runs `apt-get update` once and installs only the missing ones, non-interactively.
# Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  g++ cmake make pkg-config
  catch2            # Catch2 2.x (tests)
  ninja-build       # scripts/test builds with Ninja
  librange-v3-dev   # range-v3 (core)
  libleveldb-dev    # keyschema::leveldb
  python3-plyvel    # LevelDB interop test (tests/unit/leveldb_plyvel_test.cpp)
  liblmdb-dev       # keyschema::lmdb
  libsqlite3-dev    # keyschema::sqlite (SQLite 3.37 or later)
  sqlite3           # tests: the sqlite3 shell reads what keyschema writes (sqlite_shell_test)
  librocksdb-dev    # keyschema::rocksdb
  rocksdb-tools     # RocksDB interop test: `ldb` reads what keyschema writes (rocksdb_ldb_test)
  libcurl4-openssl-dev nlohmann-json3-dev  # keyschema::etcd (HTTP transport, JSON)
  etcd-server etcd-client  # etcd tests: a 3-member cluster (scripts/etcd-cluster.sh)
  strace            # tests: LMDB's and SQLite's commit order (durability_*.power_loss)
  libbenchmark-dev  # benchmarks
  python3           # tests/docs/extract_cpp_blocks.py (docs.* tests)
  python3-plyvel python3-lmdb lmdb-utils  # foreign databases written without keyschema (foreign_database_test)
  clang libclang-rt-14-dev  # the asan pass (ASan+UBSan) and the libFuzzer targets (fuzz pass) of scripts/test
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
as_root=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "install-deps: missing packages (${missing[*]}) and not root; run as root or install them" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -q
"${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
