#!/usr/bin/env bash
# The whole test suite, as CI runs it (tools/setup.sh test calls this):
#  1. the Criterion suite through ctest on the default device (PoCL in CI),
#     then again on Mesa's rusticl (its llvmpipe CPU device, from
#     mesa-opencl-icd) and on Intel's OpenCL runtime for CPUs (from PyPI,
#     tools/ci/intel-ocl.sh), each with a kernel cache of its own; then the
#     category index's tests on all three with its device plans forced
#     (TABCL_TUNE);
#  2. the same suite built with AddressSanitizer and UndefinedBehaviorSanitizer,
#     failing on any sanitizer report (leaks in forked test children included),
#     and the category index's tests again with its device plans;
#  3. tests/race_check.c built with ThreadSanitizer, failing on any report;
#  4. every test's oclgrind_* suite under oclgrind --data-races --uninitialized,
#     failing on any report (oclgrind itself exits 0 after reporting);
#  5. the fuzz targets' seed corpora replayed, and each target fuzzed briefly
#     (tools/ci/fuzz.sh; it fails when clang's libFuzzer is missing, which
#     tools/setup.sh test installs);
#  6. the Python package (python/) installed into a fresh venv of Debian's
#     python3 (system site packages: numpy, pandas, dask) with no network,
#     linked against this build's libtabcl.a, and its pytest suite; then the
#     benchmark peers' own checks (bench/peers/test_peers.py); then the
#     same suite in a venv of current PyPI releases (tools/ci/python-current.sh,
#     pins in python/constraints-current.txt, cached under BUILD).
#  7. the kernels' portability lint (tools/ci/cl-lint.sh: clang for spir and
#     spir64, warnings as errors), with every option set steps 1 built.
#  8. every test binary once under each device profile (tools/ci/profiles.sh:
#     TABCL_DEVICE_PROFILE set, one Criterion --filter a binary, the sets
#     listed there, the profiles side by side, one a core; test_profile
#     runs whole in step 1);
#  9. cl-probe --all-variants --quick on the default device, in two shares
#     side by side (--all-variants=0/2 and 1/2): every program
#     variant the planners can choose built once, failing if any fails (the
#     suite's disk cache spares what step 1 built); then the same on
#     Intel's OpenCL runtime.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${1:-build}
root=$PWD
logs=${TABCL_LOG_DIR:-$build/ci-logs}
mkdir -p "$logs"
fail=0
jobs=$(nproc)
# Each step's title, and how long the one before it took (CI keeps only the
# total of a run that passes; the log says where the time went).
step_start=$SECONDS
step_name=
step() {
  [ -n "$step_name" ] && echo "(step took $((SECONDS - step_start)) s)"
  step_start=$SECONDS step_name=$*
  echo; echo "=== $* ==="
}
# What a failed test printed (its assertion lines, seed and any crash), cut
# out of a ctest log and collected for the end of the run, where a short
# view of CI's output still shows it.
details=$logs/failures.txt
: >"$details"
failed_output() {
  awk -v tag="$2" '
    /Test +#[0-9]+: / { on = ($0 ~ /(Failed|Exception|Timeout|Not Run)/); n = 0
                        if (on) print "--- " tag ": " $0; next }
    /^ *Start +[0-9]+: / { on = 0; next }
    on && n++ < 80 { print }' "$1" >>"$details"
}

step "source layout (src/README.md)"
"$root/tools/ci/check-layout.sh" || { echo "FAIL: source layout"; fail=1; }

step "README.md's C examples, the Markdown files' links"
# Each C example compiled against this build (and the whole programs run),
# so an example that stops compiling fails the test command; and every
# relative link of a .md file must point at a file.
"$root/tools/ci/readme-examples.sh" "$build" || { echo "FAIL: README examples"; fail=1; }
"$root/tools/ci/check-links.sh" || { echo "FAIL: Markdown links"; fail=1; }

step "ctest on the default device"
if ! ctest --test-dir "$build" --output-on-failure -j"$jobs" 2>&1 | tee "$logs/ctest.log"; then
  echo "FAIL: ctest"; fail=1
  failed_output "$logs/ctest.log" "ctest"
fi

