#!/usr/bin/env bash
# Prints a folder (absolute) for OCL_ICD_VENDORS that registers PoCL's ICD alone: the
# given folder, filled with the copies of /etc/OpenCL/vendors/*.icd that
# name PoCL. Where none does, prints /etc/OpenCL/vendors (every ICD).
# usage: tools/ci/pocl-vendors.sh FOLDER
set -uo pipefail
dir=${1:?usage: pocl-vendors.sh FOLDER}
rm -rf "$dir" && mkdir -p "$dir"
dir=$(cd "$dir" && pwd)   # absolute: the tests run in folders of their own
found=0
for f in /etc/OpenCL/vendors/*.icd; do
  [ -e "$f" ] || continue
  if grep -qi pocl "$f"; then cp "$f" "$dir/" && found=1; fi
done
if [ "$found" = 1 ]; then echo "$dir"; else echo /etc/OpenCL/vendors; fi
