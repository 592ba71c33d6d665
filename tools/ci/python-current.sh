#!/usr/bin/env bash
# The Python suite on current releases from PyPI: a venv of /usr/bin/python3
# (no system site packages) with python/constraints-current.txt's pins,
# the package built against BUILD's libtabcl.a, then pytest in python/tests
# and the benchmark peers' checks (bench/peers/test_peers.py, torch's too).
#   tools/ci/python-current.sh BUILD LOGDIR
# Logs: LOGDIR/python-current-install.log, pytest-current.log and
# peers-current.log. The venv (BUILD/python-venv-current) is kept while the
# constraints file is unchanged (a stamp holds its hash), and pip's cache
# lives in BUILD/pip-cache, so a rerun downloads and unpacks nothing again.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:?usage: python-current.sh BUILD LOGDIR}" && pwd)
logs=${2:?usage: python-current.sh BUILD LOGDIR}
constraints=$root/python/constraints-current.txt
venv=$build/python-venv-current
log=$logs/python-current-install.log
pip=("$venv/bin/pip" --disable-pip-version-check --cache-dir "$build/pip-cache")
# install --no-compile: pip would byte-compile every module of torch and
# pyarrow at install; Python compiles what a test imports.
: >"$log"

want=$(sha256sum "$constraints" | cut -d' ' -f1)
if [ "$(cat "$venv/.constraints-sha256" 2>/dev/null)" != "$want" ]; then
  rm -rf "$venv"
  # The pins' names, less torch's and the fallback's: installed with their
  # dependencies (which the file pins too).
  mapfile -t plain < <(sed -n 's/^\([A-Za-z][A-Za-z0-9._-]*\)==.*/\1/p' "$constraints" |
                         grep -v -x -E 'torch|nvidia-.*|cuda-.*|triton')
  if ! /usr/bin/python3 -m venv "$venv" >>"$log" 2>&1 ||
     ! "${pip[@]}" install --no-compile -c "$constraints" "${plain[@]}" >>"$log" 2>&1; then
    echo "FAIL: installing the current packages (see $log)"; tail -20 "$log"; exit 1
  fi
  # torch without the CUDA wheels the machine's toolkit already provides
  # (the constraints file says why); all of them where that does not import.
  if ! "${pip[@]}" install --no-compile --no-deps -c "$constraints" torch nvidia-cufile \
         nvidia-cusparselt-cu13 nvidia-nvshmem-cu13 nvidia-nccl-cu13 >>"$log" 2>&1 ||
     ! "$venv/bin/python" -c "import torch; torch.ones(2).sum()" >>"$log" 2>&1; then
    echo "torch without its CUDA wheels does not import here: installing them all" | tee -a "$log"
    if ! "${pip[@]}" install --no-compile -c "$constraints" torch >>"$log" 2>&1; then
      echo "FAIL: installing torch (see $log)"; tail -20 "$log"; exit 1
    fi
  fi
  echo "$want" >"$venv/.constraints-sha256"
fi
"$venv/bin/python" -c "import numpy, pandas, pyarrow, polars, duckdb, torch
print('numpy', numpy.__version__, 'pandas', pandas.__version__, 'pyarrow', pyarrow.__version__,
      'polars', polars.__version__, 'duckdb', duckdb.__version__, 'torch', torch.__version__)" \
  2>>"$log"

# The package itself, every time (it links this build's library).
if ! TABCL_BUILD_DIR=$build TABCL_WERROR=1 "${pip[@]}" install --no-build-isolation --no-index \
       --force-reinstall --no-deps "$root/python" >>"$log" 2>&1; then
  echo "FAIL: installing the Python package into the current venv"; tail -30 "$log"; exit 1
fi
(cd "$root/python/tests" && TABCL_CACHE_DIR="$build/test-cache" \
   timeout 900 "$venv/bin/python" -m pytest -q -p no:cacheprovider -p no:logging .) \
  >"$logs/pytest-current.log" 2>&1
rc=$?
tail -1 "$logs/pytest-current.log"
if [ $rc != 0 ]; then echo "FAIL: pytest on the current packages"; fi
# The benchmark peers' checks that need torch, which skip on Debian's packages.
if ! (cd "$root/bench/peers" && timeout 600 "$venv/bin/python" -m unittest test_peers) \
       >"$logs/peers-current.log" 2>&1; then
  echo "FAIL: the peers' checks on the current packages"; tail -20 "$logs/peers-current.log"
  rc=1
fi
tail -1 "$logs/peers-current.log"
exit $rc