step "ctest on Mesa's rusticl (llvmpipe)"
# rusticl offers llvmpipe only when RUSTICL_ENABLE names it. The suite's
# ctest files fix TABCL_CACHE_DIR to <build>/test-cache, so a copy of them
# pointing at a cache folder of its own runs the same executables (the
# tests' working folder is the copy's). install_consumer is left out: it
# checks the installed package, not a device.
llvmpipe_cache=$(cd "$build" && pwd)/test-cache-llvmpipe
llvmpipe_dir=$build/ctest-llvmpipe
# (clinfo's list taken whole first: grep -q stopping early would kill clinfo
# with SIGPIPE, which pipefail counts as a failure)
llvmpipe_devs=$(RUSTICL_ENABLE=llvmpipe clinfo -l 2>/dev/null)
if ! grep -q llvmpipe <<<"$llvmpipe_devs"; then
  echo "FAIL: no rusticl llvmpipe device (is mesa-opencl-icd installed? tools/setup.sh test installs it)"
  fail=1
else
  mkdir -p "$llvmpipe_dir" "$llvmpipe_cache"
  # the examples' tests too, where they are built (examples/)
  sed "s#TABCL_CACHE_DIR=[^;\"]*#TABCL_CACHE_DIR=$llvmpipe_cache#g" \
    "$build/tests/CTestTestfile.cmake" \
    $(ls "$build/examples/CTestTestfile.cmake" 2>/dev/null) >"$llvmpipe_dir/CTestTestfile.cmake"
  # test_soak's 300 mixed calls take four minutes on llvmpipe (one thread
  # runs the kernels there); 75 still mix every kind of call many times.
  if ! RUSTICL_ENABLE=llvmpipe TABCL_DEVICE=llvmpipe TABCL_SOAK_ITERATIONS=75 \
       ctest --test-dir "$llvmpipe_dir" --output-on-failure -j"$jobs" -E install_consumer \
       >"$logs/ctest-llvmpipe.log" 2>&1; then
    echo "FAIL: ctest on rusticl llvmpipe"; fail=1
    failed_output "$logs/ctest-llvmpipe.log" "on llvmpipe"
  fi
  grep -E "tests passed|tests failed" "$logs/ctest-llvmpipe.log"
fi

step "ctest on Intel's OpenCL runtime (CPU)"
# Intel's own compiler and runtime for CPUs (intel-opencl-rt from PyPI),
# which tools/setup.sh test installs into <build>/intel-ocl with
# tools/ci/intel-ocl.sh. OCL_ICD_VENDORS names a folder holding its .icd
# alone, so the loader opens no other runtime in this step; the device
# is selected by its platform's name. A ctest copy with a kernel cache of
# its own, as llvmpipe's above.
intel_cache=$(cd "$build" && pwd)/test-cache-intel
intel_dir=$build/ctest-intel
intel_vendors=$(cd "$build" && pwd)/intel-ocl/vendors
intel_env=(OCL_ICD_VENDORS="$intel_vendors" TABCL_DEVICE="Intel(R) OpenCL")
intel_devs=$(env "${intel_env[@]}" clinfo -l 2>/dev/null)
if [ ! -s "$intel_vendors/intel-cpu.icd" ] || ! grep -q "Intel(R) OpenCL" <<<"$intel_devs"; then
  echo "FAIL: no Intel OpenCL CPU device (tools/setup.sh test installs it: tools/ci/intel-ocl.sh $build/intel-ocl)"
  fail=1
else
  mkdir -p "$intel_dir" "$intel_cache"
  sed "s#TABCL_CACHE_DIR=[^;\"]*#TABCL_CACHE_DIR=$intel_cache#g" \
    "$build/tests/CTestTestfile.cmake" >"$intel_dir/CTestTestfile.cmake"
  # test_kernel_warnings (every program and variant built with the cache
  # off, its logs read) runs on PoCL and llvmpipe, where the project
  # promises silent builds; on Intel's compiler (8-50 s a program) it would
  # double this step, and step 9 builds every variant here anyway.
  if ! env "${intel_env[@]}" ctest --test-dir "$intel_dir" --output-on-failure -j"$jobs" \
       -E "install_consumer|test_kernel_warnings" >"$logs/ctest-intel.log" 2>&1; then
    echo "FAIL: ctest on Intel's OpenCL runtime"; fail=1
    failed_output "$logs/ctest-intel.log" "on Intel's OpenCL runtime"
  fi
  grep -E "tests passed|tests failed" "$logs/ctest-intel.log"
fi

