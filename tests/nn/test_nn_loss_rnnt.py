"""RnntLoss: values against a brute-force enumeration of every alignment (float64, every
backend, per-sample lengths, empty targets, batch 1, logits or log-probabilities, reductions),
gradients against central differences and against the enumeration's analytic gradient,
``-inf`` log-probabilities, Burn's defaults and clear errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads

import ember
from ember import nn
from ember.nn import Reduction


def _log_softmax(a):
    a = a - a.max(-1, keepdims=True)
    return a - np.log(np.exp(a).sum(-1, keepdims=True))


def alignments(frames: int, labels: int):
    """Every alignment of the lattice as its sequence of visited (t, u, emitted-is-label) moves:
    the positions of the ``labels`` label emissions among the first ``frames − 1 + labels``
    moves (the last move is always the final blank)."""
    moves = frames - 1 + labels
    for chosen in itertools.combinations(range(moves), labels):
        t = u = 0
        path = []
        for k in range(moves):
            path.append((t, u, k in chosen))
            if k in chosen:
                u += 1
            else:
                t += 1
        path.append((t, u, False))
        yield path


def brute_force(lp, y, frames, labels, blank):
    """``−log Σ_alignments Π p`` and its gradient w.r.t. ``lp`` (one sample's [T, U+1, V])."""
    scores, paths = [], []
    for path in alignments(frames, labels):
        entries = [(t, u, y[u] if is_label else blank) for t, u, is_label in path]
        scores.append(sum(lp[e] for e in entries))
        paths.append(entries)
    total = np.logaddexp.reduce(scores) if scores else -np.inf
    grad = np.zeros_like(lp)
    for score, entries in zip(scores, paths):
        for e in entries:
            grad[e] -= np.exp(score - total)  # d(−log P)/d lp = −(posterior of each used entry)
    return -total, grad


def _inputs(rng, batch=3, frames=4, width=3, vocab=5, blank=0):
    logits = rng.standard_normal((batch, frames, width + 1, vocab))
    labels = rng.integers(0, vocab - 1, (batch, width))
    targets = np.where(labels >= blank, labels + 1, labels)  # never the blank
    return logits, targets


def _tensors(device, logits, targets, t_len, u_len, requires_grad=False):
    x = ember.tensor(logits, dtype=ember.float64, device=device, requires_grad=requires_grad)
    ints = [ember.tensor(np.asarray(a, dtype=np.int64), device=device) for a in (targets, t_len, u_len)]
    return (x, *ints)


@pytest.mark.parametrize("blank", [0, 2, 4])
def test_matches_brute_force_enumeration(device, blank):
    rng = np.random.default_rng(blank)
    logits, targets = _inputs(rng, blank=blank)
    t_len, u_len = np.array([4, 2, 3]), np.array([3, 1, 0])
    x, tg, tl, ul = _tensors(device, logits, targets, t_len, u_len, requires_grad=True)
    loss = nn.RnntLossConfig(blank=blank).init().forward(x, tg, tl, ul)
    lp = _log_softmax(logits)
    want, grad_lp = zip(*(brute_force(lp[b], targets[b], t_len[b], u_len[b], blank) for b in range(3)))
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-12)
    # d loss / d logits through the log-softmax: g − softmax · Σ_v g
    weights = np.array([0.5, -1.0, 2.0])
    g = np.stack([w * gl for w, gl in zip(weights, grad_lp)])
    want_grad = g - np.exp(lp) * g.sum(-1, keepdims=True)
    got = (loss * ember.tensor(weights, device=device)).sum().backward().get(x).numpy()
    np.testing.assert_allclose(got, want_grad, rtol=1e-10, atol=1e-13)


def test_log_probabilities_input_and_batch_of_one(device):
    rng = np.random.default_rng(5)
    logits, targets = _inputs(rng, batch=1, frames=3, width=2, vocab=4)
    lp = _log_softmax(logits)
    args = _tensors(device, lp, targets, [3], [2])
    got = nn.RnntLossConfig(logits=False).init().forward(*args)
    want, _ = brute_force(lp[0], targets[0], 3, 2, 0)
    assert got.shape == (1,)
    np.testing.assert_allclose(got.numpy(), [want], rtol=1e-12)
    from_logits = nn.RnntLoss().forward(*_tensors(device, logits, targets, [3], [2]))
    np.testing.assert_allclose(from_logits.numpy(), got.numpy(), rtol=1e-12)


def test_single_frame_and_empty_targets(device):
    rng = np.random.default_rng(6)
    logits = rng.standard_normal((2, 1, 3, 4))
    targets = np.array([[1, 2], [3, 3]])
    lp = _log_softmax(logits)
    loss = nn.RnntLoss().forward(*_tensors(device, logits, targets, [1, 1], [2, 0]))
    # one frame: emit every label at t = 0, then the blank
    want = [-(lp[0, 0, 0, 1] + lp[0, 0, 1, 2] + lp[0, 0, 2, 0]), -lp[1, 0, 0, 0]]
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-12)
    no_labels = nn.RnntLoss().forward(*_tensors(device, logits[:, :, :1], np.zeros((2, 0)), [1, 1], [0, 0]))
    np.testing.assert_allclose(no_labels.numpy(), -lp[:, 0, 0, 0], rtol=1e-12)


