"""docs/numpy_coverage.md lists every public NumPy name and ndarray attribute with what
streamrt does with it; this test keeps it true (regenerate with
``python -m streamrt.tools.coverage > docs/numpy_coverage.md``)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import streamrt as ps
from streamrt.tools import coverage

DOC = os.path.join(os.path.dirname(__file__), "..", "docs", "numpy_coverage.md")


def test_the_table_is_up_to_date():
    with open(DOC) as f:
        doc = f.read()
    if np.__version__ not in doc.splitlines()[2]:
        pytest.skip(f"the table was generated with another NumPy than {np.__version__}")
    assert doc == coverage.table(ps), ("docs/numpy_coverage.md is out of date: run "
                                       "python -m streamrt.tools.coverage > "
                                       "docs/numpy_coverage.md")


def test_every_numpy_name_is_in_the_table():
    with open(DOC) as f:
        doc = f.read()
    for name in coverage.numpy_names():
        assert f"| `{name}` |" in doc, name


def test_a_name_not_provided_fails_at_the_call_with_the_reason():
    line = sys._getframe().f_lineno + 2
    with pytest.raises(AttributeError) as e:
        ps.vectorize(abs)
    assert f"{__file__}:{line}: streamrt does not provide numpy.vectorize" in str(e.value)
    assert "Python function per element" in str(e.value)
    with pytest.raises(AttributeError, match="no attribute 'not_a_numpy_name'"):
        ps.not_a_numpy_name          # noqa: B018
