#!/usr/bin/env python3
"""tabcl's multi-worker Dask path (issue 21): categorical encoding and
attention on a distributed.LocalCluster with one worker process per device.

    python3 bench/dask_cluster.py --devices 0:0,0:1 --out dask.json
    python3 bench/dask_cluster.py --devices 0:0,0:0 --rows 3000000 --attn-batch 2000 --out x.json

One worker per --devices entry (a tabcl selector; the same one may repeat:
then the workers share that device), each with its own TABCL_DEVICE, one
thread, no memory limit. For each cluster (one worker, then all of them):

1. a Dask DataFrame of --rows rows in --partitions partitions is generated on
   the workers (dd.from_map, deterministic from --seed and the partition
   number), persisted, and timed: "generate";
2. tabcl.dask.encode of its categorical columns over the persisted frame,
   each partition's codes reduced on its worker to a digest (sha256 of each
   code column, count of -1): "encode" (generation excluded; the best of
   --reps runs, 2 by default);
3. a [--attn-batch, 54, 8, 64] f32 attention batch split in --attn-slices
   slices, q, k and v generated on the workers (deterministic from the seed
   and the slice) and kept there ("attention generate"), then tabcl.sdpa on
   each worker's own context, reduced to a digest: "attention" (best of
   --reps).

Checks (exit status 1 when any fails): the workers' TABCL_DEVICE is their
own; one worker and all workers give the same digests; this process (its own
tabcl.Context on the first selector) regenerates every partition, looks it up
with idx.lookup and gets the same digests, and a few partitions equal a
pandas/dict reference; this process's attention on the same slices equals
the workers' bit for bit (else the largest absolute difference, on the
values the workers sent back, must stay within 1e-5), and a few rows equal
a float64 numpy reference. --skip-single leaves out this process's run (the
pandas and numpy references still run on a few partitions and rows).

Labels: three columns with labels of 8, 16, 64 and 512 bytes, about 5% of
rows labels outside the fitted vocabulary and 2% nulls; Arrow large_string
columns (pd.ArrowDtype, or pandas' "string[pyarrow]" with --string-dtype
string) when pyarrow is importable, else numpy object columns. Prints a
markdown table and writes every figure to --out (JSON).
"""
import argparse
import hashlib
import json
import math
import os
import platform
import sys
import time
import types

import numpy as np
import pandas as pd

# Columns: name, fitted vocabulary size, (label length in bytes, share of the
# vocabulary). Labels are drawn uniformly from the vocabulary, so a length's
# share of rows is its share of the vocabulary (city: 5% of rows 512 bytes).
COLUMNS = (
    ("country", 300, ((8, 0.5), (16, 0.5))),
    ("city", 50_000, ((8, 0.4), (16, 0.3), (64, 0.25), (512, 0.05))),
    ("sku", 200_000, ((16, 0.5), (64, 0.5))),
)
UNKNOWN_LABELS = 2_000      # per column, none of them in the fitted vocabulary
NULL_SHARE = 0.02
UNKNOWN_SHARE = 0.05
ATTN_SHAPE = (54, 8, 64)    # tokens, heads, head dim
ATTN_TOL = 1e-5
SAMPLE_VALUES = 1 << 20     # attention values sent back beside a digest
FULL_VALUES = 1 << 22       # up to this many, the whole output comes back
DIGEST_CHUNK = 64 << 20     # bytes: larger buffers are hashed in chunks, in threads


# ---------------------------------------------------------------- data

def _process_cache():
    """A dict kept for the life of this process (the worker's functions come
    pickled by value, so a module of their own would not be shared)."""
    name = "_tabcl_dask_cluster_cache"
    mod = sys.modules.get(name)
    if mod is None:
        mod = types.ModuleType(name)
        mod.data = {}
        sys.modules[name] = mod
    return mod.data


def _labels(rng, tag, count, mix):
    """count distinct ASCII labels, lengths drawn from mix; each starts with
    tag and its number in hex, then random letters up to its length."""
    lengths = np.array([l for l, _ in mix])
    share = np.array([s for _, s in mix], dtype=np.float64)
    per = rng.choice(lengths, size=count, p=share / share.sum())
    letters = rng.integers(97, 123, size=int(per.sum()), dtype=np.uint8).tobytes().decode()
    out, pos = [], 0
    for i, n in enumerate(per.tolist()):
        head = "%s%x:" % (tag, i)
        assert len(head) <= n, (head, n)
        out.append(head + letters[pos:pos + n - len(head)])
        pos += n
    return out


