#!/usr/bin/env bash
# Runs every test executable's oclgrind_* suites under oclgrind with data-race,
# uninitialised-read and API checks. oclgrind exits 0 even after reporting
# an error, so the check fails on any report it prints.
set -uo pipefail
build=${1:-build}
logs=${2:-$build/ci-logs}
mkdir -p "$logs"
fail=0
# A separate cache: binaries built by another runtime must not be offered.
export TABCL_CACHE_DIR=
# oclgrind 21.10's uninitialised-value check counts the bytes of a buffer
# made with CL_MEM_USE_HOST_PTR as never written (a kernel summing 16 bytes
# the host had set was reported; with CL_MEM_COPY_HOST_PTR it was not), so
# host lookups copy their queries here instead of handing them over in
# place. oclgrind_catindex/tiny_fit_lookup_align gives the CPU kernels
# queries in buffers of exactly their bytes, as in place, for the bounds check.
# Small host calls stay on the device too (lookup.host_rows=0; the tests'
# "host" passes ask for the calling thread themselves): the kernels are what
# is checked here.
export TABCL_TUNE='lookup.host_rows=0'
pattern='Invalid (read|write)|data race|Uninitiali[sz]ed|divergence|Oclgrind|OCLGRIND|Invalid memory|Memory leak|Unaligned|out-of-bounds|runtime error'
for t in "$build"/tests/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  # Only executables that have an oclgrind_* suite.
  "$t" --list 2>/dev/null | grep -q '^oclgrind_' || continue
  log="$logs/oclgrind-$name.log"
  echo "oclgrind: $name"
  timeout 900 oclgrind --data-races --uninitialized --check-api \
    "$t" --filter 'oclgrind_*/*' --jobs=1 >"$log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: $name exited $rc under oclgrind"; tail -20 "$log"; fail=1; fi
  if grep -E "$pattern" "$log" | grep -v '^\[' | head -20 | grep .; then
    echo "FAIL: oclgrind reported errors in $name (see $log)"; fail=1
  fi
done
exit $fail
