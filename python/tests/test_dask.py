"""tabcl.dask.encode on a distributed.LocalCluster of two worker processes
on the CPU device: equal to the single-process lookup (and to pandas),
unknown and null labels included; the index reaches the workers as bytes."""
import os

import numpy as np
import pandas as pd
import pytest

import tabcl
import tabcl.dask

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")


def cpu_selector():
    cpus = [d for d in tabcl.devices() if d.type == "cpu"]
    if not cpus:
        pytest.skip("no CPU OpenCL device")
    return cpus[0].selector


def frame(data_dir):
    df = pd.read_csv(data_dir / "airports.csv", dtype=str, keep_default_na=False,
                     na_values=[""])[["iata", "state", "city", "country"]]
    extra = pd.DataFrame({"iata": ["ZZ1", "ZZ2", "ZZ3"], "state": [None, "XX", "MS"],
                          "city": ["Nowhere", None, "Bay Springs"], "country": ["USA"] * 3})
    return pd.concat([df, extra], ignore_index=True)


def test_encode_on_two_workers(ctx, data_dir):
    df = frame(data_dir)
    half = df.iloc[: len(df) // 2]
    columns = ["state", "city"]
    # distinct labels, so that pandas' categories give the same codes
    vocab = {c: [v for v in pd.unique(half[c]) if isinstance(v, str)] for c in columns}
    idx = tabcl.CategoryIndex.fit(ctx, [vocab[c] for c in columns])
    single = idx.lookup([df[c] for c in columns])
    env = {"TABCL_DEVICE": cpu_selector()}
    if os.environ.get("TABCL_CACHE_DIR"):
        env["TABCL_CACHE_DIR"] = os.environ["TABCL_CACHE_DIR"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, env=env) as cluster, \
            distributed.Client(cluster) as client:
        ddf = dd.from_pandas(df, npartitions=6)
        encoded = tabcl.dask.encode(ddf, idx, columns)
        assert encoded.dtypes["state"] == np.int32
        got = encoded.compute()
        owners = client.run(lambda: (os.getpid(), os.environ.get("TABCL_DEVICE"),
                                     tabcl.dask._context is not None))
    assert len(owners) == 2
    me = os.getpid()
    assert all(pid != me and dev == env["TABCL_DEVICE"] for pid, dev, _ in owners.values())
    assert any(has for _, _, has in owners.values()), "no worker made a tabcl context"
    pd.testing.assert_frame_equal(got[["iata", "country"]], df[["iata", "country"]])
    for c, want in zip(columns, single):
        np.testing.assert_array_equal(got[c].to_numpy(), want, err_msg=c)
        np.testing.assert_array_equal(got[c].to_numpy(),
                                      pd.Index(vocab[c]).get_indexer(df[c]))
    tail = got.iloc[-3:]
    assert tail["state"].tolist()[:2] == [-1, -1]     # null, unknown
    assert tail["city"].tolist()[:2] == [-1, -1]      # unknown, null
    assert tail["state"].iloc[2] >= 0 and tail["city"].iloc[2] >= 0


def test_encode_arguments(ctx):
    idx = tabcl.CategoryIndex.fit(ctx, [["a"]])
    ddf = dd.from_pandas(pd.DataFrame({"x": ["a", "b"]}), npartitions=1)
    with pytest.raises(tabcl.InvalidArgument, match="1 columns given|2 columns given"):
        tabcl.dask.encode(ddf, idx, ["x", "x"])
    with pytest.raises(tabcl.InvalidArgument, match="one name"):
        tabcl.dask.encode(ddf, idx, "x")
    with pytest.raises(tabcl.InvalidArgument, match="not in the DataFrame"):
        tabcl.dask.encode(ddf, idx, ["y"])
    # without a cluster, dask's local scheduler runs it in this process
    assert tabcl.dask.encode(ddf, idx, ["x"]).compute()["x"].tolist() == [0, -1]
