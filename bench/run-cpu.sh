#!/usr/bin/env bash
# tabcl on the CPU's OpenCL implementations side by side, beside the host
# peers of the same machine, in one go.
#
#   bash bench/run-cpu.sh OUT [--devices LIST] [--device SEL] [--quick LIST]
#
# --devices: which implementations, in order, of pocl (PoCL's ICD alone),
# intel (Intel's CPU runtime, installed by tools/ci/intel-ocl.sh into
# TABCL_INTEL_OCL, build/intel-ocl by default) and llvmpipe (Mesa's rusticl,
# RUSTICL_ENABLE=llvmpipe); default all three. One that is not installed or
# whose cl-probe fails is said in run.log and skipped. --device SEL: one
# device of any selector instead (named "device"). --quick: the devices whose
# tabcl-bench runs with --quick, the smaller cases (default llvmpipe, whose
# full run takes hours here; "none" for none); the report says which.
#
# From the repository root: builds tabcl in Release (TABCL_BENCH_BUILD, a
# fresh folder under /tmp if unset); then for each device cl-probe --json
# and tabcl-bench copy, hash, sort, lookup and attention (libxxhash on one
# core and on every core runs inside tabcl-bench hash); then, once, the
# peers on the first device's inputs: numpy's stable argsort and gather
# (peers/sort_numpy.py), pandas get_indexer, Index construction and the
# Categorical re-coding (peers/lookup_host.py), numpy/BLAS attention
# (peers/attention_numpy.py); then bench/report.py, one report per device
# and one with the devices side by side. Leaves OUT/DEV/{probe.json,
# tabcl-bench.md,tabcl.jsonl,report.md}, OUT/peers.jsonl, OUT/report.md
# (side by side) and OUT/run.log.
#
# The numpy steps run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset
# (some machines set them for old OpenBLAS builds; unset, OpenBLAS picks the
# kernels for this CPU), and run.log says what they were. numpy's BLAS is
# whatever Debian's alternatives select: install libopenblas0-pthread
# (tools/setup.sh bench does) for OpenBLAS rather than the reference BLAS.
# PYTHON: the interpreter with numpy and pandas (Debian's /usr/bin/python3
# by default). Runs take tens of minutes a device on two cores; the exit
# status is non-zero when any step failed.
set -u
usage() { echo "usage: bash bench/run-cpu.sh OUT [--devices pocl,intel,llvmpipe] [--device SEL] [--quick LIST]" >&2; exit 2; }
[ $# -ge 1 ] || usage
OUT=$1
shift
DEVICES=pocl,intel,llvmpipe
QUICK=llvmpipe
SELECTOR=
while [ $# -gt 0 ]; do
  case $1 in
    --devices) [ $# -ge 2 ] || usage; DEVICES=$2; shift 2 ;;
    --device) [ $# -ge 2 ] || usage; SELECTOR=$2; DEVICES=device; shift 2 ;;
    --quick) [ $# -ge 2 ] || usage; QUICK=$2; shift 2 ;;
    *) usage ;;
  esac
done
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
LOG=$OUT/run.log
rm -f "$OUT"/peers.jsonl "$OUT"/report.md
: >"$LOG"
BUILD=${TABCL_BENCH_BUILD:-$(mktemp -d /tmp/tabcl-cpu-build.XXXXXX)}
DUMP=${TABCL_BENCH_DUMP:-/tmp/tabcl-cpu-dump}
INTEL_OCL=${TABCL_INTEL_OCL:-$ROOT/build/intel-ocl}
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

# The environment and selector of one implementation, in DEV_ENV and
# DEV_SEL; non-zero where it is not installed.
device_env() {
  case $1 in
    pocl) DEV_SEL=pocl
          DEV_ENV=(OCL_ICD_VENDORS="$(bash "$ROOT/tools/ci/pocl-vendors.sh" "$OUT/pocl/vendors")") ;;
    intel) local v
           v=$(bash "$ROOT/tools/ci/intel-ocl.sh" "$INTEL_OCL" 2>>"$LOG") || return 1
           DEV_SEL='Intel(R) OpenCL'; DEV_ENV=(OCL_ICD_VENDORS="$v") ;;
    # CLBlast's attention, which the library does not pick here, took
    # twice the fused kernel's 8-17 s a case on llvmpipe: not timed
    llvmpipe) DEV_SEL=llvmpipe; DEV_ENV=(RUSTICL_ENABLE=llvmpipe TABCL_BENCH_FUSED_ONLY=1) ;;
    device) DEV_SEL=$SELECTOR; DEV_ENV=() ;;
    *) log "unknown device $1 (pocl, intel, llvmpipe)"; return 1 ;;
  esac
}