step "the category index's device plans on the CPU devices"
# On a CPU device small fits, lookups and aligns run on the calling thread
# (fit.host_labels, lookup.host_rows), and most of the suite's are small:
# the index's programs again with both set to 0, so that the kernels and
# their failure paths stay covered on PoCL, llvmpipe and Intel's runtime
# (the tests' own per-plan passes set the keys themselves).
device_plans='fit.host_labels=0;lookup.host_rows=0'
catindex_tests='test_catindex|test_failure_sweep|test_bad_input'
if ! TABCL_TUNE=$device_plans ctest --test-dir "$build" --output-on-failure -j"$jobs" \
     -R "$catindex_tests" >"$logs/ctest-device-plans.log" 2>&1; then
  echo "FAIL: ctest of the device plans"; fail=1
  failed_output "$logs/ctest-device-plans.log" "with the device plans"
fi
grep -E "tests passed|tests failed" "$logs/ctest-device-plans.log"
if grep -q llvmpipe <<<"$llvmpipe_devs"; then
  if ! TABCL_TUNE=$device_plans RUSTICL_ENABLE=llvmpipe TABCL_DEVICE=llvmpipe \
       ctest --test-dir "$llvmpipe_dir" --output-on-failure -j"$jobs" -R "$catindex_tests" \
       >"$logs/ctest-device-plans-llvmpipe.log" 2>&1; then
    echo "FAIL: ctest of the device plans on llvmpipe"; fail=1
    failed_output "$logs/ctest-device-plans-llvmpipe.log" "with the device plans on llvmpipe"
  fi
  grep -E "tests passed|tests failed" "$logs/ctest-device-plans-llvmpipe.log"
fi
if [ -s "$intel_vendors/intel-cpu.icd" ]; then
  if ! env "${intel_env[@]}" TABCL_TUNE="$device_plans" \
       ctest --test-dir "$intel_dir" --output-on-failure -j"$jobs" -R "$catindex_tests" \
       >"$logs/ctest-device-plans-intel.log" 2>&1; then
    echo "FAIL: ctest of the device plans on Intel's OpenCL runtime"; fail=1
    failed_output "$logs/ctest-device-plans-intel.log" "with the device plans on Intel's runtime"
  fi
  grep -E "tests passed|tests failed" "$logs/ctest-device-plans-intel.log"
fi

step "ctest under AddressSanitizer and UndefinedBehaviorSanitizer"
asan=${build}-asan
cmake -S . -B "$asan" -DCMAKE_BUILD_TYPE=Debug -DTABCL_WERROR=ON \
  -DTABCL_SANITIZE=address,undefined -DTABCL_BUILD_TOOLS=ON >/dev/null && \
  cmake --build "$asan" -j"$jobs" >"$logs/asan-build.log" 2>&1 || { echo "FAIL: sanitizer build"; tail -50 "$logs/asan-build.log"; fail=1; }
# intercept_tls_get_addr=0: the sanitizer runtimes of GCC up to 13 and LLVM
# up to 16 take a malloc'd block that happens to start 16 bytes into a page
# for a pre-2.25 glibc TLS header and follow garbage from it, so the leak
# check at exit sometimes dies with "Tracer caught signal 11" (seen here in
# test_threads, PoCL's dynamic TLS in play, about 1 run in 20 under load).
# Only dlopen'd modules' TLS goes unscanned this way; tabcl's own is static.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0
# Only PoCL's ICD is registered for this step (the default device is
# PoCL's; Mesa's stacks have their own step): Clover (libMesaOpenCL,
# mesa-opencl-icd 22.3.6-1+deb12u2) keeps 128 bytes allocated from a module
# it has unloaded by the time the leak check runs, whose stack then names
# no library lsan.supp could ("<unknown module>"), in every process that
# loads the OpenCL platforms. Recording stacks with the slow unwinder
# (fast_unwind_on_malloc=0) names libMesaOpenCL but made the step several
# times slower (PoCL's compiler allocates a lot).
export OCL_ICD_VENDORS=$("$root/tools/ci/pocl-vendors.sh" "$asan/icd-vendors")
export LSAN_OPTIONS=suppressions=$root/tools/ci/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The kernels are the same programs for the same device as in the first
# step: that step's disk cache spares their builds (the cache is keyed by
# device, driver, source and options, and takes concurrent readers).
rm -rf "$asan/test-cache" && ln -s "$(cd "$build" && pwd)/test-cache" "$asan/test-cache"
# (test_kernel_warnings reads compiler logs, not host code: its uncached
# builds ran in the first step)
if ! ctest --test-dir "$asan" --output-on-failure -j"$jobs" -E "install_consumer|test_kernel_warnings" \
     >"$logs/asan.log" 2>&1; then
  echo "FAIL: ctest under sanitizers"; fail=1
  failed_output "$logs/asan.log" "under sanitizers"
