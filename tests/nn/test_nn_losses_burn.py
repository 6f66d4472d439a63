"""Burn's remaining losses (SmoothL1, Lp, KLDiv, PoissonNll, GaussianNLL, CosineEmbedding,
HingeEmbedding, MarginRanking, MultiMargin, SoftMargin, TripletMargin, CTC): values and
gradients against PyTorch (float64, every backend, each reduction), central differences,
Burn's defaults and reductions, ``-inf`` log-probabilities (KLDiv, CTC), infeasible CTC
alignments, and clear errors."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads

import ember
from ember import nn
from ember.nn import Reduction

REDUCTION = {"mean": Reduction.Mean, "sum": Reduction.Sum}


@dataclass
class Case:
    name: str
    make: Callable  # rng -> dict of NumPy arrays
    ember: Callable  # (dict of ember tensors, "none" | "mean" | "sum") -> tensor
    torch: Callable  # (torch.nn.functional, dict of torch tensors, reduction) -> tensor
    grad: tuple = ("x",)


def _reduced(loss_fn, unreduced_fn):
    """An ember case function: ``unreduced_fn(t)`` for "none", else ``loss_fn(t, Reduction)``."""
    return lambda t, red: unreduced_fn(t) if red == "none" else loss_fn(t, REDUCTION[red])


def _loss_of(loss, *keys):
    """An ember case function calling ``loss`` on the tensors named ``keys``: its
    ``forward_no_reduction`` for "none", else the loss with that reduction."""
    return _reduced(
        lambda t, red: loss(*(t[k] for k in keys), red),
        lambda t: loss.forward_no_reduction(*(t[k] for k in keys)),
    )


def _pm1(rng, shape):
    return np.where(rng.random(shape) < 0.5, -1, 1).astype(np.int64)


def _quiet(fn, *args, **kwargs):
    """``fn`` without its warnings (PyTorch's kl_div warns that 'mean' is not 'batchmean')."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _torch_reduce(loss, reduction):
    return loss if reduction == "none" else getattr(loss, reduction)()


def _log_softmax(a):
    a = a - a.max(-1, keepdims=True)
    return a - np.log(np.exp(a).sum(-1, keepdims=True))


SMOOTH = nn.SmoothL1LossConfig(beta=0.7).init()
KL = nn.KlDivLossConfig().init()
KL_LOG = nn.KlDivLossConfig(log_target=True).init()
POISSON = nn.PoissonNllLossConfig().init()
POISSON_RATE = nn.PoissonNllLossConfig(log_input=False, full=True, eps=1e-6).init()
GAUSSIAN = nn.GaussianNllLossConfig(full=True).init()
HINGE = nn.HingeEmbeddingLossConfig(margin=0.6).init()
RANKING = nn.MarginRankingLossConfig(margin=0.2).init()
MULTI = nn.MultiMarginLossConfig().init()
MULTI_SQ = nn.MultiMarginLossConfig(margin=0.8, p=2).init()
SOFT = nn.SoftMarginLoss()
TRIPLET = nn.TripletMarginLossConfig(margin=0.5).init()
TRIPLET_L1 = nn.TripletMarginLossConfig(margin=1.0, p=1.0).init()
TRIPLET_L3 = nn.TripletMarginLossConfig(margin=1.0, p=3.0).init()


def _triplet_case(name, loss, **torch_kwargs):
    """A TripletMarginLoss case: anchor, positive and negative all take gradients; PyTorch's
    ``eps`` is 0 to match Burn's distance."""
    return Case(
        name,
        lambda r: {key: r.standard_normal((6, 4)) for key in ("x", "x2", "x3")},
        _loss_of(loss, "x", "x2", "x3"),
        lambda F, t, red: F.triplet_margin_loss(
            t["x"], t["x2"], t["x3"], eps=0.0, reduction=red, **torch_kwargs
        ),
        grad=("x", "x2", "x3"),
    )


def _gaussian_case(name, var_shape):
    """A GaussianNllLoss case on ``[4, 5]`` inputs with a variance of ``var_shape`` (a ``[4, 1]``
    one is shared along the last dim); the input and the variance take gradients."""
    return Case(
        name,
        lambda r: {
            "x": r.standard_normal((4, 5)),
            "y": r.standard_normal((4, 5)),
            "v": r.random(var_shape) + 0.5,
        },
        _loss_of(GAUSSIAN, "x", "y", "v"),
        lambda F, t, red: F.gaussian_nll_loss(t["x"], t["y"], t["v"], full=True, reduction=red),
        grad=("x", "v"),
    )


CASES = [
    Case(
        "smooth_l1",
        lambda r: {"x": r.standard_normal((4, 5)) * 2, "y": r.standard_normal((4, 5))},
        _reduced(
            lambda t, red: SMOOTH.forward_with_reduction(t["x"], t["y"], red),
            lambda t: SMOOTH(t["x"], t["y"]),
        ),
        lambda F, t, red: F.smooth_l1_loss(t["x"], t["y"], beta=0.7, reduction=red),
    ),
    Case(
        "l1",
        lambda r: {"x": r.standard_normal((4, 5)), "y": r.standard_normal((4, 5))},
        _loss_of(nn.LpLossConfig.l1(), "x", "y"),
        lambda F, t, red: F.l1_loss(t["x"], t["y"], reduction=red),
    ),
    Case(
        "l2",
        lambda r: {"x": r.standard_normal((4, 5)), "y": r.standard_normal((4, 5))},
        _loss_of(nn.LpLossConfig.l2(), "x", "y"),
        lambda F, t, red: F.mse_loss(t["x"], t["y"], reduction=red),
    ),
    Case(
        "l3",
        lambda r: {"x": r.standard_normal((4, 5)), "y": r.standard_normal((4, 5))},
        _loss_of(nn.LpLossConfig(3.0).init(), "x", "y"),
        lambda F, t, red: _torch_reduce((t["x"] - t["y"]).abs() ** 3, red),
    ),
    Case(
        "kl_div",
        lambda r: {
            "x": _log_softmax(r.standard_normal((4, 6))),
            "y": np.exp(_log_softmax(r.standard_normal((4, 6)))),
        },
        _loss_of(KL, "x", "y"),
        lambda F, t, red: _quiet(F.kl_div, t["x"], t["y"], reduction=red),
    ),
    Case(
        "kl_div_log_target",
        lambda r: {
            "x": _log_softmax(r.standard_normal((4, 6))),
            "y": _log_softmax(r.standard_normal((4, 6))),
        },
        _loss_of(KL_LOG, "x", "y"),
        lambda F, t, red: _quiet(F.kl_div, t["x"], t["y"], reduction=red, log_target=True),
        grad=("x", "y"),
    ),
    Case(
        "poisson_log",
        lambda r: {"x": r.standard_normal((4, 5)), "y": r.poisson(2.0, (4, 5)).astype(np.float64)},
        _loss_of(POISSON, "x", "y"),
        lambda F, t, red: F.poisson_nll_loss(t["x"], t["y"], reduction=red),
    ),
    Case(
        "poisson_rate_full",
        lambda r: {"x": r.random((4, 5)) * 3 + 0.1, "y": r.poisson(2.0, (4, 5)).astype(np.float64)},
        _loss_of(POISSON_RATE, "x", "y"),
        lambda F, t, red: F.poisson_nll_loss(
            t["x"], t["y"], log_input=False, full=True, eps=1e-6, reduction=red
        ),
    ),
    _gaussian_case("gaussian_nll", (4, 5)),
    _gaussian_case("gaussian_nll_shared_var", (4, 1)),
    Case(
        "cosine_embedding",
        lambda r: {"x": r.standard_normal((6, 4)), "x2": r.standard_normal((6, 4)), "y": _pm1(r, 6)},
        lambda t, red: (
            nn.CosineEmbeddingLossConfig(margin=-0.2).init().forward_no_reduction(t["x"], t["x2"], t["y"])
            if red == "none"
            else nn.CosineEmbeddingLossConfig(margin=-0.2, reduction=REDUCTION[red]).init()(
                t["x"], t["x2"], t["y"]
            )
        ),
        lambda F, t, red: F.cosine_embedding_loss(t["x"], t["x2"], t["y"], margin=-0.2, reduction=red),
        grad=("x", "x2"),
    ),
    Case(
        "hinge_embedding",
        lambda r: {"x": r.standard_normal((4, 5)), "y": _pm1(r, (4, 5)).astype(np.float64)},
        _loss_of(HINGE, "x", "y"),
        lambda F, t, red: F.hinge_embedding_loss(t["x"], t["y"], margin=0.6, reduction=red),
    ),
    Case(
        "margin_ranking",
        lambda r: {"x": r.standard_normal(8), "x2": r.standard_normal(8), "y": _pm1(r, 8).astype(np.float64)},
        _loss_of(RANKING, "x", "x2", "y"),
        lambda F, t, red: F.margin_ranking_loss(t["x"], t["x2"], t["y"], margin=0.2, reduction=red),
        grad=("x", "x2"),
    ),
    Case(
        "multi_margin",
        lambda r: {"x": r.standard_normal((5, 4)), "y": r.integers(0, 4, 5)},
        _loss_of(MULTI, "x", "y"),
        lambda F, t, red: F.multi_margin_loss(t["x"], t["y"], reduction=red),
    ),
    Case(
        "multi_margin_squared",
        lambda r: {"x": r.standard_normal((5, 4)), "y": r.integers(0, 4, 5)},
        _loss_of(MULTI_SQ, "x", "y"),
        lambda F, t, red: F.multi_margin_loss(t["x"], t["y"], p=2, margin=0.8, reduction=red),
    ),
    Case(
        "soft_margin",
        lambda r: {"x": r.standard_normal((4, 5)) * 3, "y": _pm1(r, (4, 5)).astype(np.float64)},
        _loss_of(SOFT, "x", "y"),
        lambda F, t, red: F.soft_margin_loss(t["x"], t["y"], reduction=red),
    ),
    _triplet_case("triplet_margin", TRIPLET, margin=0.5),
    _triplet_case("triplet_margin_l1", TRIPLET_L1, margin=1.0, p=1),
    _triplet_case("triplet_margin_l3", TRIPLET_L3, margin=1.0, p=3),
]


def _tensors(data, device, grad=()):
    out = {}
    for key, value in data.items():
        t = ember.tensor(value, dtype="float64" if value.dtype.kind == "f" else None, device=device)
        out[key] = t.require_grad() if key in grad else t
    return out


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_loss_matches_torch(device, case, reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    data = case.make(rng)
    tt = {k: torch.from_numpy(v).requires_grad_(k in case.grad) for k, v in data.items()}
    want = case.torch(torch.nn.functional, tt, reduction)
    up = rng.standard_normal(tuple(want.shape))
    (want * torch.from_numpy(up)).sum().backward()
    et = _tensors(data, device, case.grad)
    got = case.ember(et, reduction)
    assert got.shape == tuple(want.shape) and got.dtype is ember.float64
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-11, atol=1e-13)
    grads = (got * ember.tensor(up, dtype="float64", device=device)).sum().backward()
    for key in case.grad:
        np.testing.assert_allclose(
            grads.get(et[key]).numpy(), tt[key].grad.numpy(), rtol=1e-10, atol=1e-13, err_msg=key
        )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_loss_gradients_match_central_differences(case):
    data = case.make(np.random.default_rng(1))
    et = _tensors(data, DEV, case.grad)
    check_grads(lambda: case.ember(et, "sum"), [et[k] for k in case.grad])


def test_burn_defaults_and_reductions():
    assert nn.SmoothL1LossConfig().beta == 1.0 and nn.KlDivLossConfig().log_target is False
    p = nn.PoissonNllLossConfig()
    assert (p.log_input, p.full, p.eps) == (True, False, 1e-8)
    g = nn.GaussianNllLossConfig()
    assert (g.eps, g.full) == (1e-6, False)
    c = nn.CosineEmbeddingLossConfig()
    assert (c.margin, c.reduction) == (0.0, Reduction.Mean)
    assert nn.HingeEmbeddingLossConfig().margin == 1.0 and nn.MarginRankingLossConfig().margin == 0.0
    assert (nn.MultiMarginLossConfig().margin, nn.MultiMarginLossConfig().p) == (1.0, 1)
    assert (nn.TripletMarginLossConfig().margin, nn.TripletMarginLossConfig().p) == (1.0, 2.0)
    assert (nn.CtcLossConfig().blank, nn.CtcLossConfig().zero_infinity) == (0, False)
    assert nn.loss.LpLossConfig.l1().p == 1.0 and nn.loss.KlDivLoss is nn.KlDivLoss
    # configs save the reduction by member name, as serde does
    assert '"reduction": "Sum"' in nn.CosineEmbeddingLossConfig(reduction=Reduction.Sum).to_json()
    x = ember.tensor(
        _log_softmax(np.random.default_rng(2).standard_normal((4, 3))), dtype="float64", device=DEV
    )
    y = x.exp()
    y2 = ember.tensor(np.full((4, 3), 1 / 3), dtype="float64", device=DEV)
    terms = KL.forward_no_reduction(x, y2)
    # KLDiv: Auto = BatchMean (the sum over the batch size), Mean over every element
    assert float(KL(x, y2)) == pytest.approx(float(terms.sum()) / 4, rel=1e-14)
    assert float(KL(x, y2, "batchmean")) == pytest.approx(float(terms.sum()) / 4, rel=1e-14)
    assert float(KL(x, y2, Reduction.Mean)) == pytest.approx(float(terms.mean()), rel=1e-14)
    assert abs(float(KL(x, y))) < 1e-15
    with pytest.raises(ValueError, match="SmoothL1Loss: BatchMean reduction is not supported"):
        SMOOTH.forward_with_reduction(x, y, Reduction.BatchMean)
    with pytest.raises(ValueError, match="CrossEntropyLoss: BatchMean reduction is not supported"):
        nn.CrossEntropyLossConfig(weights=[1.0, 1.0, 1.0]).init(DEV, "float64")(
            x, ember.tensor([0, 1, 2, 0]), Reduction.BatchMean
        )
    with pytest.raises(ValueError, match="unsupported reduction 'median'"):
        nn.LpLoss(2.0)(x, y, "median")
    reduced = SMOOTH.forward_reduce_dims(x.reshape(2, 2, 3), y.reshape(2, 2, 3), [1, -1])
    np.testing.assert_allclose(
        reduced.numpy(), SMOOTH(x, y).numpy().reshape(2, 2, 3).mean((1, 2), keepdims=True)
    )
    assert nn.LpLoss(1.0).forward_reduce_dims(x, y, [0]).shape == (1, 3)


def test_kl_div_with_minus_inf_log_probabilities(device):
    # log-probabilities of -inf under a zero target add nothing (Burn's and PyTorch's formula say
    # NaN), and their gradient is 0; under a positive target the divergence is infinite
    with np.errstate(divide="ignore"):
        pred = np.log(np.array([[0.5, 0.5, 0.0], [0.2, 0.0, 0.8]]))
        target = np.array([[0.25, 0.75, 0.0], [0.5, 0.0, 0.5]])
        log_target = np.log(target)  # -inf where the target is 0
    x = ember.tensor(pred, dtype="float64", device=device).require_grad()
    loss = KL(x, ember.tensor(target, dtype="float64", device=device))
    mask = target > 0
    want = (target[mask] * (np.log(target[mask]) - pred[mask])).sum() / 2
    assert float(loss) == pytest.approx(want, rel=1e-14)
    grad = loss.backward().get(x).numpy()
    np.testing.assert_allclose(grad, np.where(mask, -target / 2, 0.0), rtol=1e-14)
    loss = KL_LOG(x, ember.tensor(log_target, dtype="float64", device=device), Reduction.Sum)
    assert float(loss) == pytest.approx(want * 2, rel=1e-14)
    assert np.isfinite(loss.backward().get(x).numpy()).all()
    hopeless = KL(x, ember.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]], dtype="float64", device=device))
    assert float(hopeless) == math.inf