def vocabularies(seed):
    """Per column: (fitted labels, unknown labels), the same for a seed in
    every process."""
    cache = _process_cache()
    key = ("vocab", seed)
    if key not in cache:
        vocab = []
        for c, (name, size, mix) in enumerate(COLUMNS):
            rng = np.random.default_rng([seed, 0x70CAB, c])
            tag = chr(ord("a") + c)
            vocab.append((_labels(rng, tag + "k", size, mix),
                          _labels(rng, tag + "u", UNKNOWN_LABELS, mix)))
        cache[key] = vocab
    return cache[key]


def _label_arrays(seed, kind):
    """Per column, fitted and unknown labels as one array to take rows from
    (Arrow large_string or numpy object)."""
    cache = _process_cache()
    key = ("arrays", seed, kind)
    if key not in cache:
        arrays = []
        for known, unknown in vocabularies(seed):
            if kind == "object":
                arrays.append(np.array(known + unknown, dtype=object))
            else:
                import pyarrow as pa
                arrays.append(pa.array(known + unknown, type=pa.large_string()))
        cache[key] = arrays
    return cache[key]


def _series(values, kind):
    if kind == "object":
        return pd.Series(values, dtype=object)
    if kind == "string":
        return pd.Series(pd.arrays.ArrowStringArray(values))
    return pd.Series(pd.arrays.ArrowExtensionArray(values))


def make_partition(spec):
    """Partition spec = (seed, part, first row, rows, kind): a pandas frame
    with a row number column and the categorical columns; vectorised (numpy
    indices into the vocabulary, then one take or fancy index a column)."""
    seed, part, start, n, kind = spec
    arrays = _label_arrays(seed, kind)
    rng = np.random.default_rng([seed, 0xDA7A, part])
    data = {"row": np.arange(start, start + n, dtype=np.int64)}
    for c, (name, size, _) in enumerate(COLUMNS):
        r = rng.random(n, dtype=np.float32)
        ix = rng.integers(0, size, n, dtype=np.int32)
        unk = (r >= NULL_SHARE) & (r < NULL_SHARE + UNKNOWN_SHARE)
        ix[unk] = size + ix[unk] % UNKNOWN_LABELS
        null = r < NULL_SHARE
        if kind == "object":
            col = arrays[c][ix]
            col[null] = None
        else:
            import pyarrow as pa
            col = arrays[c].take(pa.array(ix, mask=null))
        data[name] = _series(col, kind)
    return pd.DataFrame(data)


def partition_specs(seed, rows, parts, kind):
    bounds = np.linspace(0, rows, parts + 1).astype(np.int64)
    return [(seed, p, int(bounds[p]), int(bounds[p + 1] - bounds[p]), kind) for p in range(parts)]


def digest(a):
    """sha256 of an array's bytes; past DIGEST_CHUNK bytes, sha256 over the
    sha256 of each DIGEST_CHUNK-byte chunk, hashed in threads (hashlib lets
    go of the GIL), the same wherever it runs."""
    mv = memoryview(np.ascontiguousarray(a)).cast("B")
    if len(mv) <= DIGEST_CHUNK:
        return hashlib.sha256(mv).hexdigest()
    from concurrent.futures import ThreadPoolExecutor
    chunks = [mv[i:i + DIGEST_CHUNK] for i in range(0, len(mv), DIGEST_CHUNK)]
    with ThreadPoolExecutor(min(8, os.cpu_count() or 1)) as pool:
        parts = list(pool.map(lambda c: hashlib.sha256(c).digest(), chunks))
    return "chunks:" + hashlib.sha256(b"".join(parts)).hexdigest()


def digest_codes(df, part, columns):
    """One partition's codes as a digest: sha256 and count of -1 a column,
    and whether the row numbers came through in order."""
    t0 = time.perf_counter()
    out = {"part": part, "rows": len(df), "cols": {}}
    for c in columns:
        a = np.ascontiguousarray(df[c].to_numpy())
        if a.dtype != np.int32:
            raise TypeError("column %s has dtype %s, not int32" % (c, a.dtype))
        out["cols"][c] = [digest(a), int(np.count_nonzero(a == -1))]
    if "row" in df:
        r = df["row"].to_numpy()
        out["row_first"] = int(r[0]) if len(r) else None
        out["rows_in_order"] = bool(len(r) == 0 or np.all(np.diff(r) == 1))
    out["worker"] = os.environ.get("TABCL_WORKER_NAME", "driver")
    out["digest_s"] = time.perf_counter() - t0
    return out


