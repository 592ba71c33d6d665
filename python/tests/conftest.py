"""Shared fixtures: one context for the session (the device from
$TABCL_DEVICE, else tabcl's default), the kernel cache in $TABCL_CACHE_DIR
when set, and the checkout's tests/data folder."""
import os
from pathlib import Path

import pytest

import tabcl

ROOT = Path(os.environ.get("TABCL_TEST_SOURCE_DIR") or Path(__file__).resolve().parents[2])
DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="session")
def ctx():
    return tabcl.Context()


@pytest.fixture(scope="session")
def data_dir():
    assert DATA.is_dir(), "tests/data not found under %s" % ROOT
    return DATA