step build bash -c "cmake -S '$ROOT' -B '$BUILD' -DCMAKE_BUILD_TYPE=Release >/dev/null &&
                    cmake --build '$BUILD' -j$(nproc) --target cl-probe tabcl-bench"
[ -x "$BUILD/tools/tabcl-bench" ] || { log "no build: stopping"; exit 1; }
rm -rf "$DUMP" && mkdir -p "$DUMP"
RAN=()      # the devices that ran, in order; the first one's inputs feed the peers
SIDE=()     # report.py --side arguments
for dev in ${DEVICES//,/ }; do
  D=$OUT/$dev
  if ! device_env "$dev"; then log "device $dev: not installed, skipped"; continue; fi
  mkdir -p "$D" && rm -f "$D"/probe.json "$D"/tabcl-bench.md "$D"/tabcl.jsonl "$D"/report.md
  if ! env "${DEV_ENV[@]}" "$BUILD/tools/cl-probe" --json --device "$DEV_SEL" >"$D/probe.json" 2>>"$LOG"; then
    log "device $dev: cl-probe --device '$DEV_SEL' failed (not installed?), skipped"
    continue
  fi
  log "device $dev: ${DEV_ENV[*]} --device '$DEV_SEL'"
  args=(--device "$DEV_SEL" --reps "$REPS" --jsonl "$D/tabcl.jsonl")
  # only the first device writes the inputs the peers read
  [ ${#RAN[@]} -eq 0 ] && args+=(--dump "$DUMP")
  case ",$QUICK," in *",$dev,"*) args+=(--quick); log "device $dev: the smaller cases (--quick)" ;; esac
  for what in copy hash sort lookup attention; do
    step "$dev-$what" bash -c 'env "$@" | tee -a "'"$D"'/tabcl-bench.md"' _ \
      "${DEV_ENV[@]}" "$BUILD/tools/tabcl-bench" "${args[@]}" "$what"
  done
  RAN+=("$dev")
  SIDE+=(--side "$dev=$D")
done
[ ${#RAN[@]} -gt 0 ] || { log "no device ran: stopping"; exit 1; }
log "devices run: ${RAN[*]}; the peers read ${RAN[0]}'s inputs"
FIRST=$OUT/${RAN[0]}
step sort-peer numpy "$ROOT/bench/peers/sort_numpy.py" --dump "$DUMP" --reps "$REPS" --jsonl "$OUT/peers.jsonl"
step lookup-peer "$PY" "$ROOT/bench/peers/lookup_host.py" --dump "$DUMP" --reps "$REPS" --jsonl "$OUT/peers.jsonl"
step attention-peer numpy "$ROOT/bench/peers/attention_numpy.py" --cases-from "$FIRST/tabcl.jsonl" --reps "$REPS" \
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
  --cases-from "$FIRST/tabcl.jsonl" --reps "$REPS" --jsonl "$OUT/peers.jsonl"
for dev in "${RAN[@]}"; do
  step "$dev-report" "$PY" "$ROOT/bench/report.py" --tabcl "$OUT/$dev/tabcl.jsonl" --peers "$OUT/peers.jsonl" \
    --probe "$OUT/$dev/probe.json" --bench-md "$OUT/$dev/tabcl-bench.md" --out "$OUT/$dev/report.md"
done
quick_note=()
for dev in "${RAN[@]}"; do
  case ",$QUICK," in *",$dev,"*) quick_note+=(--note "$dev ran the smaller cases (tabcl-bench --quick): its cases match the others' only where the names do") ;; esac
  [ "$dev" = llvmpipe ] && quick_note+=(--note "llvmpipe: attention without CLBlast (TABCL_BENCH_FUSED_ONLY=1)")
done
step report "$PY" "$ROOT/bench/report.py" "${SIDE[@]}" --peers "$OUT/peers.jsonl" "${quick_note[@]}" \
  --command "bash bench/run-cpu.sh OUT --devices $DEVICES --quick $QUICK" --out "$OUT/report.md"
if [ ${#FAILED[@]} -gt 0 ]; then log "failed: ${FAILED[*]}"; exit 1; fi
log "all steps ok"
