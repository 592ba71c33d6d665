#!/usr/bin/env bash
# tabcl on a CPU device beside the host peers of the same machine, in one go.
#
#   bash bench/run-cpu.sh OUT [--device SEL]
#
# From the repository root: builds tabcl in Release (TABCL_BENCH_BUILD, a
# fresh folder under /tmp if unset), then cl-probe --json, and tabcl-bench
# copy, hash, sort, lookup and attention on the device (PoCL by default;
# --device llvmpipe with RUSTICL_ENABLE=llvmpipe for Mesa's), each followed
# by its peers on the same inputs: libxxhash on one core and on every core
# (inside tabcl-bench hash), numpy's stable argsort and gather
# (peers/sort_numpy.py), pandas get_indexer, Index construction and the
# Categorical re-coding (peers/lookup_host.py), numpy/BLAS attention
# (peers/attention_numpy.py); then bench/report.py. Leaves OUT/probe.json,
# tabcl-bench.md, tabcl.jsonl, peers.jsonl, report.md and run.log.
#
# The numpy steps run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset
# (some machines set them for old OpenBLAS builds; unset, OpenBLAS picks the
# kernels for this CPU), and run.log says what they were. numpy's BLAS is
# whatever Debian's alternatives select: install libopenblas0-pthread
# (tools/setup.sh bench does) for OpenBLAS rather than the reference BLAS.
# PYTHON: the interpreter with numpy and pandas (Debian's /usr/bin/python3
# by default). Runs take tens of minutes on two cores; the exit status is
# non-zero when any step failed.
set -u
usage() { echo "usage: bash bench/run-cpu.sh OUT [--device SEL]" >&2; exit 2; }
[ $# -ge 1 ] || usage
OUT=$1
shift
DEVICE=()
while [ $# -gt 0 ]; do
  case $1 in
    --device) [ $# -ge 2 ] || usage; DEVICE=(--device "$2"); shift 2 ;;
    *) usage ;;
  esac
done
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/run.log
rm -f "$OUT"/probe.json "$OUT"/tabcl-bench.md "$OUT"/tabcl.jsonl "$OUT"/peers.jsonl "$OUT"/report.md
: >"$LOG"
BUILD=${TABCL_BENCH_BUILD:-$(mktemp -d /tmp/tabcl-cpu-build.XXXXXX)}
DUMP=${TABCL_BENCH_DUMP:-/tmp/tabcl-cpu-dump}
PY=${PYTHON:-/usr/bin/python3}
REPS=${TABCL_BENCH_REPS:-3}
FAILED=()
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }
step() {
  local name=$1
  shift
  log "step $name: $*"
  local t0=$SECONDS
  if "$@" >>"$LOG" 2>&1; then log "step $name: ok ($((SECONDS - t0)) s)"
  else log "step $name: FAILED ($((SECONDS - t0)) s)"; FAILED+=("$name"); fi
}
# the numpy peers' environment, said once
log "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-(unset)}" \
    "(both unset for the numpy steps)"
numpy() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$PY" "$@"; }

step build bash -c "cmake -S '$ROOT' -B '$BUILD' -DCMAKE_BUILD_TYPE=Release >/dev/null &&
                    cmake --build '$BUILD' -j$(nproc) --target cl-probe tabcl-bench"
[ -x "$BUILD/tools/tabcl-bench" ] || { log "no build: stopping"; exit 1; }
step probe bash -c "'$BUILD/tools/cl-probe' --json ${DEVICE[*]} >'$OUT/probe.json'"
rm -rf "$DUMP" && mkdir -p "$DUMP"
bench() {
  "$BUILD/tools/tabcl-bench" "${DEVICE[@]}" --reps "$REPS" --jsonl "$OUT/tabcl.jsonl" \
    --dump "$DUMP" "$@" | tee -a "$OUT/tabcl-bench.md"
}
step copy bench copy
step hash bench hash
step sort bench sort
step sort-peer numpy "$ROOT/bench/peers/sort_numpy.py" --dump "$DUMP" --reps "$REPS" --jsonl "$OUT/peers.jsonl"
step lookup bench lookup
step lookup-peer "$PY" "$ROOT/bench/peers/lookup_host.py" --dump "$DUMP" --reps "$REPS" --jsonl "$OUT/peers.jsonl"
step attention bench attention
step attention-peer numpy "$ROOT/bench/peers/attention_numpy.py" --cases-from "$OUT/tabcl.jsonl" --reps "$REPS" \
  --jsonl "$OUT/peers.jsonl"
# The current-package peers (pyarrow, polars, PyTorch's CPU attention):
# PYTHON_CURRENT names their interpreter, e.g. BUILD/python-venv-current/bin/python
# (tools/ci/python-current.sh); unset, or a package missing, they skip with a note.
current() {
  if [ -z "${PYTHON_CURRENT:-}" ]; then echo "skipped: PYTHON_CURRENT is not set"; return 0; fi
  "$PYTHON_CURRENT" "$@"
}
step lookup-frames-peer current "$ROOT/bench/peers/lookup_frames.py" --dump "$DUMP" --reps "$REPS" \
  --jsonl "$OUT/peers.jsonl"
step attention-torch-cpu-peer current "$ROOT/bench/peers/attention_torch_cpu.py" \
  --cases-from "$OUT/tabcl.jsonl" --reps "$REPS" --jsonl "$OUT/peers.jsonl"
step report "$PY" "$ROOT/bench/report.py" --tabcl "$OUT/tabcl.jsonl" --peers "$OUT/peers.jsonl" \
  --probe "$OUT/probe.json" --bench-md "$OUT/tabcl-bench.md" --out "$OUT/report.md"
if [ ${#FAILED[@]} -gt 0 ]; then log "failed: ${FAILED[*]}"; exit 1; fi
log "all steps ok"
