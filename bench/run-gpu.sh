#!/usr/bin/env bash
# tabcl beside PyTorch, pandas and Arrow, in one go, on one GPU.
#
#   source .dev/env.sh && bash bench/run-gpu.sh OUT [--quick]
#
# From the repository root on the GPU machine: builds tabcl in Release in a
# fresh folder, runs cl-probe --json, tabcl-bench (copy, hash, sort, lookup,
# attention; it dumps its sort and lookup inputs) and the peers in
# bench/peers/ on the same inputs and shapes, then bench/report.py. The
# attention runs twice: the tabular and long cases, then the context cases
# (ctx_..., issue 51: 512 queries over 10,000 or 40,000 keys with a key-
# padding mask), each followed by PyTorch's SDPA on the same cases. Leaves
# exactly: OUT/probe.json, tabcl-bench.md, tabcl.jsonl, peers.jsonl,
# report.md, run.log. Every step has a time limit under one overall budget
# (RUN_GPU_BUDGET_S, 540 s by default: the whole run stays under 9.5 minutes);
# a step that fails or runs out of time is logged and the run goes on.
# --quick passes --quick everywhere: a smoke run on a CPU (PoCL, and torch
# without CUDA), with a budget of 900 s by default.
# Environment: PYTHON (a python with torch and numpy, and pandas and pyarrow
# for the host peers; found if unset),
# TABCL_BENCH_BUILD (build folder; a fresh one in /tmp if unset),
# TABCL_BENCH_DUMP (dump folder, /tmp/tabcl-dump by default; emptied first).
set -u

usage() { echo "usage: bash bench/run-gpu.sh OUT [--quick]" >&2; exit 2; }
[ $# -ge 1 ] || usage
OUT=$1
shift
QUICK=""
for arg in "$@"; do
  case $arg in
    --quick) QUICK=--quick ;;
    *) usage ;;
  esac
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/run.log
rm -f "$OUT"/probe.json "$OUT"/tabcl-bench.md "$OUT"/tabcl.jsonl "$OUT"/peers.jsonl "$OUT"/report.md
: > "$LOG"
START=$(date +%s)
if [ -n "$QUICK" ]; then BUDGET=${RUN_GPU_BUDGET_S:-900}; else BUDGET=${RUN_GPU_BUDGET_S:-540}; fi
RESERVE=15 # kept back for the report
BUILD=${TABCL_BENCH_BUILD:-$(mktemp -d /tmp/tabcl-bench-build.XXXXXX)}
DUMP=${TABCL_BENCH_DUMP:-/tmp/tabcl-dump}
NPROC=$(nproc 2>/dev/null || echo 2)
JOBS=$((NPROC < 16 ? NPROC : 16))
FAILED=()

log() { echo "[$(date -u +%H:%M:%S) +$(($(date +%s) - START))s] $*" | tee -a "$LOG"; }

# step NAME LIMIT_S 'shell command': runs it under `timeout`, within what is
# left of the budget (the command sees its limit as $STEP_LIMIT); logs how it
# went and carries on either way.
step() {
  local name=$1 cap=$2 cmd=$3
  [ -n "$QUICK" ] && cap=$((cap * 2)) # a CPU is slower; the budget still bounds the run
  local left=$((START + BUDGET - RESERVE - $(date +%s)))
  if [ "$left" -lt 5 ]; then
    log "step $name: SKIPPED (budget spent)"
    FAILED+=("$name(skipped)")
    return 1
  fi
  local limit=$((cap < left ? cap : left))
  log "step $name: start, limit ${limit}s"
  local t0 rc
  t0=$(date +%s)
  STEP_LIMIT=$limit timeout --kill-after=10 "$limit" bash -c "$cmd"
  rc=$?
  if [ $rc -eq 0 ]; then
    log "step $name: ok ($(($(date +%s) - t0))s)"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    log "step $name: FAILED, timed out after ${limit}s"
    FAILED+=("$name(timeout)")
  else
    log "step $name: FAILED, exit $rc ($(($(date +%s) - t0))s)"
    FAILED+=("$name(exit $rc)")
  fi
  return $rc
}

# Which python: PYTHON, else the first with torch and numpy. Its versions go
# in the report.
versions() {
  "$1" - <<'PYEOF' 2>/dev/null
import importlib, sys
v, ok = ["python " + sys.version.split()[0]], True
for m in ("torch", "numpy", "pandas", "pyarrow"):
    try:
        mod = importlib.import_module(m)
        extra = " (CUDA %s)" % mod.version.cuda if m == "torch" else ""
        v.append("%s %s%s" % (m, mod.__version__, extra))
    except Exception:
        v.append("%s missing" % m)
        ok = ok and m not in ("torch", "numpy")
print(", ".join(v))
sys.exit(0 if ok else 1)
PYEOF
}
PY=${PYTHON:-}
PYVER=""
if [ -n "$PY" ]; then
  PYVER=$(versions "$PY")
