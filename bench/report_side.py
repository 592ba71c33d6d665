"""The side-by-side report of bench/run-cpu.sh: one tabcl-bench run per
OpenCL implementation (report.py --side NAME=DIR, DIR holding tabcl.jsonl and
tabcl-bench.md) beside the host peers, and which implementation is fastest
for each family. Imported by report.py."""
import math
from collections import OrderedDict

import report_common as R

# The figures compared, per family: (metric, +1 higher is better / -1 lower);
# each gets its own "fastest" line. "auto" is the
# attention path the library picks by itself: the CPU kernel's where it ran.
# libxxhash is timed inside tabcl-bench hash: its figures are taken from the
# first implementation's run (HOST_PEERS), as the other peers' inputs are.
FIGURES = OrderedDict([
    ("copy", [("copy_bandwidth", +1)]),
    ("hash", [("hash_GBps", +1)]),
    ("sort", [("sort_ms", -1)]),
    ("lookup", [("host_lookup_ms", -1), ("fit_ms", -1), ("lookup_ms", -1)]),
    ("align", [("host_align_ms", -1)]),
    ("attention", [("auto", -1)]),
])


HOST_PEERS = {"hash": ("xxhash_host_GBps", "xxhash_all_cores_GBps")}


def value(metrics, metric):
    """(record, the metric's name as shown) of one device's case, or (None, metric)."""
    if metric == "auto":
        for m in ("cpu_ms", "ms"):
            if m in metrics:
                return metrics[m], m
        return None, "ms"
    return metrics.get(metric), metric


def as_number(r):
    if r is None:
        return None
    v = R.as_ms(r) if r.get("unit") in R.TIME_UNITS else float(r["value"])
    return v if v and v > 0 else None


def device_header(name, path):
    first = R.bench_md_header(path + "/tabcl-bench.md")
    return "- %s: %s" % (name, first or "no tabcl-bench header")


def side_text(a):
    devs = OrderedDict()
    for s in a.side:
        name, _, path = s.partition("=")
        devs[name] = R.index(R.read_jsonl(path.rstrip("/") + "/tabcl.jsonl"))
    paths = OrderedDict((s.partition("=")[0], s.partition("=")[2].rstrip("/")) for s in a.side)
    peer = R.index(R.read_jsonl(a.peers))
    names = list(devs)
    out = ["## " + a.section if a.section else "# tabcl on the CPU's OpenCL implementations, side by side", ""]
    out += [device_header(n, paths[n]) for n in names]
    if a.command:
        out.append("- command: `%s`" % a.command)
    for n in a.note or []:
        out.append("- note: %s" % n)
    out += ["", "Times in ms (lower is faster), rates in GB/s (higher is faster); tabcl: OpenCL "
            "profiling events, host peers: wall clock; medians of repeated runs. The peers ran "
            "once, on the inputs of %s; libxxhash's figures come from its hash run. fastest/peer: the fastest "
            "implementation's figure over the best peer's; for times below 1, for rates above 1, means "
            "tabcl is the faster." % (names[0] if names else "-"), ""]
    summary, tables = [], []
    for fam, figs in FIGURES.items():
        cases = list(OrderedDict.fromkeys(c for n in names for b, c in devs[n] if b == fam))
        if not cases:
            continue
        wins = [OrderedDict((n, 0) for n in names) for _ in figs]
        rel = [OrderedDict((n, []) for n in names) for _ in figs]
        compared = [0] * len(figs)
        rows = []
        for c in cases:
            for i, (metric, sign) in enumerate(figs):
                recs, used = OrderedDict(), OrderedDict()
                for n in names:
                    r, m = value(devs[n].get((fam, c), OrderedDict()), metric)
                    recs[n] = r
                    if r is not None:
                        used[n] = m
                # the figure most implementations gave; a cell of another one says its own
                ms = list(used.values())
                shown = max(ms, key=ms.count) if ms else metric
                nums = OrderedDict((n, as_number(r)) for n, r in recs.items() if as_number(r))
                if not nums:
                    continue
                best = (max if sign > 0 else min)(nums, key=nums.get)
                if len(nums) >= 2:
                    compared[i] += 1
                    wins[i][best] += 1
                    if len(nums) == len(names):
                        for n, v in nums.items():
                            rel[i][n].append(v / nums[best] if sign < 0 else nums[best] / v)
                vs = "ms" if metric == "auto" else metric
                peers = [p for p in peer.get((fam, c), OrderedDict()).values()
                         if p.get("vs") == vs and p.get("unit") != "bool"]
                first = devs[names[0]].get((fam, c), OrderedDict())
                peers += [first[m] for m in HOST_PEERS.get(fam, ()) if i == 0 and m in first]
                pf = "; ".join("%s %s" % (p["metric"], R.fig(p)) for p in peers)
                pv = [as_number(p) for p in peers if as_number(p)]
                pr = ""
                if pv:
                    x = nums[best] / (min(pv) if sign < 0 else max(pv))
                    pr = R.fmt(x)
                rows.append("| %s | %s | %s | %s | %s | %s |" % (
                    c, shown, " | ".join(R.fig(recs[n]) + (" (%s)" % used[n] if used.get(n, shown) != shown else "")
                                         for n in names),
                    best if len(nums) >= 2 else "", pf, pr))
        if not rows:
            continue
        tables += ["", "## %s" % fam, "",
                   "| case | figure | %s | fastest | peer | fastest/peer |" % " | ".join(names),
                   "|---|---|%s---|---|---|" % ("---|" * len(names))] + rows
        for i, (metric, _) in enumerate(figs):
            if not compared[i]:
                continue
            w, g = wins[i], rel[i]
            order = sorted(names, key=lambda n: (-w[n], geomean(g[n]) or math.inf))
            summary.append("| %s | %s | %s | %s |" % (
                fam, metric if metric != "auto" else "the library's path (cpu_ms, else ms)", order[0],
                ", ".join("%s %d of %d%s" % (n, w[n], compared[i],
                                             (", %sx the fastest" % R.fmt(geomean(g[n]))) if g[n] else "")
                          for n in names)))
    out += ["#" * (3 if a.section else 2) + " Fastest implementation per family", "",
            "Counted over the cases that ran on two or more implementations; \"x the fastest\" is "
            "the geometric mean, over the cases all of them ran, of each one's time over the fastest "
            "one's (for rates, the fastest one's rate over its own; 1: always the fastest).", "",
            "| family | figure | fastest | cases won |", "|---|---|---|---|"] + summary
    if not a.section:
        out += tables
    return "\n".join(out) + "\n"


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None