fi
# A leak in a forked Criterion child is reported but does not fail the test.
if grep -E "ERROR: (Address|Leak)Sanitizer|Sanitizer has encountered a fatal error|runtime error:" "$logs/asan.log"; then
  echo "FAIL: sanitizer reports (see $logs/asan.log)"; fail=1
fi
tail -5 "$logs/asan.log"
# The index's device plans under the sanitizers too (the suite's small
# calls take the calling thread on PoCL; see the device-plans step).
if ! TABCL_TUNE=$device_plans ctest --test-dir "$asan" --output-on-failure -j"$jobs" \
     -R "$catindex_tests" >"$logs/asan-device-plans.log" 2>&1; then
  echo "FAIL: ctest of the device plans under sanitizers"; fail=1
  failed_output "$logs/asan-device-plans.log" "with the device plans under sanitizers"
fi
if grep -E "ERROR: (Address|Leak)Sanitizer|Sanitizer has encountered a fatal error|runtime error:" \
     "$logs/asan-device-plans.log"; then
  echo "FAIL: sanitizer reports (see $logs/asan-device-plans.log)"; fail=1
fi
grep -E "tests passed|tests failed" "$logs/asan-device-plans.log"
unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS OCL_ICD_VENDORS

step "host code under ThreadSanitizer (tests/race_check.c)"
tsan=${build}-tsan
if cmake -S . -B "$tsan" -DCMAKE_BUILD_TYPE=Debug -DTABCL_WERROR=ON -DTABCL_SANITIZE=thread \
     >"$logs/tsan-build.log" 2>&1 && \
   cmake --build "$tsan" -j"$jobs" --target race_check >>"$logs/tsan-build.log" 2>&1; then
  # the suite's disk cache, filled by the first step, spares most compiles;
  # as tuned (small calls on the calling threads), then with the index's
  # device plans, so that both meet other threads on one index
  for plans in tuned device; do
    log=$logs/tsan-$plans.log
    if ! TSAN_OPTIONS=halt_on_error=1 TABCL_CACHE_DIR="$build/test-cache" \
         TABCL_TUNE=$([ $plans = device ] && echo "$device_plans") \
         "$tsan/tests/race_check" >"$log" 2>&1 ||
       grep -q "WARNING: ThreadSanitizer" "$log"; then
      echo "FAIL: race_check under ThreadSanitizer ($plans plans)"; fail=1
      { echo "--- race_check under ThreadSanitizer ($plans plans)"; head -80 "$log"; } >>"$details"
    fi
    tail -1 "$log"
  done
else
  echo "FAIL: ThreadSanitizer build"; tail -30 "$logs/tsan-build.log"; fail=1
fi

step "kernels under oclgrind"
if command -v oclgrind >/dev/null; then
  "$root/tools/ci/oclgrind-check.sh" "$build" "$logs" || fail=1
else
  echo "FAIL: oclgrind is not installed"; fail=1
fi

if [ -x "$root/tools/ci/fuzz.sh" ]; then
  step "fuzz targets"
  "$root/tools/ci/fuzz.sh" "$build" "$logs" || fail=1
fi

step "kernel portability lint (clang, spir and spir64)"
"$root/tools/ci/cl-lint.sh" "$build/test-cache" "$llvmpipe_cache" || fail=1

step "Python package and its pytest suite (python/)"
# Debian's interpreter: the one python3-numpy, -pandas and -dask belong to
# (a python3 earlier on PATH, pyenv's say, has none of them).
py=/usr/bin/python3
build_abs=$(cd "$build" && pwd)
venv=$build_abs/python-venv
rm -rf "$venv"
if ! "$py" -m venv --system-site-packages "$venv" >"$logs/python-install.log" 2>&1 ||
   ! TABCL_BUILD_DIR=$build_abs TABCL_WERROR=1 "$venv/bin/pip" install --no-build-isolation --no-index \
       "$root/python" >>"$logs/python-install.log" 2>&1; then
  echo "FAIL: installing the Python package"; tail -30 "$logs/python-install.log"; fail=1
