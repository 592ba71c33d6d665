#!/usr/bin/env bash
# The fuzz stage of CI (tools/ci/run-tests.sh calls it; tools/fuzz-long.sh
# runs it for longer). Builds the libFuzzer targets in fuzz/ with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer in a build folder of their
# own, replays each target's seed corpus (fuzz/corpus/<target>), then fuzzes
# each target for FUZZ_SECONDS (default 60). Fails on any crash, failed
# check, leak, timeout or sanitizer report; crashing inputs are kept in the
# log folder (replay: <fuzz build>/fuzz/<target> <file>).
#
#   tools/ci/fuzz.sh [build] [logs]
#   FUZZ_SECONDS=N     seconds of fuzzing per target (0: replay only)
#   FUZZ_TARGETS="a b" a subset of the targets
#   FUZZ_BUILD_DIR     the clang build folder (default: <build>-fuzz)
#   FUZZ_FORK=N        N fuzzing processes per target (libFuzzer -fork)
#   FUZZ_JOBS=N        targets fuzzed at once (default: the number of cores)
#   FUZZ_CACHE_DIR     the kernel disk cache (default: <build>/test-cache)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
build=${1:-build}
logs=${2:-$build/ci-logs}
fbuild=${FUZZ_BUILD_DIR:-${build}-fuzz}
seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-"fuzz_strings_lookup fuzz_index_load fuzz_sdpa_desc fuzz_arrow"}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)

cc=${FUZZ_CC:-clang}
if ! command -v "$cc" >/dev/null; then
  echo "FAIL: fuzzing needs clang with libFuzzer, and '$cc' is not installed" \
       "(tools/setup.sh test installs clang and libclang-rt-dev)"
  exit 1
fi

echo "fuzz: configuring $fbuild with $cc"
if ! CC=$cc cmake -S . -B "$fbuild" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTABCL_BUILD_FUZZ=ON \
     -DTABCL_BUILD_TESTS=OFF -DTABCL_BUILD_TOOLS=OFF -DTABCL_SANITIZE=address,undefined \
     >"$logs/fuzz-configure.log" 2>&1; then
  echo "FAIL: configuring the fuzz build failed (is libFuzzer installed? Debian: libclang-rt-dev)"
  grep -E "Error|error|libFuzzer|clang" "$logs/fuzz-configure.log" | head -20
  exit 1
fi
# shellcheck disable=SC2086
if ! cmake --build "$fbuild" -j"$(nproc)" --target $targets >"$logs/fuzz-build.log" 2>&1; then
  echo "FAIL: building the fuzz targets failed"; tail -30 "$logs/fuzz-build.log"; exit 1
fi

# intercept_tls_get_addr=0: see run-tests.sh (LSan's tracer crash at exit);
# only PoCL's ICD, as there (Clover's leak from an unloaded module).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:intercept_tls_get_addr=0
export OCL_ICD_VENDORS=$("$root/tools/ci/pocl-vendors.sh" "$fbuild/icd-vendors")
export LSAN_OPTIONS=suppressions=$root/fuzz/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Compiled kernels: the test suite's disk cache when it has run (same device
# and driver, so its binaries load), else one of the fuzz build's own.
if [ -n "${FUZZ_CACHE_DIR:-}" ]; then export TABCL_CACHE_DIR=$FUZZ_CACHE_DIR
elif [ -d "$build/test-cache" ]; then export TABCL_CACHE_DIR=$(cd "$build/test-cache" && pwd)
else export TABCL_CACHE_DIR=$(mkdir -p "$fbuild/fuzz-cache" && cd "$fbuild/fuzz-cache" && pwd); fi
pattern='ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|runtime error:|fuzz check failed|deadly signal|Timeout|out-of-memory'
# One target: replay its seeds, then fuzz it. Prints its own summary and
# returns non-zero on any finding.
fuzz_target() {
  local t=$1 bin seeds work maxlen log start rc execs
  local -a common extra
  bin=$fbuild/fuzz/$t
  seeds=$root/fuzz/corpus/$t
  work=$fbuild/fuzz-work/$t
  mkdir -p "$work"
  case $t in
    fuzz_index_load) maxlen=65536 ;;
    *) maxlen=4096 ;;
  esac
  # A single input may wait for a kernel compile: PoCL has taken over a
  # minute for one attention configuration on a loaded 2-core machine.
  common=(-rss_limit_mb=4096 -timeout=300 -max_len=$maxlen -print_final_stats=1
          "-artifact_prefix=$logs/fuzz-$t-")

  log=$logs/fuzz-$t-replay.log
  start=$(date +%s)
  "$bin" "${common[@]}" -runs=0 "$seeds" >"$log" 2>&1
  rc=$?
  echo "fuzz: $t: replayed $(ls "$seeds" | wc -l) seeds in $(( $(date +%s) - start )) s (exit $rc)"
  if [ $rc -ne 0 ] || grep -Eq "$pattern" "$log"; then
    echo "FAIL: $t failed on its seed corpus (see $log)"; grep -E -A8 "$pattern" "$log" | head -40
    return 1
  fi

  [ "$seconds" -gt 0 ] || return 0
  log=$logs/fuzz-$t.log
  extra=()
  [ -n "${FUZZ_FORK:-}" ] && extra=(-fork="$FUZZ_FORK" -ignore_crashes=0)
  "$bin" "${common[@]}" "${extra[@]}" -max_total_time="$seconds" "$work" "$seeds" >"$log" 2>&1
  rc=$?
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
  echo "fuzz: $t: ${seconds} s, ${execs:-?} runs, corpus $(ls "$work" | wc -l) files (exit $rc)"
  if [ $rc -ne 0 ] || grep -Eq "$pattern" "$log"; then
    echo "FAIL: $t found a problem (see $log; inputs: $logs/fuzz-$t-*)"
    grep -E -A12 "$pattern" "$log" | head -60
    return 1
  fi
  return 0
}

# The targets side by side, as many at once as there are cores (libFuzzer
# runs one input at a time), each printing to a summary of its own, shown
# whole once all are done; each still fuzzes for the full FUZZ_SECONDS.
width=${FUZZ_JOBS:-$(nproc)}
for t in $targets; do
  while [ "$(jobs -rp | wc -l)" -ge "$width" ]; do wait -n || true; done
  { fuzz_target "$t"; echo $? >"$logs/fuzz-$t.rc"; } >"$logs/fuzz-$t.summary" 2>&1 &
done
wait
fail=0
for t in $targets; do
  cat "$logs/fuzz-$t.summary"
  [ "$(cat "$logs/fuzz-$t.rc" 2>/dev/null)" = 0 ] || fail=1
done
exit $fail
