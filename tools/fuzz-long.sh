#!/usr/bin/env bash
# Fuzzes every target (or those named) for longer than CI does, by hand:
#   tools/fuzz-long.sh [seconds per target, default 3600] [target ...]
# The growing corpus stays in build-fuzz/fuzz-work/<target>; crashing inputs
# land in build-fuzz/fuzz-logs. Set FUZZ_FORK=N to use N processes per
# target. Turn each crash into a regression test in tests/ and, when it is
# a useful input, copy it into fuzz/corpus/<target>.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-3600}
shift || true
[ $# -gt 0 ] && export FUZZ_TARGETS="$*"
export FUZZ_SECONDS=$seconds
export FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
exec tools/ci/fuzz.sh build "$FUZZ_BUILD_DIR/fuzz-logs"