# ---- CTC --------------------------------------------------------------------------------------
def _ctc_inputs(rng, frames=9, batch=4, classes=5, width=4):
    logits = rng.standard_normal((frames, batch, classes))
    targets = rng.integers(1, classes, (batch, width))
    targets[0, :3] = [2, 2, 3]  # a repeated label: needs a blank between
    input_lengths = np.array([frames, frames - 2, 7, 5])[:batch]
    target_lengths = np.array([3, 4, 0, 2])[:batch]
    targets[2] = -1  # padding past a target's length is ignored (even out of range)
    return logits, targets, input_lengths, target_lengths


def _torch_ctc(
    torch, logits, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False
):
    lt = torch.from_numpy(logits).requires_grad_()
    lp = torch.nn.functional.log_softmax(lt, 2)
    tgt = torch.from_numpy(np.where(targets < 0, 1 if blank != 1 else 2, targets))
    loss = torch.nn.functional.ctc_loss(
        lp,
        tgt,
        torch.from_numpy(input_lengths),
        torch.from_numpy(target_lengths),
        blank=blank,
        reduction=reduction,
        zero_infinity=zero_infinity,
    )
    return loss, lt


def _ember_ctc(loss, logits, targets, input_lengths, target_lengths, device, reduction=None):
    x = ember.tensor(logits, dtype="float64", device=device).require_grad()
    args = (
        x.log_softmax(2),
        ember.tensor(targets, device=device),
        ember.tensor(input_lengths, device=device),
        ember.tensor(target_lengths, device=device),
    )
    out = loss(*args) if reduction is None else loss.forward_with_reduction(*args, reduction)
    return out, x


