"""Parity with pandas on the real data sets the C tests use (tests/data,
from the npm package vega-datasets): fit on two rows in three, look every
row up, and compare with pandas' Index.get_indexer (pd.Categorical with
given categories warns under pandas 3 for labels outside them); align
pandas' own Categoricals and compare the same."""
import numpy as np
import pandas as pd
import pytest

import tabcl


def read(data_dir, name):
    # as the C test reads them: every field a string, an empty field null
    return pd.read_csv(data_dir / name, dtype=str, keep_default_na=False, na_values=[""])


@pytest.mark.parametrize("name", ["airports.csv", "la-riots.csv"])
@pytest.mark.parametrize("order", ["position", "value"])
def test_lookup_matches_pandas(ctx, data_dir, name, order):
    df = read(data_dir, name)
    fit_rows = df[np.arange(len(df)) % 3 != 2]
    vocab = []
    for c in df.columns:
        uniq = pd.unique(fit_rows[c].dropna())
        if order == "value":
            uniq = np.array(sorted(uniq, key=lambda s: s.encode()), dtype=object)
        vocab.append(list(uniq))
    idx = tabcl.CategoryIndex.fit(ctx, vocab, order=order)
    codes = idx.lookup([df[c] for c in df.columns])
    for c, cats, got in zip(df.columns, vocab, codes):
        want = pd.Index(cats).get_indexer(df[c])
        np.testing.assert_array_equal(got, want, err_msg="%s column %s" % (name, c))
        assert (got == -1).any() or df[c].notna().all()
    # the same through align, from pandas' own categories of the column
    aligned = idx.align([pd.Categorical(df[c]) for c in df.columns])
    for c, a, l in zip(df.columns, aligned, codes):
        np.testing.assert_array_equal(a, l, err_msg="align, %s column %s" % (name, c))
    # and with the fitted vocabulary in pandas' default order
    if order == "position":
        again = tabcl.CategoryIndex.fit(ctx, [fit_rows[c] for c in df.columns])
        for c, got in zip(df.columns, again.lookup(df)):
            last = {v: i for i, v in enumerate(fit_rows[c]) if isinstance(v, str)}
            want = [last.get(v, -1) if isinstance(v, str) else -1 for v in df[c]]
            np.testing.assert_array_equal(got, want, err_msg="%s column %s" % (name, c))
