#!/usr/bin/env python3
"""Checks of the peers' own logic on a CPU (torch without CUDA is enough):
  cd bench/peers && python3 -m unittest test_peers -v
The figures themselves are never checked here; only that the peers compute
the right codes and orders, and that the report pairs figures correctly."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from dumpfmt import Strings, compare_codes, lookup_cases, reference_codes, sort_cases  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


@unittest.skipIf(torch is None, "torch not importable")
class TorchLookup(unittest.TestCase):
    def run_lookup(self, vocab, queries, bits=64):
        import lookup_torch as L
        dev = torch.device("cpu")
        v = L.DevStrings(Strings.from_labels(vocab), torch, dev)
        q = L.DevStrings(Strings.from_labels(queries), torch, dev)
        powers = L.power_table(max(v.maxlen, q.maxlen, 1), 0, torch, dev)
        ix = L.Index(v, powers, 0, -1 if bits >= 64 else (1 << bits) - 1, torch)
        ix.fit()
        got = ix.lookup(q).numpy()
        want = reference_codes(vocab, queries)
        self.assertTrue(np.array_equal(got, want), "%s vs %s" % (got.tolist(), want.tolist()))
        return ix

    def test_edges(self):
        self.run_lookup([], [b"a", b""])
        self.run_lookup([b"a"], [])
        self.run_lookup([b"", b""], [b"", b"x"])
        self.run_lookup([b"\x00", b"\x00\x00", b""], [b"\x00", b"\x00\x00", b"", b"\x00\x00\x00"])

    def test_repeated_labels_keep_last_position(self):
        self.run_lookup([b"ab", b"ba", b"ab", b"a", b"ab"], [b"ab", b"ba", b"a", b"b"])

    def test_collisions_never_give_a_wrong_code(self):
        rng = np.random.default_rng(11)
        vocab = [bytes(rng.integers(0, 256, size=int(rng.integers(0, 6)), dtype=np.uint8)) for _ in range(300)]
        queries = vocab[::3] + [bytes(rng.integers(0, 256, size=3, dtype=np.uint8)) for _ in range(100)]
        for bits in (1, 4, 12, 64):
            ix = self.run_lookup(vocab, queries, bits=bits)
            if bits <= 4:
                self.assertGreater(ix.run, 1)  # collisions did happen

    def test_hash_spreads(self):
        import lookup_torch as L
        labels = [b"x%d" % i for i in range(5000)]
        s = L.DevStrings(Strings.from_labels(labels), torch, torch.device("cpu"))
        s.prepare()
        h = L.hash_strings(s, L.power_table(s.maxlen, 0, torch, torch.device("cpu")), 0, -1, torch)
        self.assertEqual(torch.unique(h).numel(), len(labels))
        self.assertEqual(torch.unique(h & 0xFFFF).numel() > 4000, True)  # low bits mixed too


class SortCheck(unittest.TestCase):
    def test_check(self):
        from sort_torch import check
        k = np.array([3, 1, 2, 1], dtype=np.uint64)
        v = np.array([0, 1, 2, 3], dtype=np.uint32)
        self.assertTrue(check(k, v, np.array([1, 1, 2, 3], np.uint64), np.array([3, 1, 2, 0], np.uint32))[0])
        self.assertFalse(check(k, v, np.array([1, 1, 2, 3], np.uint64), np.array([1, 3, 0, 2], np.uint32))[0])
        self.assertFalse(check(k, v, np.array([1, 2, 1, 3], np.uint64), np.array([1, 2, 3, 0], np.uint32))[0])

    def test_top_bit_flip_orders_as_unsigned(self):
        from sort_torch import TOP
        k = np.array([0, 1, 1 << 63, (1 << 64) - 1, 5 << 60], dtype=np.uint64)
        flipped = (k ^ TOP).view(np.int64)
        self.assertTrue(np.array_equal(k[np.argsort(flipped, kind="stable")], np.sort(k)))


@unittest.skipIf(torch is None, "torch not importable")
class PeersOnDumps(unittest.TestCase):
    """make_dump.py, then every peer as run-gpu.sh runs it; a tampered code
    must make the peers say so."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tabcl-peers-test-")
        subprocess.run([sys.executable, os.path.join(HERE, "make_dump.py"), cls.dir, "--quick"],
                       check=True, stdout=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def peer(self, script, *args):
        jsonl = os.path.join(self.dir, "peers.jsonl")
        if os.path.exists(jsonl):
            os.remove(jsonl)
        r = subprocess.run([sys.executable, os.path.join(HERE, script), "--quick", "--reps", "1",
                            "--jsonl", jsonl] + list(args), capture_output=True, text=True)
        recs = []
        if os.path.exists(jsonl):
            with open(jsonl) as f:
                recs = [json.loads(line) for line in f]
        return r.returncode, recs, r.stdout + r.stderr

    def test_dump_roundtrip(self):
        cases = lookup_cases(self.dir)
        self.assertEqual(len(cases), 2)
        for c in cases:
            c.load()
            for col in range(c.ncols):
                self.assertTrue(compare_codes(reference_codes(c.vocab[col].labels(), c.query[col].labels()),
                                              c.codes[col])[0])
        sc = sort_cases(self.dir)
        self.assertEqual([(c, n) for c, n, _ in sc], [("1000", 1000), ("2^12", 4096)])
        keys, vals = sc[1][2]()
        self.assertEqual((keys.size, vals.size), (4096, 4096))

    def test_lookup_peers_match_and_catch_a_wrong_code(self):
        for script in ("lookup_torch.py", "lookup_host.py"):
            rc, recs, out = self.peer(script, "--dump", self.dir)
            self.assertEqual(rc, 0, out)
            matches = [r for r in recs if r["metric"].endswith("codes_match")]
            self.assertTrue(matches and all(r["value"] == 1 for r in matches), out)
        bad = os.path.join(self.dir, "bad")
        shutil.copytree(os.path.join(self.dir, "v300_q500_len0-4"), os.path.join(bad, "c"))
        p = os.path.join(bad, "c", "codes_0.i32")
        codes = np.fromfile(p, dtype="<i4")
        codes[7] = codes[7] + 1
        codes.tofile(p)
        for script in ("lookup_torch.py", "lookup_host.py"):
            rc, recs, out = self.peer(script, "--dump", bad)
            self.assertNotEqual(rc, 0, out)
            self.assertIn(0, [r["value"] for r in recs if r["metric"].endswith("codes_match")])

    def test_sort_peer(self):
        rc, recs, out = self.peer("sort_torch.py", "--dump", self.dir)
        self.assertEqual(rc, 0, out)
        self.assertEqual([r["value"] for r in recs if r["metric"] == "torch_sorted_ok"], [1, 1])

    def test_attention_peer_cases(self):
        from attention_torch import parse_case
        self.assertEqual(parse_case("long_b4_h32_l1024_d64_causal_f32"),
                         {"b": 4, "h": 32, "l": 1024, "lq": 1024, "lk": 1024, "d": 64, "causal": True,
                          "dtype": "f32"})
        self.assertIsNone(parse_case("tab_b1_h2_f32"))
        rc, recs, out = self.peer("attention_torch.py", "--cases", "long_b1_h2_l16_d8_causal_f32")
        self.assertEqual(rc, 0, out)
        tf = [r for r in recs if r["metric"].endswith("tflops")][0]
        ms = [r for r in recs if r["metric"].endswith("_ms")][0]
        flops = 4.0 * 1 * 2 * 16 * 16 * 8 * 0.5
        self.assertAlmostEqual(tf["value"], flops / (ms["value"] * 1e-3) * 1e-12, delta=1e-12)

    def test_attention_peer_context_cases(self):
        """A ctx_ case runs with its mask and passes its float64 check; a
        tabcl-bench row listing other kept keys (another mask) fails it."""
        name = "ctx_b3_q5_kv40_h2_d8_f32"
        rc, recs, out = self.peer("attention_torch.py", "--cases", name)
        self.assertEqual(rc, 0, out)
        self.assertEqual([r["value"] for r in recs if r["metric"] == "torch_matches_f64"], [1], out)
        tf = [r for r in recs if r["metric"] == "torch_tflops"][0]
        ms = [r for r in recs if r["metric"] == "torch_ms"][0]
        self.assertAlmostEqual(tf["value"], 4.0 * 3 * 2 * 5 * 40 * 8 / (ms["value"] * 1e-3) * 1e-12,
                               delta=1e-12)
        from attention_torch import ctx_kept
        rows = os.path.join(self.dir, "tabcl-ctx.jsonl")
        for kept, want_rc in ((ctx_kept(3, 40), 0), ([40, 40, 40], 1)):
            with open(rows, "w") as f:
                f.write(json.dumps({"bench": "attention", "case": name, "metric": "flops", "value": 1,
                                    "unit": "FLOP", "mask": "key_padding", "kv_kept": kept}) + "\n")
            rc, recs, out = self.peer("attention_torch.py", "--cases-from", rows)
            self.assertEqual(rc != 0, bool(want_rc), out)
            self.assertEqual(len([r for r in recs if r["metric"] == "torch_ms"]), 1 - want_rc, out)


class Report(unittest.TestCase):
    def test_fma_target_reads_probe_and_sgemm(self):
        import report
        d = tempfile.mkdtemp(prefix="tabcl-report-fma-")
        try:
            path = os.path.join(d, "probe.json")
            peer = report.index([{"bench": "probe", "case": "fp32_fma", "metric": "numpy_sgemm_gflops",
                                  "value": 200.0, "unit": "GFLOP/s", "peer": "numpy"}])
            for fma, want in (("234.0", "met"), ("140.0", "**not met**"), ("260.0", "**not met**"),
                              ("151.0", "met")):
                with open(path, "w") as f:
                    json.dump({"devices": [{"selector": "0:0", "measured": {
                        "fp32 FMA (GFLOP/s)": {"value": fma}}}]}, f)
                t, ev, v = report.fma_target({}, peer, path)
                self.assertEqual(v, want, "%s against 200: %s" % (fma, ev))
            self.assertEqual(report.fma_target({}, {}, path)[2], "not measured")
            self.assertEqual(report.fma_target({}, peer, os.path.join(d, "none.json"))[2], "not measured")
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_section_for_results_page(self):
        """--section gives RESULTS.md's section: its heading, the header, the
        summary and targets a level down, and no per-case table."""
        import argparse
        import report
        d = tempfile.mkdtemp(prefix="tabcl-report-section-")
        try:
            tpath, ppath = os.path.join(d, "tabcl.jsonl"), os.path.join(d, "peers.jsonl")
            with open(tpath, "w") as f:
                f.write(json.dumps({"bench": "lookup", "case": "c", "metric": "lookup_ms", "value": 1,
                                    "unit": "ms"}) + "\n")
            with open(ppath, "w") as f:
                f.write(json.dumps({"bench": "lookup", "case": "c", "metric": "torch_gpu_ms", "value": 4,
                                    "unit": "ms", "peer": "torch", "vs": "lookup_ms"}) + "\n")
            args = dict(tabcl=tpath, peers=ppath, probe=None, bench_md=None, command="bash x.sh OUT",
                        note=["commit abc1234"], out=None, targets="gpu", section=None)
            full = report.report_text(argparse.Namespace(**args))
            args["section"] = "GPU: a test device"
            sec = report.report_text(argparse.Namespace(**args))
            self.assertTrue(full.startswith("# tabcl and its peers"), full[:80])
            self.assertIn("\n## lookup\n", full)
            lines = sec.splitlines()
            self.assertEqual(lines[0], "## GPU: a test device")
            self.assertIn("- command: `bash x.sh OUT`", lines)
            self.assertIn("- note: commit abc1234", lines)
            self.assertIn("### Summary", lines)
            self.assertIn("### Targets", lines)
            self.assertIn("| lookup | torch_gpu_ms | lookup_ms | 1 of 1 cases | 0.25 to 0.25 |", lines)
            self.assertFalse([l for l in lines[1:] if l.startswith("## ")], sec)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_pairing(self):
        import report
        tab = report.index([
            {"bench": "lookup", "case": "c", "metric": "fit_ms", "value": 2, "unit": "ms"},
            {"bench": "lookup", "case": "c", "metric": "lookup_ms", "value": 1, "unit": "ms"},
            {"bench": "attention", "case": "a", "metric": "ms", "value": 3, "unit": "ms"},
            {"bench": "attention", "case": "a", "metric": "clblast_ms", "value": 4, "unit": "ms"},
            {"bench": "attention", "case": "a", "metric": "tflops", "value": 5, "unit": "TFLOP/s"},
        ])
        lk = tab[("lookup", "c")]
        at = tab[("attention", "a")]

        def peer(bench, metric, vs, unit="ms"):
            return {"bench": bench, "case": "x", "metric": metric, "value": 1, "unit": unit, "vs": vs}

        self.assertEqual(report.counterpart(lk, peer("lookup", "torch_gpu_fit_ms", "fit_ms"))["metric"], "fit_ms")
        self.assertEqual(report.counterpart(lk, peer("lookup", "pandas_ms", "lookup_ms"))["metric"], "lookup_ms")
        self.assertIsNone(report.counterpart(lk, peer("lookup", "pandas_cold_ms", None)))
        only_lookup = report.index([{"bench": "lookup", "case": "c", "metric": "lookup_ms", "value": 1,
                                     "unit": "ms"}])[("lookup", "c")]
        self.assertIsNone(report.counterpart(only_lookup, peer("lookup", "torch_gpu_fit_ms", "fit_ms")))
        self.assertEqual(report.counterpart(at, peer("attention", "torch_ms", "attention_ms"))["metric"], "ms")
        self.assertEqual(report.counterpart(at, peer("attention", "torch_tflops", "tflops", "TFLOP/s"))["metric"],
                         "tflops")
        # the automatic path's figure: the tensor-core kernel's where it ran
        both = report.index([
            {"bench": "attention", "case": "a", "metric": "ms", "value": 3, "unit": "ms"},
            {"bench": "attention", "case": "a", "metric": "mma_ms", "value": 2, "unit": "ms"},
        ])
        pk = {("attention", "a"): {"torch_ms": dict(peer("attention", "torch_ms", "ms"), case="a")}}
        t, p, portable = report.pick_auto(both, pk, "attention", "a", "torch_ms")
        self.assertEqual((t["metric"], portable["metric"]), ("mma_ms", "ms"))
        t, p, portable = report.pick_auto(tab, pk, "attention", "a", "torch_ms")
        self.assertEqual((t["metric"], portable["metric"]), ("ms", "ms"))
        r, faster = report.ratio({"value": 1, "unit": "s"}, {"value": 500, "unit": "ms"})
        self.assertEqual((r, faster), (2.0, False))
        r, faster = report.ratio({"value": 6, "unit": "TFLOP/s"}, {"value": 3, "unit": "TFLOP/s"})
        self.assertEqual((r, faster), (2.0, True))

    def test_pandas_target_takes_device_time_and_shows_the_host_call(self):
        import report

        def rec(bench, case, metric, value, vs=None):
            r = {"bench": bench, "case": case, "metric": metric, "value": value, "unit": "ms"}
            if vs:
                r["vs"] = vs
            return r

        def verdict(dev_ms, host_ms):
            tab = report.index([rec("lookup", "v200000_len8_q100000", "lookup_ms", dev_ms),
                                rec("lookup", "v200000_len8_q100000", "host_lookup_ms", host_ms),
                                rec("lookup", "v10_len8_q1000", "lookup_ms", 1.0)])
            peer = report.index([rec("lookup", "v200000_len8_q100000", "pandas_ms", 40.0, "host_lookup_ms"),
                                 rec("lookup", "v10_len8_q1000", "pandas_ms", 0.1, "host_lookup_ms")])
            rows = [r for r in report.targets(tab, peer) if "pandas" in r[0]]
            self.assertEqual(len(rows), 1)
            self.assertNotIn("v10_len8", rows[0][1])  # only 100,000-row queries count
            return rows[0]

        self.assertEqual(verdict(0.2, 0.3)[2], "met")
        row = verdict(0.2, 0.6)
        self.assertTrue(row[2].startswith("met on device time"), row)
        self.assertIn("host call 0.6 ms (66.7x)", row[1])
        self.assertEqual(verdict(0.5, 0.6)[2], "**not met**")

    def test_writes_markdown(self):
        d = tempfile.mkdtemp(prefix="tabcl-report-test-")
        try:
            t, p, o = (os.path.join(d, n) for n in ("t.jsonl", "p.jsonl", "r.md"))
            with open(t, "w") as f:
                f.write('{"bench":"sort","case":"2^24","metric":"sort_ms","value":6,"unit":"ms"}\nnot json\n')
            with open(p, "w") as f:
                f.write('{"bench":"sort","case":"2^24","metric":"torch_ms","value":3,"unit":"ms","vs":"sort_ms"}\n')
            subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "report.py"), "--tabcl", t,
                            "--peers", p, "--out", o], check=True, stderr=subprocess.DEVNULL)
            with open(o) as f:
                text = f.read()
            self.assertIn("| 2^24 | sort_ms | 6 ms | torch_ms | 3 ms | 2 | peer |", text)
            self.assertIn("| sort of 2^24 pairs within 3x torch.sort | tabcl 6", text)
            self.assertIn("| met |", text)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_context_cases_table_and_targets(self):
        import report
        f16, f32 = "ctx_b1_q512_kv10000_h8_d64_f16", "ctx_b1_q512_kv10000_h8_d64_f32"
        tab = report.index([
            {"bench": "attention", "case": f16, "metric": "ms", "value": 8, "unit": "ms"},
            {"bench": "attention", "case": f16, "metric": "tflops", "value": 1.3, "unit": "TFLOP/s"},
            {"bench": "attention", "case": f16, "metric": "peak_fraction", "value": 0.2, "unit": "ratio"},
            {"bench": "attention", "case": f16, "metric": "mma_ms", "value": 2, "unit": "ms"},
            {"bench": "attention", "case": f16, "metric": "mma_tflops", "value": 5.2, "unit": "TFLOP/s"},
            {"bench": "attention", "case": f32, "metric": "ms", "value": 4, "unit": "ms"},
            {"bench": "attention", "case": f32, "metric": "peak_fraction", "value": 0.6, "unit": "ratio"},
        ])
        peer = report.index([
            {"bench": "attention", "case": f16, "metric": "torch_ms", "value": 4, "unit": "ms", "vs": "ms",
             "peer": "torch"},
            {"bench": "attention", "case": f16, "metric": "torch_tflops", "value": 2.6, "unit": "TFLOP/s",
             "vs": "tflops", "peer": "torch"},
        ])
        lines = report.ctx_table(tab, peer)
        self.assertIn("FLOPs = 4 * B * H * Lq * Lk * D", "\n".join(lines))
        # the library's pick (tensor cores) beside torch: twice its throughput
        self.assertIn("| %s | tensor cores | 2 | 5.2 | 1.3 (20.0%%) | torch | 4 | 2.6 | 2 |" % f16, lines)
        self.assertIn("| %s | portable | 4 |  |  (60.0%%) | (none) |  |  |  |" % f32, lines)
        got = {t: (e, v) for t, e, v in report.ctx_targets(tab, peer)}
        e, v = got["attention, context cases f16 and bf16: >= 100% of PyTorch's throughput"]
        self.assertEqual(v, "met")
        self.assertIn("%s: 200.0%% (mma_ms)" % f16, e)
        e, v = got["attention, context cases f32: the portable kernel >= 50% of the fp32 FMA peak"]
        self.assertEqual((e, v), ("%s: 60.0%%" % f32, "met"))
        slow = report.index([{"bench": "attention", "case": f16, "metric": "torch_ms", "value": 1,
                              "unit": "ms", "vs": "ms", "peer": "torch"}])
        self.assertEqual(report.ctx_targets(tab, slow)[0][2], "**not met**")


