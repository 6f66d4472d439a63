"""``Module.train()`` / ``valid()`` keep Burn's value semantics (they return a copy; the module is
unchanged), and a call whose copy is thrown away — the PyTorch habit ``model.train()`` on its
own line — warns, naming the assignment to write. Kept copies never warn."""

from __future__ import annotations

import warnings

import pytest

import ember
from ember import nn
from ember.nn.discarded_copy import DiscardedCopyWarning


def model():
    return nn.Sequential([nn.LinearConfig(3, 4).init(), nn.DropoutConfig(0.5).init()])


def test_valid_and_train_return_copies_and_leave_the_module_alone():
    m = model()
    v = m.valid()
    assert v is not m and m.training and not v.training
    assert all(p.is_require_grad() for p in m.parameters())
    assert not any(p.is_require_grad() for p in v.parameters())
    t = v.train()
    assert t is not v and t.training and not v.training


def test_a_dropped_copy_warns_at_the_callers_line():
    m = model()
    with pytest.warns(
        DiscardedCopyWarning, match=r"Module\.valid\(\) returns a copy .*`model_valid = model\.valid\(\)`"
    ) as got:
        m.valid()
    assert got[0].filename == __file__ and m.training  # still training: the copy was lost
    v = m.valid()
    with pytest.warns(DiscardedCopyWarning, match=r"Module\.train\(\) .*`model = model\.train\(\)`"):
        v.train()
    assert not v.training


def test_kept_copies_do_not_warn():
    m = model()
    x = ember.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DiscardedCopyWarning)
        v = m.valid()
        m.valid()(x)  # used at once
        copies = [m.valid(), v.train()]
        _ = m.valid()  # discarded on purpose, by name
        assert m.valid().training is False
    assert len(copies) == 2


def returns_a_copy(m):
    return m.valid()


def test_a_copy_returned_to_a_caller_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DiscardedCopyWarning)
        assert not returns_a_copy(model()).training
