"""What bench/report.py and bench/report_side.py both read: tabcl-bench's and
the peers' JSONL records, their units, how a peer figure finds its tabcl
counterpart and ratio, and how figures are written."""
import json
import re
import sys
from collections import OrderedDict

TIME_UNITS = {"s": 1e3, "ms": 1.0, "us": 1e-3, "ns": 1e-6}
BENCH_ORDER = ["lookup", "sort", "hash", "attention", "copy"]


def read_jsonl(path):
    out, bad = [], 0
    if not path:
        return out
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    bad += 1
                    continue
                if all(k in r for k in ("bench", "case", "metric", "value")):
                    out.append(r)
                else:
                    bad += 1
    except OSError as e:
        print("report: cannot read %s: %s" % (path, e), file=sys.stderr)
    if bad:
        print("report: %s: %d lines not understood" % (path, bad), file=sys.stderr)
    return out


def index(records):
    """{(bench, case): OrderedDict(metric -> record)}, later lines winning."""
    by = OrderedDict()
    for r in records:
        by.setdefault((r["bench"], str(r["case"])), OrderedDict())[r["metric"]] = r
    return by


def as_ms(r):
    f = TIME_UNITS.get(r.get("unit", ""))
    return None if f is None else float(r["value"]) * f


GENERIC = {"time", "total", "median", "device", "kernel", "all"}
SYNONYMS = {"query": "lookup", "queries": "lookup", "find": "lookup", "get": "lookup",
            "build": "fit", "index": "fit", "flops": "tflops", "gflops": "tflops"}


def words(metric, bench):
    """The words of a metric name that say what was measured: not the unit,
    the peer, the bench's own name or generic ones."""
    ws = set()
    for w in re.split(r"[_\W]+", metric.lower()):
        w = SYNONYMS.get(w, w)
        if w and w not in TIME_UNITS and w not in GENERIC and w != bench and \
                w not in ("per", "torch", "gpu", "pandas", "pyarrow", "math", "cold"):
            ws.add(w)
    return ws


def counterpart(tabcl_metrics, peer):
    """The tabcl record to compare a peer record with, or None. Only a peer
    figure that names one (vs) is compared: by that name, else the tabcl
    figure of the same kind saying the same thing in other words."""
    vs = peer.get("vs")
    if not vs or peer.get("unit") == "bool":
        return None
    if vs in tabcl_metrics and same_kind(tabcl_metrics[vs], peer):
        return tabcl_metrics[vs]
    bench = peer["bench"]
    cands = [t for t in tabcl_metrics.values() if same_kind(t, peer)]
    want = words(vs, bench)
    if want:
        best = [t for t in cands if words(t["metric"], bench) & want]
    else:  # e.g. "attention_ms": the bench's plain time
        best = [t for t in cands if not words(t["metric"], bench)] or cands
    return best[0] if len(best) == 1 else None


def same_kind(t, p):
    tu, pu = t.get("unit", ""), p.get("unit", "")
    return tu == pu or (tu in TIME_UNITS and pu in TIME_UNITS)


def ratio(t, p):
    """(tabcl/peer, whether tabcl is the faster) for two records of one kind."""
    if t.get("unit") in TIME_UNITS:
        tv, pv = as_ms(t), as_ms(p)
        if not tv or not pv:
            return None, None
        return tv / pv, tv < pv
    tv, pv = float(t["value"]), float(p["value"])
    if not tv or not pv:
        return None, None
    return tv / pv, tv > pv


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    v = float(v)
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1000:
        return "%.0f" % v
    if a >= 100:
        return "%.1f" % v
    if a >= 1:
        return "%.3g" % v if a < 10 else "%.1f" % v
    return "%.3g" % v


def fig(r):
    return "%s %s" % (fmt(r["value"]), r.get("unit", "")) if r else ""


def bench_md_header(path):
    """tabcl-bench's first line ("tabcl-bench VERSION on DEVICE ..."), from
    its Markdown output, or "" where there is none."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("# tabcl-bench"):
                    return line[2:].strip()
    except OSError:
        pass
    return ""