else
  for c in python3 /usr/bin/python3 python; do
    command -v "$c" >/dev/null 2>&1 || continue
    if PYVER=$(versions "$c"); then
      PY=$c
      break
    fi
  done
fi
if [ -z "$PY" ]; then
  PY=python3
  log "no python with torch and numpy found: the peers will fail"
fi
export OUT LOG BUILD DUMP QUICK PY ROOT JOBS

log "tabcl run-gpu.sh ${QUICK:-(full)} in $ROOT, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), budget ${BUDGET}s"
log "build folder $BUILD, dump folder $DUMP, python $PY"
NOTES=()
if command -v nvidia-smi >/dev/null 2>&1; then
  SMI=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
  [ -n "$SMI" ] && NOTES+=("nvidia-smi: $SMI") && log "nvidia-smi: $SMI"
fi
[ -n "$PYVER" ] && NOTES+=("$PYVER") && log "$PYVER"

step build 240 '
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTABCL_BUILD_TESTS=OFF >>"$LOG" 2>&1 &&
  cmake --build "$BUILD" -j"$JOBS" >>"$LOG" 2>&1'
BENCH=$BUILD/tools/tabcl-bench
PROBE=$BUILD/tools/cl-probe
export BENCH PROBE

step probe 90 '"$PROBE" --json $QUICK >"$OUT/probe.json" 2>>"$LOG"'

rm -rf "$DUMP" && mkdir -p "$DUMP"
# One tabcl-bench process per family, so one that hangs or fails costs only
# its own figures; each family is followed by its peers.
# tabcl_bench FAMILY LIMIT [ARGS]: ARGS (e.g. --cases ctx) go before the family.
tabcl_bench() {
  step "tabcl-bench $1${3:+ $3}" "$2" '"$BENCH" $QUICK --jsonl "$OUT/tabcl.jsonl" --dump "$DUMP" '"${3:-}"' '"$1"' >>"$OUT/tabcl-bench.md" 2>>"$LOG"'
}
peer() {
  # a peer starts no new case after 3/4 of its limit, so it ends on its own
  step "peer $1" "$2" 'cd "$ROOT/bench/peers" && "$PY" '"$1"' $QUICK --budget-s $((STEP_LIMIT * 3 / 4)) \
    --jsonl "$OUT/peers.jsonl" '"$3"' >>"$LOG" 2>&1'
}
tabcl_bench copy 60
tabcl_bench hash 90
tabcl_bench sort 90
peer sort_torch.py 60 '--dump "$DUMP"'
tabcl_bench lookup 120
peer lookup_torch.py 90 '--dump "$DUMP"'
peer lookup_host.py 90 '--dump "$DUMP"'
tabcl_bench attention 150 '--cases tab_,long_'
peer attention_torch.py 120 '--cases-from "$OUT/tabcl.jsonl" --only tab_,long_'
tabcl_bench attention 180 '--cases ctx'
peer attention_torch.py 120 '--cases-from "$OUT/tabcl.jsonl" --only ctx_'

if [ ${#FAILED[@]} -eq 0 ]; then
  SUMMARY="every step ran"
else
  SUMMARY="failed or skipped: ${FAILED[*]} (see run.log)"
fi
log "$SUMMARY"
NOTEARGS=()
for n in "${NOTES[@]}" "$SUMMARY"; do NOTEARGS+=(--note "$n"); done
touch "$OUT/tabcl.jsonl" "$OUT/peers.jsonl"
if ! timeout 60 "$PY" "$ROOT/bench/report.py" --tabcl "$OUT/tabcl.jsonl" --peers "$OUT/peers.jsonl" \
    --probe "$OUT/probe.json" --bench-md "$OUT/tabcl-bench.md" \
    --command "bash bench/run-gpu.sh OUT $QUICK" "${NOTEARGS[@]}" --out "$OUT/report.md" >>"$LOG" 2>&1; then
  log "report: FAILED (see above); a bare report.md written instead"
  { echo "# tabcl and its peers: no report"; echo; echo "bench/report.py failed; see run.log."
    echo; echo "$SUMMARY"; } >"$OUT/report.md"
  FAILED+=("report")
fi
log "done in $(($(date +%s) - START))s; results in $OUT"
[ ${#FAILED[@]} -eq 0 ]