elif ! (cd "$root/python/tests" && TABCL_CACHE_DIR="$build_abs/test-cache" \
        timeout 900 "$venv/bin/python" -m pytest -q -p no:cacheprovider -p no:logging .) \
        >"$logs/pytest.log" 2>&1; then
  echo "FAIL: pytest"; fail=1
  { echo "--- pytest"; grep -E -B2 -A25 "^(FAILED|ERROR|E  )" "$logs/pytest.log" | head -120; } >>"$details"
fi
tail -1 "$logs/pytest.log" 2>/dev/null
# The suite again on current releases from PyPI (python/constraints-current.txt:
# numpy 2, pandas 3, pyarrow, polars, DuckDB, pyopencl, torch).
if ! "$root/tools/ci/python-current.sh" "$build_abs" "$logs"; then
  fail=1
  { echo "--- pytest (current packages)"
    grep -E -B2 -A25 "^(FAILED|ERROR|E  )" "$logs/pytest-current.log" 2>/dev/null | head -120
  } >>"$details"
fi
# The benchmark peers' own checks (bench/peers/test_peers.py): those that
# need torch skip themselves here; the numpy peers and the report run.
if ! (cd "$root/bench/peers" && "$py" -m unittest test_peers) >"$logs/peers.log" 2>&1; then
  echo "FAIL: the peers' checks (bench/peers/test_peers.py)"; fail=1
  { echo "--- bench/peers/test_peers.py"; tail -40 "$logs/peers.log"; } >>"$details"
fi
tail -1 "$logs/peers.log"

step "every test binary under each device profile (tools/ci/profiles.sh)"
TABCL_CACHE_DIR="$build/test-cache" "$root/tools/ci/profiles.sh" "$build" "$logs" || fail=1

step "cl-probe --all-variants: every program variant builds"
# Two shares side by side, each with a log of its own: one process builds
# its programs one after another, so two keep both cores busy.
variants_failed=0
pids=()
for share in 0 1; do
  TABCL_CACHE_DIR="$build/test-cache" "$build/tools/cl-probe" --quick --all-variants=$share/2 \
    >"$logs/variants-$share.log" 2>&1 &
  pids+=($!)
done
for share in 0 1; do
  log=$logs/variants-$share.log
  if ! wait "${pids[$share]}"; then
    variants_failed=1
    echo "cl-probe --all-variants=$share/2 failed:"; grep -E "FAILED|ERROR" "$log" | head -20
  fi
  grep -E "cold builds|variants built" "$log"
done
if [ "$variants_failed" = 1 ]; then echo "FAIL: cl-probe --all-variants"; fail=1; fi

step "cl-probe --all-variants on Intel's OpenCL runtime (CPU)"
# The same on Intel's runtime (registered as for its ctest step), with that
# step's kernel cache; its self-checks too.
if [ -s "$intel_vendors/intel-cpu.icd" ]; then
  variants_failed=0
  pids=()
  for share in 0 1; do
    env "${intel_env[@]}" TABCL_CACHE_DIR="$intel_cache" "$build/tools/cl-probe" --quick \
      --all-variants=$share/2 >"$logs/variants-intel-$share.log" 2>&1 &
    pids+=($!)
  done
  for share in 0 1; do
    log=$logs/variants-intel-$share.log
    if ! wait "${pids[$share]}"; then
      variants_failed=1
      echo "cl-probe --all-variants=$share/2 on Intel's runtime failed:"
      grep -E "FAILED|ERROR" "$log" | head -20
    fi
    grep -E "cold builds|variants built" "$log"
  done
  if [ "$variants_failed" = 1 ]; then echo "FAIL: cl-probe --all-variants on Intel's runtime"; fail=1; fi
else
  echo "FAIL: no Intel OpenCL CPU device (see the step \"ctest on Intel's OpenCL runtime\")"; fail=1
fi

echo "(step took $((SECONDS - step_start)) s; $SECONDS s in all)"
echo
if [ -s "$details" ]; then
  step "output of the failed tests"
  cat "$details"
fi
if [ $fail -ne 0 ]; then echo "TESTS FAILED (logs in $logs)"; exit 1; fi
echo "ALL TESTS PASSED"
