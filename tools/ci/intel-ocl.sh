#!/usr/bin/env bash
# Installs Intel's OpenCL runtime for CPUs from PyPI (the pinned wheels of
# tools/ci/intel-opencl-rt.txt) into FOLDER/rt, through a venv of Debian's
# python3, and prints an absolute ICD vendors folder (FOLDER/vendors) whose
# one .icd names its libintelocl.so. Nothing is written outside FOLDER; a
# second run with the same pins installs nothing. Use it for one run only:
#   OCL_ICD_VENDORS=$(tools/ci/intel-ocl.sh build/intel-ocl) TABCL_DEVICE='Intel(R) OpenCL' ...
# (with OCL_ICD_VENDORS a folder, the ICD loader reads only that folder).
# libintelocl.so finds its libraries through its RUNPATH ($ORIGIN), so
# LD_LIBRARY_PATH stays as it is: that folder also holds Intel's own
# libOpenCL.so.1, libhwloc and libtbb, which would shadow Debian's ICD
# loader and PoCL's hwloc.
# usage: tools/ci/intel-ocl.sh FOLDER
set -euo pipefail
dir=${1:?usage: intel-ocl.sh FOLDER}
reqs=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/intel-opencl-rt.txt
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)   # absolute: the tests run in folders of their own
lib=$dir/rt/lib/libintelocl.so
if [ ! -e "$lib" ] || ! cmp -s "$reqs" "$dir/installed.txt"; then
  rm -rf "$dir/rt" "$dir/venv" "$dir/installed.txt"
  {
    /usr/bin/python3 -m venv "$dir/venv" &&
    "$dir/venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir --no-deps \
      --require-hashes --prefix "$dir/rt" -r "$reqs"
  } >"$dir/install.log" 2>&1 || { echo "intel-ocl.sh: install failed:" >&2; tail -20 "$dir/install.log" >&2; exit 1; }
  [ -e "$lib" ] || { echo "intel-ocl.sh: $lib missing after install" >&2; exit 1; }
  cp "$reqs" "$dir/installed.txt"
fi
mkdir -p "$dir/vendors"
echo "$lib" >"$dir/vendors/intel-cpu.icd"
echo "$dir/vendors"
