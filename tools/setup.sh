#!/usr/bin/env bash
# One command from a fresh Debian machine to a working tabcl:
#   tools/setup.sh probe   installs what is missing, builds, runs cl-probe on the default device
#   tools/setup.sh test    the same set-up, then the whole test suite (tools/ci/run-tests.sh)
# Set TABCL_BUILD_DIR to build elsewhere than ./build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mode=${1:-probe}
case "$mode" in probe|test) ;; *) echo "usage: $0 probe|test" >&2; exit 2 ;; esac

# Debian packages only. pocl-opencl-icd is the CPU device used where no GPU is;
# mesa-opencl-icd is Mesa's OpenCL (rusticl, whose llvmpipe CPU device the
# tests also run on, with RUSTICL_ENABLE=llvmpipe; and Clover, no device).
pkgs="build-essential cmake pkg-config ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers
      pocl-opencl-icd mesa-opencl-icd clinfo libclblast-dev libcriterion-dev libxxhash-dev"
[ "$mode" = test ] && pkgs="$pkgs oclgrind clang libclang-rt-dev
      python3-dev python3-venv python3-setuptools python3-numpy python3-pandas python3-dask
      python3-distributed python3-pytest"
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing$missing" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
fi

build=${TABCL_BUILD_DIR:-build}
jobs=$(nproc)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTABCL_WERROR=ON >/dev/null
cmake --build "$build" -j"$jobs"

if [ "$mode" = probe ]; then
  exec "$build/tools/cl-probe"
fi
exec tools/ci/run-tests.sh "$build"