@unittest.skipIf(torch is None, "torch not importable")
class TorchContextAttention(unittest.TestCase):
    """The context cases' mask and SDPA call (attention_torch.py) against
    float64, on the CPU."""

    def test_names_and_kept_keys(self):
        from attention_torch import ctx_kept, parse_case
        self.assertEqual(parse_case("ctx_b1_q512_kv40000_h8_d64_f16"),
                         {"b": 1, "lq": 512, "lk": 40000, "h": 8, "d": 64, "causal": False,
                          "dtype": "f16", "padded": True})
        self.assertEqual(ctx_kept(1, 10000), [9000])
        # what tabcl-bench's ctx_kept (tools/bench/attention.c) gives
        self.assertEqual(ctx_kept(4, 1000), [919, 906, 894, 881])
        kept = ctx_kept(32, 40000)
        self.assertEqual(kept[:3] + kept[-1:], [36969, 36906, 36844, 35031])
        self.assertEqual(len(set(kept)), 32)
        self.assertTrue(all(0.075 * 40000 <= 40000 - k <= 0.125 * 40000 for k in kept))

    def test_masked_sdpa_matches_float64(self):
        import attention_torch as A
        F = torch.nn.functional
        b, lq, lk, h, d = 3, 6, 50, 2, 16
        gen = torch.Generator().manual_seed(5)
        q, k, v = (torch.randn(b, n, h, d, generator=gen).transpose(1, 2) for n in (lq, lk, lk))
        mask = A.key_padding_mask(torch, b, lk, torch.device("cpu"))
        self.assertEqual(tuple(mask.shape), (b, 1, 1, lk))
        got = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        kept = A.ctx_kept(b, lk)
        qn, kn, vn = (x.double().numpy() for x in (q, k, v))
        for bi in range(b):
            n = kept[bi]
            s = np.einsum("hqd,hkd->hqk", qn[bi], kn[bi, :, :n]) / np.sqrt(d)
            w = np.exp(s - s.max(-1, keepdims=True))
            want = np.einsum("hqk,hkd->hqd", w / w.sum(-1, keepdims=True), vn[bi, :, :n])
            self.assertLess(np.max(np.abs(got[bi].double().numpy() - want)), 1e-5)
        # the padded keys are ignored, and without the mask the answer differs
        k2, v2 = k.clone(), v.clone()
        for bi in range(b):
            k2[bi, :, kept[bi]:] = 9.0
            v2[bi, :, kept[bi]:] = -9.0
        self.assertTrue(torch.allclose(got, F.scaled_dot_product_attention(q, k2, v2, attn_mask=mask),
                                       atol=1e-6))
        self.assertFalse(torch.allclose(got, F.scaled_dot_product_attention(q, k, v), atol=1e-3))
        err = A.check_rows(torch, q, k, v, mask, False, lambda bi, hi, qi: got[bi, hi, qi])
        self.assertLess(err, 1e-6)
        bad = A.check_rows(torch, q, k, v, None, False, lambda bi, hi, qi: got[bi, hi, qi])
        self.assertGreater(bad, A.CHECK_TOLERANCE["bf16"])


