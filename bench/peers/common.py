"""Shared by the peer benchmarks: device choice, device-side timing, and the
JSON lines that bench/report.py joins with tabcl-bench's own (--jsonl)."""
import argparse
import json
import statistics
import sys
import time


def pick_device(torch, quick):
    """CUDA when present; otherwise the CPU, said loudly, so a smoke run on a
    machine without a GPU still exercises every code path."""
    if torch.cuda.is_available():
        dev = torch.device("cuda")
        name = "cuda: " + torch.cuda.get_device_name(dev)
        return dev, name
    msg = "no CUDA device: falling back to the CPU (figures are not GPU figures)"
    if not quick:
        msg += "; run with --quick for a smoke test"
    print("note: " + msg, file=sys.stderr)
    return torch.device("cpu"), "cpu (fallback, torch %s)" % torch.__version__


class Budget:
    """A soft time limit for a whole peer run: no new case is started once it
    is spent, so the run ends cleanly inside run-gpu.sh's hard limit and
    says which cases it left out."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.t0 = time.perf_counter()
        self.skipped = []

    def allows(self, name):
        if self.seconds and time.perf_counter() - self.t0 > self.seconds:
            self.skipped.append(name)
            return False
        return True

    def report(self):
        if self.skipped:
            print("note: time budget of %gs spent; cases not run: %s"
                  % (self.seconds, ", ".join(self.skipped)))
        sys.stdout.flush()


class Timer:
    """Median of timed repetitions after untimed warm-ups. On CUDA the time is
    the device's own, from a pair of events around each repetition; on the
    CPU fallback it is wall-clock time."""

    def __init__(self, torch, device, warmup=2, reps=10):
        self.torch, self.device, self.warmup, self.reps = torch, device, warmup, reps

    def median_ms(self, fn):
        torch = self.torch
        cuda = self.device.type == "cuda"
        for _ in range(self.warmup):
            fn()
        if cuda:
            torch.cuda.synchronize()
        times = []
        for _ in range(self.reps):
            if cuda:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)


def host_median_ms(fn, warmup=1, reps=5, slow_ms=300.0):
    """Wall-clock median for host-only peers (pandas, pyarrow). A call slower
    than slow_ms gets 3 repetitions, so large cases fit the run's budget."""
    t0 = time.perf_counter()
    fn()
    first = (time.perf_counter() - t0) * 1e3
    for _ in range(warmup - 1):
        fn()
    if first > slow_ms:
        reps = min(reps, 3)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


class Recorder:
    """Appends one JSON line per figure, in tabcl-bench's format plus three
    optional fields: peer, device, and vs (the tabcl metric the figure is
    compared with, so the report can form the ratio tabcl/peer)."""

    def __init__(self, path, peer, device_name):
        self.path, self.peer, self.device_name = path, peer, device_name

    def __call__(self, bench, case, metric, value, unit, vs=None, note=None):
        rec = {"bench": bench, "case": case, "metric": metric, "value": value, "unit": unit,
               "peer": self.peer, "device": self.device_name}
        if vs:
            rec["vs"] = vs
        if note:
            rec["note"] = note
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(rec) + "\n")
        return rec


def table(rows, header):
    """A markdown table on stdout, like tabcl-bench's."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    sys.stdout.flush()


def dump_peer_args(doc):
    """The arguments of every peer that reads tabcl-bench's --dump folder."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", required=True, help="tabcl-bench's --dump DIR")
    ap.add_argument("--jsonl", help="append figures here")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--budget-s", type=float, default=0, help="start no case after this many seconds")
    return ap