def attn_slices(batch, slices):
    bounds = np.linspace(0, batch, slices + 1).astype(np.int64)
    return [int(bounds[i + 1] - bounds[i]) for i in range(slices)]


def attn_inputs(seed, s, b):
    """q, k, v of slice s, [b, 54, 8, 64] f32 each, uniform in [-1, 1)."""
    rng = np.random.default_rng([seed, 0xA77E, s])
    out = []
    for _ in range(3):
        x = rng.random((b,) + ATTN_SHAPE, dtype=np.float32)
        x *= 2
        x -= 1
        out.append(x)
    return tuple(out)


def _attn_summary(o):
    flat = o.reshape(-1)
    if flat.size <= FULL_VALUES:
        step, values = 1, flat.copy()
    else:
        step = -(-flat.size // SAMPLE_VALUES)
        values = flat[::step].copy()
    return {"sha256": digest(o), "step": step, "values": values}


# ---------------------------------------------------------------- worker side

def worker_warm(idx_bytes, dask_worker=None):
    """On each worker, untimed: its context (kernel builds), the index loaded
    from its bytes, a small lookup and a small attention; says who it is."""
    import tabcl
    import tabcl.dask
    t0 = time.perf_counter()
    ctx = tabcl.dask._worker_context()
    t1 = time.perf_counter()
    idx = tabcl.dask._worker_index(idx_bytes)
    idx.lookup([["x", None]] * idx.num_columns)
    q = np.ones((2,) + ATTN_SHAPE, dtype=np.float32)
    tabcl.sdpa(ctx, q, q, q)
    return {"name": str(dask_worker.name) if dask_worker is not None else None,
            "pid": os.getpid(), "TABCL_DEVICE": os.environ.get("TABCL_DEVICE"),
            "device": ctx.device_name, "platform": ctx.platform_name,
            "context_s": t1 - t0, "warm_s": time.perf_counter() - t0}


def worker_attn_inputs(seed, s, b):
    return attn_inputs(seed, s, b)


def worker_attn_run(qkv, s):
    import tabcl
    import tabcl.dask
    ctx = tabcl.dask._worker_context()
    t0 = time.perf_counter()
    o = tabcl.sdpa(ctx, *qkv)
    t1 = time.perf_counter()
    out = _attn_summary(o)
    out.update(slice=s, sdpa_s=t1 - t0, digest_s=time.perf_counter() - t1,
               worker=os.environ.get("TABCL_WORKER_NAME"))
    return out


# ---------------------------------------------------------------- driver side

def start_cluster(selectors, distributed):
    """A LocalCluster of one process per selector, each started with its own
    environment (LocalCluster's env= would be the same for all)."""
    cluster = distributed.LocalCluster(n_workers=0, threads_per_worker=1, processes=True,
                                       dashboard_address=None, memory_limit=0)
    base = cluster.new_spec
    for i, sel in enumerate(selectors):
        opts = dict(base["options"])
        env = dict(opts.get("env") or {})
        env.update(TABCL_DEVICE=sel, TABCL_WORKER_NAME="w%d" % i)
        if os.environ.get("TABCL_CACHE_DIR") is not None:
            env["TABCL_CACHE_DIR"] = os.environ["TABCL_CACHE_DIR"]
        opts.update(env=env, name="w%d" % i)
        cluster.worker_spec["w%d" % i] = {"cls": base["cls"], "options": opts}
    cluster.scale(len(selectors))
    client = distributed.Client(cluster)
    client.wait_for_workers(len(selectors), timeout=300)
    return cluster, client


def run_cluster(args, selectors, idx, columns, kind, log):
    """Generation, encode and attention on one cluster; its figures."""
    import dask
    import dask.dataframe as dd
    import distributed
    import tabcl.dask

    res = {"workers": len(selectors), "devices": list(selectors)}
    t0 = time.perf_counter()
    cluster, client = start_cluster(selectors, distributed)
    try:
        res["start_s"] = time.perf_counter() - t0
        idx_bytes = idx.to_bytes()
        info = client.run(worker_warm, idx_bytes)
        res["worker_info"] = sorted(info.values(), key=lambda w: str(w["name"]))
        log("  %d worker(s) up in %.1f s; warm-up (context, index, kernels): %s" % (
            len(info), res["start_s"],
            ", ".join("%s %.1f s" % (w["name"], w["warm_s"]) for w in res["worker_info"])))

        # generation, persisted on the workers
        specs = partition_specs(args.seed, args.rows, args.partitions, kind)
        meta = make_partition((args.seed, 0, 0, 0, kind))
        ddf = dd.from_map(make_partition, specs, meta=meta, label="tabcl-rows",
                          enforce_metadata=False)
        t0 = time.perf_counter()
        ddf = ddf.persist()
        distributed.wait(ddf)
        res["generate_s"] = time.perf_counter() - t0
        log("  generate %d rows in %d partitions: %.2f s" % (args.rows, args.partitions,
                                                              res["generate_s"]))
        # encode over the persisted frame, each partition reduced to a digest
        # there; --reps times, the best taken (the first also builds kernels for
        # the real sizes and touches fresh memory)
        res["encode_s_reps"], digests = [], None
        for rep in range(args.reps):
            t0 = time.perf_counter()
            enc = tabcl.dask.encode(ddf, idx, columns)
            tasks = [dask.delayed(digest_codes, pure=False)(p, i, columns)
                     for i, p in enumerate(enc.to_delayed())]
            got = list(dask.compute(*tasks))
            res["encode_s_reps"].append(time.perf_counter() - t0)
            if digests is not None and [d["cols"] for d in got] != [d["cols"] for d in digests]:
                raise RuntimeError("encode gave other codes on repetition %d" % rep)
            digests = got
            del enc, tasks
        res["encode_s"] = min(res["encode_s_reps"])
        res["encode_digest_s_sum"] = sum(d["digest_s"] for d in digests)
        res["partitions_per_worker"] = _count(d["worker"] for d in digests)
        log("  encode: %s s, best %.2f s (%.1f M rows/s); partitions per worker %s" % (
            ", ".join("%.2f" % t for t in res["encode_s_reps"]), res["encode_s"],
            args.rows / res["encode_s"] / 1e6, res["partitions_per_worker"]))
        del ddf

        # attention: inputs made and kept on the workers, then timed
        sizes = attn_slices(args.attn_batch, args.attn_slices)
        names = [w["name"] for w in res["worker_info"]]
        addr = {w["name"]: a for a, w in info.items()}
        where = [[addr[names[s % len(names)]]] for s in range(len(sizes))]
        t0 = time.perf_counter()
        inputs = [client.submit(worker_attn_inputs, args.seed, s, b, pure=False,
                                workers=where[s]) for s, b in enumerate(sizes)]
        distributed.wait(inputs)
        res["attn_generate_s"] = time.perf_counter() - t0
        res["attention_s_reps"], attn = [], None
        for rep in range(args.reps):
            t0 = time.perf_counter()
            runs = [client.submit(worker_attn_run, f, s, pure=False, workers=where[s])
                    for s, f in enumerate(inputs)]
            got = client.gather(runs)
            res["attention_s_reps"].append(time.perf_counter() - t0)
            per_worker = {}
            for a in got:
                per_worker[a["worker"]] = per_worker.get(a["worker"], 0.0) + a["sdpa_s"]
            res.setdefault("sdpa_s_reps", []).append(max(per_worker.values()))
            if attn is not None and [a["sha256"] for a in got] != [a["sha256"] for a in attn]:
                res.setdefault("attention_repeat_differs", []).append(rep)
            attn = got
            del runs
        res["attention_s"] = min(res["attention_s_reps"])
        res["sdpa_s"] = min(res["sdpa_s_reps"])
        log("  attention [%d, %d, %d, %d] f32 in %d slices: inputs %.2f s, sdpa + digest %s s, "
            "best %.2f s (sdpa alone, busiest worker: %.2f s)" % ((args.attn_batch,) + ATTN_SHAPE + (
                len(sizes), res["attn_generate_s"],
                ", ".join("%.2f" % t for t in res["attention_s_reps"]), res["attention_s"],
                res["sdpa_s"])))
        del inputs
    finally:
        client.close()
        cluster.close()
    return res, digests, attn


def _count(items):
    out = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return dict(sorted(out.items()))


def pandas_reference(df, seed, columns, rows, rng):
    """Codes by pandas (Index.get_indexer over the fitted vocabulary) for the
    first rows, and by a plain dict for a sample of them."""
    vocab = vocabularies(seed)
    out = []
    for c, name in enumerate(columns):
        known = vocab[c][0]
        labels = df[name].iloc[:rows].to_numpy(dtype=object)
        codes = pd.Index(known, dtype=object).get_indexer(labels).astype(np.int32)
        table = {label: i for i, label in enumerate(known)}
        pick = rng.choice(len(labels), size=min(len(labels), 20_000), replace=False)
        by_dict = np.array([-1 if not isinstance(labels[i], str) else table.get(labels[i], -1)
                            for i in pick], dtype=np.int32)
        if not np.array_equal(codes[pick], by_dict):
            raise AssertionError("pandas and dict references differ on column %s" % name)
        out.append(codes)
    return out


def reference_attention(q, k, v):
    qd, kd, vd = (x.astype(np.float64) for x in (q, k, v))
    s = np.einsum("blhd,bmhd->bhlm", qd, kd) / math.sqrt(q.shape[-1])
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhlm,bmhd->blhd", p, vd)


def single_process(args, ctx, idx, columns, kind, want_codes, want_attn, log):
    """This process on its own context: the same partitions and slices,
    compared with the workers'; the pandas and numpy references."""
    import tabcl
    res = {"generate_s": 0.0, "lookup_s": 0.0, "digest_s": 0.0, "mismatches": []}
    specs = partition_specs(args.seed, args.rows, args.partitions, kind)
    rng = np.random.default_rng([args.seed, 0xC4EC])
    ref_parts = sorted({0, len(specs) // 2, len(specs) - 1})
    res["pandas_checked"] = []
    for spec in specs:
        p = spec[1]
        if args.skip_single and p not in ref_parts:
            continue
        t0 = time.perf_counter()
        df = make_partition(spec)
        t1 = time.perf_counter()
        codes = idx.lookup([df[c] for c in columns])
        t2 = time.perf_counter()
        res["generate_s"] += t1 - t0
        res["lookup_s"] += t2 - t1
        enc = df.copy()
        for c, k in zip(columns, codes):
            enc[c] = k
        got = digest_codes(enc, p, columns)
        res["digest_s"] += got["digest_s"]
        want = want_codes[p]
        if got["cols"] != want["cols"] or got["rows"] != want["rows"]:
            res["mismatches"].append({"part": p, "driver": got["cols"], "workers": want["cols"]})
        if p in ref_parts:
            n = min(len(df), 500_000)
            ref = pandas_reference(df, args.seed, columns, n, rng)
            for c, name in enumerate(columns):
                if not np.array_equal(codes[c][:n], ref[c]):
                    bad = int(np.flatnonzero(codes[c][:n] != ref[c])[0])
                    res["mismatches"].append({"part": p, "column": name, "row": bad,
                                              "tabcl": int(codes[c][bad]), "pandas": int(ref[c][bad])})
            res["pandas_checked"].append({"part": p, "rows": n})
    res["partitions_checked"] = len(specs) if not args.skip_single else len(ref_parts)
    log("  encode check: %d partitions against this process, %d against pandas: %s" % (
        res["partitions_checked"], len(ref_parts),
        "equal" if not res["mismatches"] else "%d MISMATCHES" % len(res["mismatches"])))

    sizes = attn_slices(args.attn_batch, args.attn_slices)
    res["attn_generate_s"] = res["sdpa_s"] = res["attention_s"] = 0.0
    res["attn"] = []
    for s, b in enumerate(sizes):
        if args.skip_single and s != 0:
            continue
        t0 = time.perf_counter()
        q, k, v = attn_inputs(args.seed, s, b)
        t1 = time.perf_counter()
        o = tabcl.sdpa(ctx, q, k, v)
        t2 = time.perf_counter()
        mine = _attn_summary(o)["sha256"]
        res["attn_generate_s"] += t1 - t0
        res["sdpa_s"] += t2 - t1
        res["attention_s"] += time.perf_counter() - t1
        w = want_attn[s]
        entry = {"slice": s, "bitwise": mine == w["sha256"]}
        if not entry["bitwise"]:
            mine = o.reshape(-1)[::w["step"]]
            entry["max_abs_diff"] = float(np.max(np.abs(mine.astype(np.float64) - w["values"])))
            entry["diff_on"] = "all values" if w["step"] == 1 else \
                "every %d-th value (%d)" % (w["step"], len(w["values"]))
        if s == 0:
            n = min(b, 4)
            entry["numpy_f64_max_abs_err"] = float(np.max(np.abs(
                reference_attention(q[:n], k[:n], v[:n]) - o[:n])))
        res["attn"].append(entry)
        del q, k, v, o
    bad = [a for a in res["attn"] if not a["bitwise"] and a["max_abs_diff"] > ATTN_TOL]
    bad += [a for a in res["attn"] if a.get("numpy_f64_max_abs_err", 0) > 1e-4]
    res["attn_failures"] = len(bad)
    log("  attention check: %s; numpy f64 reference on %d rows: max abs err %.2e" % (
        ", ".join("slice %d %s" % (a["slice"], "bitwise equal" if a["bitwise"] else
                                   "max abs diff %.2e on %s" % (a["max_abs_diff"], a["diff_on"]))
                  for a in res["attn"]),
        min(sizes[0], 4), res["attn"][0]["numpy_f64_max_abs_err"]))
    return res


def versions():
    out = {"python": platform.python_version(), "numpy": np.__version__, "pandas": pd.__version__}
    for m in ("dask", "distributed", "pyarrow", "tabcl"):
        try:
            out[m] = __import__(m).__version__
        except ImportError:
            out[m] = None
    return out


def fmt(x, spec="%.2f"):
    return "-" if x is None else spec % x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--partitions", type=int, default=None,
                    help="default: max(4 per worker, one per 2.5 M rows)")
    ap.add_argument("--devices", default="0:0,0:0",
                    help="comma-separated tabcl selectors, one worker each (default 0:0,0:0)")
    ap.add_argument("--attn-batch", type=int, default=60_000)
    ap.add_argument("--attn-slices", type=int, default=None,
                    help="slices of the attention batch (default: one per worker)")
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--reps", type=int, default=2,
                    help="timed repetitions of encode and attention on a cluster; the best is "
                    "reported, every one is in the JSON (default 2)")
    ap.add_argument("--string-dtype", choices=("auto", "arrow", "string", "object"),
                    default="auto", help="auto: arrow (pd.ArrowDtype large_string) when pyarrow "
                    "is importable, else object; string: pandas' string[pyarrow]")
    ap.add_argument("--out", required=True, help="JSON file of the figures")
    ap.add_argument("--skip-single", action="store_true",
                    help="leave out this process's full run (references on a few partitions stay)")
    args = ap.parse_args()

    selectors = [s.strip() for s in args.devices.split(",") if s.strip()]
    if not selectors:
        ap.error("--devices names no selector")
    if args.partitions is None:
        args.partitions = max(4 * len(selectors), -(-args.rows // 2_500_000))
    if args.attn_slices is None:
        args.attn_slices = len(selectors)
    if args.rows < args.partitions or args.attn_batch < args.attn_slices or args.reps < 1:
        ap.error("fewer rows than partitions, a smaller attention batch than slices, "
                 "or --reps below 1")
    kind = args.string_dtype
    try:
        import pyarrow  # noqa: F401
        have_arrow = True
    except ImportError:
        have_arrow = False
    if kind == "auto":
        kind = "arrow" if have_arrow else "object"
    elif kind != "object" and not have_arrow:
        ap.error("--string-dtype %s needs pyarrow" % kind)

    import tabcl

    def log(msg):
        print(msg, flush=True)

    columns = [c[0] for c in COLUMNS]
    log("tabcl %s, seed %d, %d rows, %d partitions, columns %s (%s), devices %s" % (
        tabcl.__version__, args.seed, args.rows, args.partitions, ", ".join(columns),
        {"arrow": "pd.ArrowDtype(large_string)", "string": "string[pyarrow]",
         "object": "numpy object"}[kind], ",".join(selectors)))
    ctx = tabcl.Context(device=selectors[0])
    t0 = time.perf_counter()
    vocab = vocabularies(args.seed)
    idx = tabcl.CategoryIndex.fit(ctx, [known for known, _ in vocab])
    fit_s = time.perf_counter() - t0
    log("driver: %s (%s); fitted %s labels in %.2f s (vocabularies made here)" % (
        ctx.device_name, ctx.platform_name, "+".join(str(len(k)) for k, _ in vocab), fit_s))

    report = {"issue": 21, "seed": args.seed, "rows": args.rows, "partitions": args.partitions,
              "columns": {c[0]: {"vocabulary": c[1], "label_bytes": dict(c[2])} for c in COLUMNS},
              "unknown_share": UNKNOWN_SHARE, "null_share": NULL_SHARE,
              "string_dtype": kind, "devices": selectors,
              "attention": {"shape": [args.attn_batch] + list(ATTN_SHAPE), "dtype": "float32",
                            "slices": attn_slices(args.attn_batch, args.attn_slices)},
              "versions": versions(), "host": {"cpus": os.cpu_count(), "node": platform.node()},
              "driver": {"device": ctx.device_name, "platform": ctx.platform_name, "fit_s": fit_s},
              "timing_notes": (
                  "generate_s: from_map partitions made and persisted on the workers; "
                  "encode_s: tabcl.dask.encode over the persisted frame plus a sha256 digest "
                  "of each partition's codes on its worker (generation excluded); "
                  "attn_generate_s: q, k, v made and kept on the workers; attention_s: "
                  "tabcl.sdpa on those plus a sha256 of each output, on the workers; "
                  "encode_s and attention_s are the best of --reps runs (all in *_reps); "
                  "single process: the same partitions and slices in this process, one pass, "
                  "generation, lookup (or sdpa) and digest timed apart. "
                  "Workers are warmed first (context, index, kernels), untimed."),
              "failures": []}
    failures = report["failures"]

    runs = {}
    configs = [("1 worker", selectors[:1])]
    if len(selectors) > 1:
        configs.append(("%d workers" % len(selectors), selectors))
    for label, sels in configs:
        log("%s (%s):" % (label, ",".join(sels)))
        res, digests, attn = run_cluster(args, sels, idx, columns, kind, log)
        for w in res["worker_info"]:
            want = sels[int(str(w["name"]).lstrip("w"))]
            if w["TABCL_DEVICE"] != want:
                failures.append("%s: worker %s has TABCL_DEVICE=%r, not %r" % (
                    label, w["name"], w["TABCL_DEVICE"], want))
        if len({w["pid"] for w in res["worker_info"]} | {os.getpid()}) != len(sels) + 1:
            failures.append("%s: workers do not each have a process of their own" % label)
        if not all(d["rows_in_order"] for d in digests):
            failures.append("%s: row numbers out of order after encode" % label)
        if [d["row_first"] for d in digests] != [s[2] for s in partition_specs(
                args.seed, args.rows, args.partitions, kind)]:
            failures.append("%s: partitions out of order" % label)
        runs[label] = (res, digests, attn)

    first, _, first_attn = runs[configs[0][0]]
    base_digests = runs[configs[0][0]][1]
    nulls_unknown = sum(d["cols"][c][1] for d in base_digests for c in columns)
    report["minus_one_share"] = nulls_unknown / (args.rows * len(columns))
    if len(configs) > 1:
        _, dig_n, attn_n = runs[configs[1][0]]
        same_codes = [d["cols"] for d in dig_n] == [d["cols"] for d in base_digests]
        same_attn = [a["sha256"] for a in attn_n] == [a["sha256"] for a in first_attn]
        report["one_vs_all_workers"] = {"codes_equal": same_codes, "attention_bitwise": same_attn}
        log("1 worker vs %s: codes %s, attention %s" % (
            configs[1][0], "equal" if same_codes else "DIFFER",
            "bitwise equal" if same_attn else "not bitwise equal"))
        if not same_codes:
            failures.append("codes differ between 1 worker and all workers")
        if not same_attn:
            # not bitwise across runs: judged on the values below, against this process
            pass
    last_label = configs[-1][0]
    _, want_codes, want_attn = runs[last_label]

    log("single process (%s, this process's context):" % selectors[0])
    single = single_process(args, ctx, idx, columns, kind, want_codes, want_attn, log)
    if single["mismatches"]:
        failures.append("%d code mismatches against this process or pandas (first: %s)" % (
            len(single["mismatches"]), single["mismatches"][0]))
    if single["attn_failures"]:
        failures.append("attention differs beyond %g (or from numpy beyond 1e-4)" % ATTN_TOL)
    if len(configs) > 1 and not report["one_vs_all_workers"]["attention_bitwise"]:
        # the 1-worker run's slices against this process too
        for a, b in zip(first_attn, want_attn):
            if a["sha256"] != b["sha256"]:
                d = float(np.max(np.abs(a["values"].astype(np.float64) - b["values"])))
                if d > ATTN_TOL:
                    failures.append("attention slice %d: 1 worker and all workers differ by %.2e"
                                    % (a["slice"], d))

    # figures
    table = []
    base = runs[configs[0][0]][0]
    for label, _ in configs:
        res = runs[label][0]
        table.append({
            "run": label, "workers": res["workers"], "devices": ",".join(res["devices"]),
            "device_names": "; ".join("%s: %s" % (w["name"], w["device"]) for w in res["worker_info"]),
            "generate_s": res["generate_s"], "encode_s": res["encode_s"],
            "encode_mrows_s": args.rows / res["encode_s"] / 1e6,
            "attn_generate_s": res["attn_generate_s"], "attention_s": res["attention_s"],
            "sdpa_s": res["sdpa_s"],
            "generate_ratio": res["generate_s"] / base["generate_s"],
            "encode_ratio": res["encode_s"] / base["encode_s"],
            "attention_ratio": res["attention_s"] / base["attention_s"]})
    if not args.skip_single:
        enc_s = single["lookup_s"] + single["digest_s"]
        table.append({
            "run": "single process", "workers": 0, "devices": selectors[0],
            "device_names": "driver: %s" % ctx.device_name,
            "generate_s": single["generate_s"], "encode_s": enc_s,
            "encode_mrows_s": args.rows / enc_s / 1e6,
            "attn_generate_s": single["attn_generate_s"], "attention_s": single["attention_s"],
            "sdpa_s": single["sdpa_s"],
            "generate_ratio": None, "encode_ratio": None, "attention_ratio": None})
    report["runs"] = {label: runs[label][0] for label, _ in configs}
    report["partition_digests"] = want_codes
    report["attention_digests"] = [{k: v for k, v in a.items() if k != "values"} for a in want_attn]
    report["single_process"] = single
    report["table"] = table

    log("")
    log("rows %s, partitions %d, attention [%d, %d, %d, %d] f32 in %d slices, seed %d, %s columns"
        % (f"{args.rows:,}", args.partitions, *([args.attn_batch] + list(ATTN_SHAPE)),
           args.attn_slices, args.seed, kind))
    log("")
    log("| run | workers | devices | device names | generate s | encode s | M rows/s | "
        "attn inputs s | attention s | sdpa s | ratio generate / encode / attention |")
    log("|---|---|---|---|---|---|---|---|---|---|---|")
    for t in table:
        ratio = "-" if t["encode_ratio"] is None else "%.2f / %.2f / %.2f" % (
            t["generate_ratio"], t["encode_ratio"], t["attention_ratio"])
        log("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            t["run"], t["workers"], t["devices"], t["device_names"], fmt(t["generate_s"]),
            fmt(t["encode_s"]), fmt(t["encode_mrows_s"], "%.1f"), fmt(t["attn_generate_s"]),
            fmt(t["attention_s"]), fmt(t["sdpa_s"]), ratio))
    log("")
    log("ratio: time with that many workers / time with 1 worker. generate: partitions made and "
        "persisted on the workers. encode: tabcl.dask.encode over the persisted frame plus a "
        "sha256 of each partition's codes on its worker, best of %d (single process: idx.lookup "
        "and the same sha256, one pass). attention: tabcl.sdpa plus a sha256 of its output on "
        "the workers, best of %d; sdpa: tabcl.sdpa alone, the busiest worker's sum. "
        "-1 share (null or unknown): %.2f%%." % (args.reps, args.reps,
                                                   100 * report["minus_one_share"]))

    with open(args.out, "w") as f:
        json.dump(report, f, indent=1, default=_json_default)
    if failures:
        for msg in failures:
            log("FAIL: " + msg)
        sys.exit(1)
    log("all checks passed; figures in %s" % args.out)


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(type(x))


if __name__ == "__main__":
    main()
