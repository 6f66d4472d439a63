"""Rows at the edge of the float range in the norms and the softmax family, on every backend:
a layer-norm row whose variance overflows is NaN (not a row of zeros that looks healthy); a
log-softmax or cross-entropy row with +inf is NaN, as softmax and PyTorch give; at |logit| up
to 3e38 the log-probabilities, losses and gradients are PyTorch's (no cancellation of
``logsumexp`` against the logits). PyTorch is the oracle where installed; the expected values
written here are the exact ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

# NumPy (the reference) warns where these rows overflow or meet inf - inf: that is the point
pytestmark = [
    pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
]


def _t(values, device, dtype=np.float32, grad=False):
    return ember.tensor(np.array(values, dtype=dtype), device=device, requires_grad=grad)


def _torch():
    return pytest.importorskip("torch")


@pytest.fixture(params=["fused", "numba"])
def cpu_path(request, backend, monkeypatch):
    """On cpu, float32 layer-norm runs the native C++ kernel, or the Numba one without it:
    both are tested (other backends run once)."""
    if request.param == "numba":
        if not hasattr(backend, "_native"):
            pytest.skip(f"{backend.name} has one layer-norm kernel")
        monkeypatch.setattr(backend, "_native", False)
    return request.param


# ---- layer norm -------------------------------------------------------------------------------
OVERFLOWING_ROWS = {
    "1e20": [1e20, 1.0, 2.0, 3.0],
    "3e38": [3e38, 1.0, 2.0, 3.0],
    "+-3e38": [3e38, -3e38, 0.0, 0.0],
    "+-2e19": [2e19, -2e19, 2e19, -2e19],
}


@pytest.mark.parametrize("affine", [False, True], ids=["plain", "affine"])
@pytest.mark.parametrize("row", sorted(OVERFLOWING_ROWS))
def test_layer_norm_row_whose_variance_overflows_is_nan_forward_and_backward(device, cpu_path, row, affine):
    x = _t([OVERFLOWING_ROWS[row], [1.0, 2.0, 3.0, 5.0]], device, grad=True)
    gamma = _t([1.0, 2.0, 0.5, 1.0], device, grad=True) if affine else None
    beta = _t([0.0, 1.0, 0.0, -1.0], device, grad=True) if affine else None
    y = ember.layer_norm(x, gamma, beta)
    got = y.numpy()
    assert np.isnan(got[0]).all(), f"row {row}: {got[0]} (a variance past float32's range)"
    # the healthy row next to it is untouched
    want = (np.array([1, 2, 3, 5.0]) - 2.75) / math.sqrt(np.var([1, 2, 3, 5.0]) + 1e-5)
    if affine:
        want = want * np.array([1.0, 2.0, 0.5, 1.0]) + np.array([0.0, 1.0, 0.0, -1.0])
    np.testing.assert_allclose(got[1], want, rtol=1e-5, atol=1e-6)
    grads = (y * _t([[1.0, -2.0, 3.0, 0.5]] * 2, device)).sum().backward()
    dx = grads[x].numpy()
    assert np.isnan(dx[0]).all()
    assert np.isfinite(dx[1]).all()


def test_layer_norm_float64_row_past_float64_range_is_nan(device):
    x = _t([[1e160, 1.0, 2.0, 3.0], [1e150, 1.0, 2.0, 3.0]], device, dtype=np.float64)
    got = ember.layer_norm(x).numpy()
    assert np.isnan(got[0]).all()
    np.testing.assert_allclose(
        got[1], [math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3)]
    )


@pytest.mark.torch
@pytest.mark.parametrize(
    "row",
    [[1e20, 1.0, 2.0, 3.0], [3e38, 1.0, 2.0, 3.0], [math.inf, 1.0, 2.0, 3.0], [math.nan, 1.0, 2.0, 3.0]],
    ids=["1e20", "3e38", "inf", "nan"],
)
def test_layer_norm_of_the_issue_rows_matches_torch(device, row):
    torch = _torch()
    want = torch.nn.functional.layer_norm(torch.tensor([row], dtype=torch.float32), (4,)).numpy()
    np.testing.assert_array_equal(ember.layer_norm(_t([row], device)).numpy(), want)


@pytest.mark.torch
@pytest.mark.parametrize(
    "row",
    [[1e20, 1.0, 2.0, 3.0], [3e38, -3e38, 0.0, 1.0], [math.inf, 1.0, 2.0, 3.0], [-math.inf] * 4],
    ids=["1e20", "+-3e38", "inf", "all-inf"],
)
def test_rms_norm_at_the_edges_matches_torch(device, row):
    # PyTorch's rms_norm gives 0 (not NaN) where the mean square overflows: rstd is 0 and
    # x * 0 = 0 for finite x; ember matches it, NaN only where an element is infinite
    torch = _torch()
    want = torch.nn.functional.rms_norm(torch.tensor([row], dtype=torch.float32), (4,), eps=1e-5).numpy()
    np.testing.assert_array_equal(ember.rms_norm(_t([row], device), eps=1e-5).numpy(), want)


@pytest.mark.parametrize("layer", ["group", "instance", "batch"])
def test_group_instance_and_batch_norm_with_an_overflowing_variance_are_nan(device, layer):
    from ember import nn

    # [batch 2, channels 2, 3]: channel 0 of sample 0 holds 1e20, channel 1 is ordinary
    x = np.array([[[1e20, 1.0, 2.0], [1.0, 2.0, 4.0]], [[0.5, 1.0, 2.0], [3.0, 2.0, 4.0]]], np.float32)
    if layer == "group":
        norm, bad = nn.GroupNormConfig(2, 2).init(device), (0, 0)
    elif layer == "instance":
        norm, bad = nn.InstanceNormConfig(2).init(device), (0, 0)
    else:  # statistics per channel over the batch: channel 0 of both samples
        norm, bad = nn.BatchNormConfig(2).init(device), (slice(None), 0)
    xt = ember.tensor(x, device=device, requires_grad=True)
    y = norm(xt)
    got = y.numpy()
    assert np.isnan(got[bad]).all(), got
    healthy = np.ones(got.shape, bool)
    healthy[bad] = False
    assert np.isfinite(got[healthy]).all(), got
    dx = (
        (y * ember.tensor(np.arange(12.0, dtype=np.float32).reshape(2, 2, 3), device=device))
        .sum()
        .backward()[xt]
    )
    assert np.isnan(dx.numpy()[bad]).all()
    assert np.isfinite(dx.numpy()[healthy]).all()


@pytest.mark.parametrize("affine", [False, True], ids=["plain", "affine"])
def test_rms_norm_row_whose_mean_square_overflows_has_a_nan_gradient(device, affine):
    # forward x * rstd = x * 0 is PyTorch's 0; the gradient is NaN, as PyTorch's at 3e38 (at
    # 1e20 PyTorch's is 0 or NaN depending on whether its sum(dy * x) overflows), not a 0
    # that hides the overflow
    x = _t([[1e20, 1.0, 2.0, 3.0], [3e38, -3e38, 0.0, 1.0], [1.0, 2.0, 3.0, 5.0]], device, grad=True)
    gamma = _t([1.0, 2.0, 0.5, 1.0], device, grad=True) if affine else None
    y = ember.rms_norm(x, gamma)
    np.testing.assert_array_equal(y.numpy()[:2], np.zeros((2, 4)))
    grads = (y * _t([[1.0, -2.0, 3.0, 0.5]] * 3, device)).sum().backward()
    dx = grads[x].numpy()
    assert np.isnan(dx[:2]).all(), dx
    assert np.isfinite(dx[2]).all()
    if affine:
        np.testing.assert_array_equal(np.isfinite(grads[gamma].numpy()), [True] * 4)


@pytest.mark.torch
def test_rms_norm_gradient_is_nan_wherever_torchs_is(device):
    # PyTorch's gradient of an overflowed row is NaN where its inf * 0 terms land (every
    # element of [3e38, -3e38, 0, 1]; only the 3e38 of [3e38, 1, 2, 3]); ember's is NaN over
    # the whole row, and equal to PyTorch's on healthy rows
    torch = _torch()
    rows = [[3e38, -3e38, 0.0, 1.0], [3e38, 1.0, 2.0, 3.0], [0.5, -1.5, 2.0, 3.0]]
    tx = torch.tensor(rows, requires_grad=True)
    seed = [[1.0, -0.5, 2.0, 0.25]] * 3
    torch.nn.functional.rms_norm(tx, (4,), eps=1e-5).backward(torch.tensor(seed))
    want = tx.grad.numpy()
    x = _t(rows, device, grad=True)
    dx = (ember.rms_norm(x, eps=1e-5) * _t(seed, device)).sum().backward()[x].numpy()
    assert np.isnan(dx[np.isnan(want)]).all()
    assert np.isnan(dx[:2]).all()
    np.testing.assert_allclose(dx[2], want[2], rtol=1e-5, atol=1e-6)


# ---- log-softmax ------------------------------------------------------------------------------
SPECIAL_ROWS = {
    "+inf": [math.inf, 1.0, 2.0, 3.0],
    "+inf twice": [math.inf, math.inf, 2.0, 3.0],
    "+inf and -inf": [math.inf, -math.inf, 2.0, 3.0],
    "all -inf": [-math.inf] * 4,
    "nan": [math.nan, 1.0, 2.0, 3.0],
}


@pytest.mark.parametrize("row", sorted(SPECIAL_ROWS))
def test_log_softmax_row_with_inf_or_nan_is_nan_as_softmax(device, row):
    x = _t([SPECIAL_ROWS[row], [0.0, 1.0, 2.0, 3.0]], device)
    got = ember.log_softmax(x).numpy()
    assert np.isnan(got[0]).all(), f"{row}: {got[0]}"
    assert np.isnan(ember.softmax(x).numpy()[0]).all()
    np.testing.assert_allclose(got[1], np.arange(4.0) - np.log(np.exp(np.arange(4.0)).sum()), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_log_softmax_keeps_log_of_the_sum_beside_huge_logits(device, dtype):
    # x - logsumexp(x) rounds log(2) away beside 3e38 (and 1e20): both gave 0, not -log 2
    big = 3e38 if dtype == np.float32 else 1e300
    x = _t([[big, big, 1.0], [1e20, 1e20, 1e20], [-big, -big, -big]], device, dtype=dtype)
    got = ember.log_softmax(x).numpy()
    np.testing.assert_allclose(got[0, :2], [-math.log(2)] * 2, rtol=1e-6)
    np.testing.assert_allclose(got[1], [-math.log(3)] * 3, rtol=1e-6)
    np.testing.assert_allclose(got[2], [-math.log(3)] * 3, rtol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize(
    "row",
    [*SPECIAL_ROWS.values(), [3e38, 3e38, 1.0, 2.0], [3e38, -3e38, 0.0, 1.0], [-math.inf, 1.0, 2.0, 3.0]],
    ids=[*SPECIAL_ROWS, "3e38 twice", "+-3e38", "-inf"],
)
def test_log_softmax_at_the_edges_matches_torch(device, row):
    torch = _torch()
    want = torch.log_softmax(torch.tensor([row], dtype=torch.float32), -1).numpy()
    got = ember.log_softmax(_t([row], device)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# ---- cross-entropy ----------------------------------------------------------------------------
def _ce(device, rows, targets, smoothing, dtype=np.float32, grad=False):
    x = _t(rows, device, dtype=dtype, grad=grad)
    loss = ember.cross_entropy_per_sample(x, ember.tensor(np.array(targets), device=device), smoothing)
    return x, loss


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 1.0])
def test_cross_entropy_at_3e38_has_no_cancellation(device, smoothing):
    # one class: every log-probability is exactly 0, so is the loss (lse - logit gave ~1e31)
    _, loss = _ce(device, [[3e38], [-3e38], [1e20]], [0, 0, 0], smoothing)
    np.testing.assert_array_equal(loss.numpy(), [0.0, 0.0, 0.0])
    # two equal huge logits: log 2 for each target
    _, loss = _ce(device, [[3e38, 3e38], [-1e20, -1e20]], [1, 0], smoothing)
    np.testing.assert_allclose(loss.numpy(), [math.log(2)] * 2, rtol=1e-6)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("row", sorted(SPECIAL_ROWS))
def test_cross_entropy_row_with_inf_or_nan_is_nan(device, row, smoothing):
    x, loss = _ce(device, [SPECIAL_ROWS[row], [0.0, 1.0, 2.0, 3.0]], [2, 3], smoothing, grad=True)
    got = loss.numpy()
    assert np.isnan(got[0]), f"{row}: {got[0]}"
    assert np.isfinite(got[1])
    dx = loss.sum().backward()[x].numpy()
    assert np.isnan(dx[0]).all()
    assert np.isfinite(dx[1]).all()


def test_cross_entropy_gradient_beside_huge_logits_is_the_softmax(device):
    # exp(x - lse) with lse = 1e20 + log 2 rounded to 1e20 gave [1, 1], not [0.5, 0.5]
    x, loss = _ce(device, [[1e20, 1e20, 1.0], [3e38, 3e38, 3e38]], [0, 2], 0.0, grad=True)
    dx = loss.sum().backward()[x].numpy()
    np.testing.assert_allclose(dx, [[-0.5, 0.5, 0.0], [1 / 3, 1 / 3, -2 / 3]], rtol=1e-6, atol=1e-7)


@pytest.mark.torch
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 1.0])
@pytest.mark.parametrize(
    "rows",
    [
        [[3e38, 1.0, 2.0, 3.0], [3e38, -3e38, 0.0, 1.0], [3e38, 3e38, 3e38, 1.0]],
        [[1e20, 1e20, 1.0, 2.0], [-3e38, 0.0, 1.0, 2.0], [1e8, 1e8 + 8, 1e8 - 8, 1e8]],
        [[-math.inf, 1.0, 2.0, 3.0], [1.0, -math.inf, 2.0, -math.inf], [0.5, -1.5, 2.0, 3.0]],
        [*SPECIAL_ROWS.values()][:3],
    ],
    ids=["3e38", "1e20", "-inf", "+inf"],
)
def test_cross_entropy_and_its_gradient_at_the_edges_match_torch(device, rows, smoothing):
    torch = _torch()
    targets = [0, 1, 3][: len(rows)]
    tx = torch.tensor(rows, dtype=torch.float32, requires_grad=True)
    if smoothing == 1.0:
        # PyTorch multiplies the target's term by its weight 0, and 0 * inf (a target logit
        # of -inf, or -3e38 beside 3e38) is NaN there; ember leaves a weight-0 term out: the
        # loss is PyTorch's smoothing term alone
        want = -torch.log_softmax(tx, 1).sum(1) / tx.shape[1]
    else:
        want = torch.nn.functional.cross_entropy(
            tx, torch.tensor(targets), reduction="none", label_smoothing=smoothing
        )
    want.sum().backward()
    x, loss = _ce(device, rows, targets, smoothing, grad=True)
    np.testing.assert_allclose(loss.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    dx = loss.sum().backward()[x].numpy()
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_cross_entropy_smoothing_term_past_the_range_is_inf_as_torch(device):
    # sum_j logp_j = -6e38 is past float32's range: +inf, as PyTorch's smoothing term gives
    _, loss = _ce(device, [[3e38, 1.0, 2.0, 3.0]], [0], 0.1)
    assert loss.numpy()[0] == math.inf


def test_the_backends_agree_on_every_special_row():
    rows = [*SPECIAL_ROWS.values(), *OVERFLOWING_ROWS.values(), [3e38, 3e38, 1.0, 2.0]]
    targets = [i % 4 for i in range(len(rows))]
    results = {}
    for device in ("reference", "cpu"):
        x = _t(rows, device, grad=True)
        y = ember.tensor(np.array(targets), device=device)
        outs = [ember.log_softmax(x), ember.layer_norm(x)]
        outs += [ember.cross_entropy_per_sample(x, y, s) for s in (0.0, 0.1)]
        results[device] = [o.numpy() for o in outs] + [
            ember.cross_entropy_per_sample(x, y, 0.1).sum().backward()[x].numpy()
        ]
    for got, want in zip(results["cpu"], results["reference"]):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_float16_rows_are_computed_in_float32_while_the_cpu_kernels_compile(monkeypatch):
    # until its kernels are compiled the cpu backend runs composed stand-ins: they too compute
    # float16 in float32, as the kernels and the reference (squares of 1000 overflow float16)
    from ember.tensor.device import as_device

    monkeypatch.setattr(as_device("cpu").backend._tiers, "ready_for", lambda array, kernel=None: False)
    x = np.array([[1000.0, 1.0, 2.0, 3.0], [-300.0, 0.5, 200.0, 1.0]], np.float16)
    results = {}
    for device in ("reference", "cpu"):
        t = ember.tensor(x, device=device, requires_grad=True)
        outs = [ember.layer_norm(t), ember.rms_norm(t)]
        grads = (outs[0] * outs[0] + outs[1]).sum().backward()
        results[device] = [o.numpy() for o in outs] + [grads[t].numpy()]
    for got, want in zip(results["cpu"], results["reference"]):
        assert np.isfinite(want).all()
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
