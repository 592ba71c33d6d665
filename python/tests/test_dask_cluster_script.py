"""bench/dask_cluster.py (the multi-worker Dask run of issue 21) at a small
size on the CPU device with two workers sharing it: it must finish, find its
own checks passed (codes equal across one worker, two workers, this process
and pandas; attention equal bit for bit), and record what it ran."""
import json
import os
import subprocess
import sys

import pytest

import tabcl

from conftest import ROOT

pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")


def test_dask_cluster_script_two_workers_on_the_cpu(tmp_path):
    cpus = [d for d in tabcl.devices() if d.type == "cpu"]
    if not cpus:
        pytest.skip("no CPU OpenCL device")
    sel = cpus[0].selector
    out = tmp_path / "dask.json"
    env = dict(os.environ)
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "dask_cluster.py"), "--rows", "60000",
                        "--partitions", "4", "--attn-batch", "64", "--reps", "1", "--seed", "7",
                        "--devices", "%s,%s" % (sel, sel), "--out", str(out)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    d = json.loads(out.read_text())
    assert d["failures"] == []
    assert d["one_vs_all_workers"] == {"codes_equal": True, "attention_bitwise": True}
    assert d["rows"] == 60000 and d["devices"] == [sel, sel]
    assert d["single_process"]["mismatches"] == []
    assert d["single_process"]["partitions_checked"] == 4
    # unknown and null labels are among the rows, so -1 codes are too
    assert 0.03 < d["minus_one_share"] < 0.12
