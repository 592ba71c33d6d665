#!/usr/bin/env bash
# One command from a fresh Debian machine to a working tabcl:
#   tools/setup.sh probe   installs what is missing, builds, runs cl-probe on the default device
#   tools/setup.sh test    the same set-up plus Intel's OpenCL CPU runtime from PyPI
#                          (into the build folder), then the whole test suite
#                          (tools/ci/run-tests.sh)
#   tools/setup.sh bench OUT  the same set-up with OpenBLAS for numpy, then the CPU
#                          benchmark beside its host peers (bench/run-cpu.sh OUT)
# Set TABCL_BUILD_DIR to build elsewhere than ./build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mode=${1:-probe}
case "$mode" in probe|test|bench) ;; *) echo "usage: $0 probe|test|bench OUT" >&2; exit 2 ;; esac
if [ "$mode" = bench ] && [ $# -lt 2 ]; then echo "usage: $0 bench OUT" >&2; exit 2; fi

# Debian packages only. pocl-opencl-icd is the CPU device used where no GPU is;
# mesa-opencl-icd is Mesa's OpenCL (rusticl, whose llvmpipe CPU device the
# tests also run on, with RUSTICL_ENABLE=llvmpipe; and Clover, no device).
pkgs="build-essential cmake pkg-config ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers
      pocl-opencl-icd mesa-opencl-icd clinfo libclblast-dev libcriterion-dev libxxhash-dev"
[ "$mode" != probe ] && pkgs="$pkgs oclgrind clang libclang-rt-dev
      python3-dev python3-venv python3-setuptools python3-numpy python3-pandas python3-dask
      python3-distributed python3-pytest"
# numpy's BLAS for the attention peer: without it Debian's numpy uses the
# reference BLAS (0.5 GFLOP/s for a 1024 x 1024 sgemm here, 70 with OpenBLAS)
[ "$mode" = bench ] && pkgs="$pkgs libopenblas0-pthread"
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
# Intel's OpenCL runtime for CPUs, from PyPI (pinned wheels, into the build
# folder, registered for the runs that ask for it: tools/ci/intel-ocl.sh).
# A failed install is reported; the test step that needs it then fails.
tools/ci/intel-ocl.sh "$build/intel-ocl" >/dev/null ||
  echo "setup: Intel's OpenCL runtime could not be installed (see $build/intel-ocl/install.log)" >&2
if [ "$mode" = bench ]; then
  exec bash bench/run-cpu.sh "$2"
fi
exec tools/ci/run-tests.sh "$build"