def test_reductions(device):
    rng = np.random.default_rng(7)
    logits, targets = _inputs(rng)
    args = _tensors(device, logits, targets, [4, 3, 2], [2, 3, 1])
    rnnt = nn.RnntLoss()
    per_sample = rnnt.forward(*args).numpy()
    mean = rnnt.forward_with_reduction(*args, Reduction.Mean)
    assert mean.shape == () and math.isclose(mean.item(), per_sample.mean(), rel_tol=1e-14)
    assert math.isclose(rnnt.forward_with_reduction(*args).item(), per_sample.mean(), rel_tol=1e-14)
    assert math.isclose(rnnt.forward_with_reduction(*args, "sum").item(), per_sample.sum(), rel_tol=1e-14)
    with pytest.raises(ValueError, match="BatchMean reduction is not supported"):
        rnnt.forward_with_reduction(*args, Reduction.BatchMean)


def test_gradient_matches_central_differences():
    rng = np.random.default_rng(8)
    logits, targets = _inputs(rng, batch=2, frames=3, width=2, vocab=4)
    x, tg, tl, ul = _tensors(DEV, logits, targets, [3, 2], [2, 1], requires_grad=True)
    rnnt = nn.RnntLoss()
    check_grads(lambda: rnnt.forward_with_reduction(x, tg, tl, ul, Reduction.Sum), [x], n_dirs=3)


def test_padding_past_the_lengths_does_not_matter(device):
    rng = np.random.default_rng(9)
    logits, targets = _inputs(rng)
    t_len, u_len = [2, 4, 3], [1, 2, 0]
    base = nn.RnntLoss().forward(*_tensors(device, logits, targets, t_len, u_len)).numpy()
    noisy, noisy_targets = logits.copy(), targets.copy()
    for b, (t, u) in enumerate(zip(t_len, u_len)):
        noisy[b, t:] = 50.0 * rng.standard_normal(noisy[b, t:].shape)
        noisy[b, :, u + 1 :] = 50.0 * rng.standard_normal(noisy[b, :, u + 1 :].shape)
        noisy_targets[b, u:] = 0  # padding may even hold the blank
    x, *ints = _tensors(device, noisy, noisy_targets, t_len, u_len, requires_grad=True)
    loss = nn.RnntLoss().forward(x, *ints)
    np.testing.assert_allclose(loss.numpy(), base, rtol=1e-12)
    grad = loss.sum().backward().get(x).numpy()
    assert np.isfinite(grad).all()
    assert np.all(grad[0, 2:] == 0.0) and np.all(grad[2, :, 1:] == 0.0)


def test_minus_inf_log_probabilities_stay_finite_where_an_alignment_survives(device):
    rng = np.random.default_rng(10)
    logits, targets = _inputs(rng, batch=1, frames=3, width=1, vocab=3)
    lp = _log_softmax(logits)
    lp[0, 0, 0, 0] = -np.inf  # no blank at (0, 0): the label must come first
    x, *ints = _tensors(device, lp, targets, [3], [1], requires_grad=True)
    loss = nn.RnntLossConfig(logits=False).init().forward(x, *ints)
    want, want_grad = brute_force(lp[0], targets[0], 3, 1, 0)
    np.testing.assert_allclose(loss.numpy(), [want], rtol=1e-12)
    grad = loss.sum().backward().get(x).numpy()
    assert np.isfinite(grad).all()
    np.testing.assert_allclose(grad[0], want_grad, rtol=1e-10, atol=1e-13)
    lp[0, 0, 1, 0] = -np.inf  # no blank at (0, 1) either: every alignment is blocked
    x, *ints = _tensors(device, lp, targets, [3], [1], requires_grad=True)
    blocked = nn.RnntLossConfig(logits=False).init().forward(x, *ints)
    assert blocked.item() == np.inf
    assert not np.isnan(blocked.sum().backward().get(x).numpy()).any()


def test_float32(device):
    rng = np.random.default_rng(11)
    logits, targets = _inputs(rng)
    x = ember.tensor(logits, dtype=ember.float32, device=device)
    ints = [
        ember.tensor(np.asarray(a, dtype=np.int64), device=device) for a in (targets, [4, 4, 4], [3, 3, 3])
    ]
    got = nn.RnntLoss().forward(x, *ints)
    assert got.dtype is ember.float32
    lp = _log_softmax(logits)
    want = [brute_force(lp[b], targets[b], 4, 3, 0)[0] for b in range(3)]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


def test_defaults_are_burns():
    config = nn.RnntLossConfig()
    assert (config.blank, config.logits) == (0, True)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"blank": 5}, "blank index 5 must be less than vocab_size 5"),
        ({"targets": np.zeros((3, 3))}, r"targets\[0\] must hold labels in \[0, 5\) other than the blank 0"),
        ({"targets": np.ones((3, 2))}, "targets must be int"),
        ({"t_len": [0, 4, 4]}, r"logit_lengths\[0\] = 0 must be in \[1, 4\]"),
        ({"t_len": [5, 4, 4]}, r"logit_lengths\[0\] = 5"),
        ({"u_len": [4, 0, 0]}, r"target_lengths\[0\] = 4 must be in \[0, 3\]"),
        ({"logits": np.zeros((3, 4, 4))}, r"logits must be \[batch, T, U\+1, vocab\]"),
    ],
)
def test_errors_name_the_problem(change, message):
    rng = np.random.default_rng(12)
    logits, targets = _inputs(rng)
    kw = {"logits": logits, "targets": targets, "t_len": [4, 4, 4], "u_len": [3, 3, 3], **change}
    rnnt = nn.RnntLoss(blank=kw.pop("blank", 0))
    with pytest.raises(ValueError, match=message):
        rnnt.forward(*_tensors(DEV, kw["logits"], kw["targets"], kw["t_len"], kw["u_len"]))
