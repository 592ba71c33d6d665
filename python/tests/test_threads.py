"""One context and one index used from several Python threads at once (the
C library allows it, and the calls drop the GIL, so they really overlap):
every thread gets the one-thread answer."""
import threading

import numpy as np

import tabcl


def test_lookups_and_attention_from_threads(ctx):
    rng = np.random.default_rng(7)
    vocab = ["v%d" % i for i in range(3000)]
    idx = tabcl.CategoryIndex.fit(ctx, [vocab])
    queries = [["v%d" % k if k % 7 else None for k in rng.integers(0, 4000, 2000)]
               for _ in range(8)]
    want = [idx.lookup([q])[0] for q in queries]
    q = rng.standard_normal((2, 16, 2, 32)).astype(np.float32)
    attn = tabcl.sdpa(ctx, q, q, q)
    got, errors = [None] * 8, []

    def work(i):
        try:
            for _ in range(3):
                got[i] = idx.lookup([queries[i]])[0]
                np.testing.assert_array_equal(tabcl.sdpa(ctx, q, q, q), attn)
        except Exception as e:   # reported below, on the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    expect = [int(s[1:]) if s is not None and int(s[1:]) < 3000 else -1 for s in queries[0]]
    assert want[0].tolist() == expect
