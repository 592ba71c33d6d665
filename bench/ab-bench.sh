#!/usr/bin/env bash
# tabcl-bench of this tree against another source tree, on one machine in
# one run: each family new, base, new (A-B-A), so drift shows.
#
#   git archive <commit> | tar -x -C BASE    # the tree to compare against
#   bash bench/ab-bench.sh OUT BASE [family ...]   # default: lookup hash
#
# Builds both in Release (tabcl-bench only) under /tmp and writes
# OUT/new-FAMILY.jsonl, OUT/base-FAMILY.jsonl, OUT/new2-FAMILY.jsonl and
# OUT/ab.log. On the GPU machine, start with `source .dev/env.sh &&`.
set -u
[ $# -ge 2 ] || { echo "usage: bash bench/ab-bench.sh OUT BASE [family ...]" >&2; exit 2; }
OUT=$1 BASE=$2
shift 2
families=${*:-lookup hash}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$OUT"
log=$OUT/ab.log
jobs=$(nproc)
build() {   # source, folder
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DTABCL_BUILD_TESTS=OFF >>"$log" 2>&1 &&
    cmake --build "$2" -j"$jobs" --target tabcl-bench >>"$log" 2>&1
}
build "$ROOT" /tmp/ab-new || { echo "ab-bench: building this tree failed (see $log)" >&2; exit 1; }
build "$BASE" /tmp/ab-base || { echo "ab-bench: building $BASE failed (see $log)" >&2; exit 1; }
export TABCL_CACHE_DIR=${TABCL_CACHE_DIR:-/tmp/ab-cache}
for f in $families; do
  for run in new base new2; do
    bin=/tmp/ab-new/tools/tabcl-bench
    [ $run = base ] && bin=/tmp/ab-base/tools/tabcl-bench
    t0=$(date +%s)
    "$bin" --jsonl "$OUT/$run-$f.jsonl" "$f" >/dev/null 2>>"$log"
    echo "$run $f: exit $?, $(($(date +%s) - t0)) s" | tee -a "$log"
  done
done