class NumpyPeers(unittest.TestCase):
    """The CPU peers (numpy only): their results against float64 and their
    checks catching a wrong answer."""

    def test_attention_matches_float64_and_chunks_agree(self):
        import attention_numpy as A
        rng = np.random.default_rng(3)
        for causal in (False, True):
            q = rng.standard_normal((5, 2, 7, 16), dtype=np.float32)
            k = rng.standard_normal((5, 2, 9, 16), dtype=np.float32)
            v = rng.standard_normal((5, 2, 9, 16), dtype=np.float32)
            whole = A.attention(q, k, v, causal, chunk=5)
            self.assertTrue(np.array_equal(whole, A.attention(q, k, v, causal, chunk=2)))
            s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) / 4.0
            if causal:
                s[..., np.triu(np.ones((7, 9), dtype=bool), k=1)] = -np.inf
            w = np.exp(s - s.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            want = np.einsum("bhqk,bhkd->bhqd", w, v.astype(np.float64))
            self.assertLess(np.max(np.abs(whole - want)), 1e-5)
            self.assertTrue(A.check(q, k, v, causal, whole)[0])
            bad = whole.copy()
            bad[...] += 0.01
            self.assertFalse(A.check(q, k, v, causal, bad)[0])

    def test_attention_key_padding_matches_float64(self):
        import attention_numpy as A
        rng = np.random.default_rng(4)
        q = rng.standard_normal((4, 2, 5, 8), dtype=np.float32)
        k = rng.standard_normal((4, 2, 30, 8), dtype=np.float32)
        v = rng.standard_normal((4, 2, 30, 8), dtype=np.float32)
        kept = [30, 27, 3, 1]
        got = A.attention(q, k, v, False, chunk=3, kept=kept)
        for bi, n in enumerate(kept):
            s = np.einsum("hqd,hkd->hqk", q[bi].astype(np.float64), k[bi, :, :n].astype(np.float64))
            s /= np.sqrt(8)
            w = np.exp(s - s.max(-1, keepdims=True))
            want = np.einsum("hqk,hkd->hqd", w / w.sum(-1, keepdims=True), v[bi, :, :n].astype(np.float64))
            self.assertLess(np.max(np.abs(got[bi] - want)), 1e-5)
        self.assertTrue(A.check(q, k, v, False, got, kept=kept)[0])
        self.assertFalse(A.check(q, k, v, False, got)[0])   # the mask ignored: caught

    def test_sgemm_figure_is_checked(self):
        import attention_numpy as A
        gflops, ok, msg = A.sgemm_gflops(64, 2)
        self.assertTrue(ok, msg)
        self.assertGreater(gflops, 0)

    def test_sort_peer_on_a_dump(self):
        d = tempfile.mkdtemp(prefix="tabcl-numpy-sort-")
        try:
            keys = np.random.default_rng(5).integers(0, 1 << 63, size=3000, dtype=np.uint64) << np.uint64(1)
            keys[::5] = keys[1]                      # equal keys: the order must stay stable
            keys.astype("<u8").tofile(os.path.join(d, "sort_t.keys.u64"))
            np.arange(keys.size, dtype="<u4").tofile(os.path.join(d, "sort_t.vals.u32"))
            jsonl = os.path.join(d, "p.jsonl")
            r = subprocess.run([sys.executable, os.path.join(HERE, "sort_numpy.py"), "--dump", d,
                                "--reps", "1", "--jsonl", jsonl], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(jsonl) as f:
                recs = [json.loads(line) for line in f]
            self.assertEqual([x["value"] for x in recs if x["metric"] == "numpy_sorted_ok"], [1])
            from sort_numpy import sort_pairs
            sk, sv, _ = sort_pairs(keys, np.arange(keys.size, dtype=np.uint32))
            self.assertTrue(np.all(sk[1:] >= sk[:-1]))
            eq = sk[1:] == sk[:-1]
            self.assertTrue(np.all(sv[1:][eq] > sv[:-1][eq]))
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