@pytest.mark.parametrize("blank", [0, 3])
def test_ctc_matches_torch(device, blank):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    logits, targets, in_len, tg_len = _ctc_inputs(rng)
    targets = np.where(targets == blank, (blank + 1) % 5 or 1, targets)
    targets[2] = -1
    ctc = nn.CtcLossConfig(blank=blank).init()
    for reduction in ("none", "mean", "sum"):
        want, lt = _torch_ctc(torch, logits, targets, in_len, tg_len, blank, reduction)
        got, x = _ember_ctc(
            ctc,
            logits,
            targets,
            in_len,
            tg_len,
            device,
            None if reduction == "none" else REDUCTION[reduction],
        )
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-11)
        up = rng.standard_normal(tuple(want.shape))
        (want * torch.from_numpy(up)).sum().backward()
        grad = (got * ember.tensor(up, dtype="float64", device=device)).sum().backward().get(x)
        # PyTorch's CTC gradient assumes log_softmax inputs: compare through the logits
        np.testing.assert_allclose(grad.numpy(), lt.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_ctc_gradient_matches_central_differences():
    logits = np.random.default_rng(4).standard_normal((6, 3, 4))
    targets, in_len, tg_len = np.array([[1, 1], [3, 0], [0, 0]]), np.array([6, 4, 3]), np.array([2, 1, 0])
    lp = ember.tensor(
        _log_softmax(logits), dtype="float64", device=DEV
    ).require_grad()  # any log-probabilities
    ctc = nn.CtcLossConfig().init()
    check_grads(
        lambda: ctc.forward_with_reduction(
            lp, ember.tensor(targets), ember.tensor(in_len), ember.tensor(tg_len), Reduction.Sum
        ),
        [lp],
    )


def test_ctc_infeasible_alignments_and_zero_infinity(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((3, 2, 4))
    targets = np.array([[2, 2, 2], [1, 2, 0]])  # [2, 2, 2] needs 5 frames, only 3 exist
    in_len, tg_len = np.array([3, 3]), np.array([3, 2])
    loss, _ = _ember_ctc(nn.CtcLoss(), logits, targets, in_len, tg_len, device)
    assert loss.numpy()[0] == np.inf and np.isfinite(loss.numpy()[1])
    for reduction in ("none", "sum"):
        want, lt = _torch_ctc(torch, logits, targets, in_len, tg_len, reduction=reduction, zero_infinity=True)
        got, x = _ember_ctc(
            nn.CtcLoss(zero_infinity=True),
            logits,
            targets,
            in_len,
            tg_len,
            device,
            None if reduction == "none" else Reduction.Sum,
        )
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-11)
        want.sum().backward()
        grad = got.sum().backward().get(x).numpy()
        np.testing.assert_array_equal(grad[:, 0], 0.0)
        np.testing.assert_allclose(grad, lt.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_ctc_with_minus_inf_log_probabilities(device):
    # classes with probability 0 (-inf log-probability) on some frames: finite loss, finite
    # gradient, equal to the same problem with a huge negative number instead of -inf
    rng = np.random.default_rng(6)
    lp = _log_softmax(rng.standard_normal((6, 2, 4)))
    lp[1, 0, 2] = lp[3, :, 1] = lp[0, 1, 0] = -np.inf
    targets, in_len, tg_len = np.array([[1, 2], [3, 3]]), np.array([6, 6]), np.array([2, 2])
    ctc = nn.CtcLoss()
    results = []
    for value in (lp, np.where(np.isinf(lp), -1e4, lp)):
        x = ember.tensor(value, dtype="float64", device=device).require_grad()
        loss = ctc.forward_with_reduction(
            x,
            ember.tensor(targets, device=device),
            ember.tensor(in_len, device=device),
            ember.tensor(tg_len, device=device),
            Reduction.Sum,
        )
        results.append((float(loss), loss.backward().get(x).numpy()))
    (loss_inf, grad_inf), (loss_big, grad_big) = results
    assert np.isfinite(loss_inf) and np.isfinite(grad_inf).all()
    assert loss_inf == pytest.approx(loss_big, rel=1e-13)
    np.testing.assert_allclose(grad_inf, grad_big, rtol=1e-12, atol=1e-300)
    assert (grad_inf[np.isinf(lp)] == 0).all()


def test_ctc_edge_cases(device):
    ctc = nn.CtcLoss()
    zero = ember.zeros(0, 2, 3, dtype="float64", device=device)  # no frames, empty targets: probability 1
    out = ctc(
        zero,
        ember.zeros(2, 0, dtype="int64", device=device),
        ember.tensor([0, 0], device=device),
        ember.tensor([0, 0], device=device),
    )
    np.testing.assert_array_equal(out.numpy(), [0.0, 0.0])
    # one frame, one label: -log p(label)
    lp = np.log(np.array([[[0.2, 0.5, 0.3]]]))
    out = ctc(
        ember.tensor(lp, dtype="float64", device=device),
        ember.tensor([[2]], device=device),
        ember.tensor([1], device=device),
        ember.tensor([1], device=device),
    )
    assert float(out[0]) == pytest.approx(-math.log(0.3), rel=1e-14)
    # uniform probabilities over 2 frames: "1 2" and "blank blank" are the only alignments
    per = ctc(
        ember.tensor(np.log(np.full((2, 2, 3), 1 / 3)), dtype="float64", device=device),
        ember.tensor([[1, 2], [0, 0]], device=device),
        ember.tensor([2, 2], device=device),
        ember.tensor([2, 0], device=device),
    ).numpy()
    np.testing.assert_allclose(per, [-math.log(1 / 9), -math.log(1 / 9)], rtol=1e-14)


def test_ctc_rejects_bad_inputs():
    ctc = nn.CtcLoss()
    lp = ember.zeros(4, 2, 3, dtype="float64")
    args = [ember.tensor([[1, 2], [1, 0]]), ember.tensor([4, 4]), ember.tensor([2, 1])]
    with pytest.raises(ValueError, match="blank index 3 must be less than num_classes 3"):
        nn.CtcLoss(blank=3)(lp, *args)
    with pytest.raises(ValueError, match=r"log_probs must be \[time, batch, classes\]"):
        ctc(ember.zeros(4, 3, dtype="float64"), *args)
    with pytest.raises(ValueError, match=r"input_lengths\[1\] = 5 must be in \[target_lengths\[1\] = 1, 4\]"):
        ctc(lp, args[0], ember.tensor([4, 5]), args[2])
    with pytest.raises(ValueError, match=r"input_lengths\[0\] = 1 must be in \[target_lengths\[0\] = 2, 4\]"):
        ctc(lp, args[0], ember.tensor([1, 4]), args[2])
    with pytest.raises(ValueError, match=r"target_lengths\[0\] = 3 must be in \[0, 2\]"):
        ctc(lp, args[0], args[1], ember.tensor([3, 1]))
    with pytest.raises(
        ValueError, match=r"targets\[0\] must hold classes in \[0, 3\) other than the blank 0"
    ):
        ctc(lp, ember.tensor([[1, 0], [1, 0]]), *args[1:])
    with pytest.raises(ValueError, match=r"input_lengths must be an int tensor \[2\]"):
        ctc(lp, args[0], ember.tensor([4.0, 4.0]), args[2])
    with pytest.raises(ValueError, match="BatchMean reduction is not supported"):
        ctc.forward_with_reduction(lp, *args, Reduction.BatchMean)


def test_losses_reject_bad_inputs():
    x = ember.zeros(4, 3, dtype="float64")
    with pytest.raises(
        ValueError,
        match=r"SmoothL1Loss: targets must have the shape of predictions \[4, 3\], "
        r"got \[3, 4\]",
    ):
        SMOOTH(x, ember.zeros(3, 4))
    with pytest.raises(ValueError, match="SmoothL1Loss: beta must be positive"):
        nn.SmoothL1LossConfig(beta=0.0).init()
    with pytest.raises(ValueError, match="LpLoss: the order of the norm p must be positive"):
        nn.LpLossConfig(0.0).init()
    with pytest.raises(TypeError, match="KlDivLoss: predictions must be a float tensor"):
        KL(ember.zeros(4, 3, dtype="int64"), x)
    with pytest.raises(ValueError, match="PoissonNllLoss: all the values of targets must be non-negative"):
        POISSON(x, x - 1.0)
    with pytest.raises(ValueError, match="when log_input is False, all the predictions must be non-negative"):
        POISSON_RATE(x - 1.0, x)
    with pytest.raises(ValueError, match="PoissonNllLoss: eps must be a positive number"):
        nn.PoissonNllLossConfig(eps=0.0).init()
    with pytest.raises(ValueError, match=r"GaussianNllLoss: var must have the shape of input \[4, 3\]"):
        GAUSSIAN(x, x, ember.ones(4, 2, dtype="float64"))
    with pytest.raises(ValueError, match=r"CosineEmbeddingLoss: target must be \[4\]"):
        nn.CosineEmbeddingLoss()(x, x, ember.tensor([1, -1]))
    with pytest.raises(ValueError, match=r"MultiMarginLoss: target must be int class indices \[4\]"):
        MULTI(x, ember.tensor([0.0, 1.0, 2.0, 0.0]))
    with pytest.raises(IndexError, match="MultiMarginLoss: target class 3 is out of range for size 3"):
        MULTI(x, ember.tensor([0, 1, 3, 0]))
    with pytest.raises(ValueError, match="MultiMarginLoss: only p = 1 or p = 2"):
        nn.MultiMarginLossConfig(p=3).init()
    with pytest.raises(ValueError, match="MarginRankingLoss: margin must be a non-negative"):
        nn.MarginRankingLossConfig(margin=-1.0).init()
    with pytest.raises(ValueError, match=r"TripletMarginLoss: negative must have the shape of anchor"):
        TRIPLET(x, x, ember.zeros(4, 2, dtype="float64"))
