import numpy as np
import pytest
from helpers.devices import DEV
from helpers.gradcheck import check_grads

import ember
from ember import nn

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((6, 4))
TARGETS = np.array([0, 3, 1, 1, 2, 0])


def t(a, dtype=None):
    return ember.tensor(a, dtype=dtype, device=DEV)


def _logp(x):
    x = x - x.max(1, keepdims=True)
    return x - np.log(np.exp(x).sum(1, keepdims=True))


def test_cross_entropy_default_and_pad_tokens():
    loss = nn.CrossEntropyLossConfig().init(DEV)
    out = loss(t(LOGITS, "float64"), t(TARGETS))
    per = -_logp(LOGITS)[np.arange(6), TARGETS]
    assert out.shape == () and abs(float(out) - per.mean()) < 1e-10
    padded = nn.CrossEntropyLoss.new(pad_index=1, device=DEV)(t(LOGITS, "float64"), t(TARGETS))
    # pads are zeroed but the mean still divides by the whole batch (Burn)
    assert abs(float(padded) - per[TARGETS != 1].sum() / 6) < 1e-10
    both = nn.CrossEntropyLossConfig(pad_tokens=[1, 2]).init(DEV)(t(LOGITS, "float64"), t(TARGETS))
    assert abs(float(both) - per[(TARGETS != 1) & (TARGETS != 2)].sum() / 6) < 1e-10
    total = loss(t(LOGITS, "float64"), t(TARGETS), nn.Reduction.Sum)
    assert abs(float(total) - per.sum()) < 1e-10


def test_cross_entropy_weights_and_smoothing():
    w = np.array([0.5, 1.0, 2.0, 3.0])
    logp = _logp(LOGITS)
    per = -logp[np.arange(6), TARGETS]
    out = nn.CrossEntropyLossConfig(weights=list(w)).init(DEV, "float64")(t(LOGITS, "float64"), t(TARGETS))
    assert abs(float(out) - (per * w[TARGETS]).sum() / w[TARGETS].sum()) < 1e-10
    a = 0.1
    y = (1 - a) * np.eye(4)[TARGETS] + a / 4
    out = nn.CrossEntropyLossConfig(smoothing=a).init(DEV)(t(LOGITS, "float64"), t(TARGETS))
    assert abs(float(out) - (-(y * logp).sum(1)).mean()) < 1e-10
    out = nn.CrossEntropyLossConfig(smoothing=a, weights=list(w), pad_tokens=[3]).init(DEV, "float64")(
        t(LOGITS, "float64"), t(TARGETS)
    )
    terms = -(y * logp * w).sum(1)
    terms[TARGETS == 3] = 0
    # Burn divides by the weights of all targets, pads included
    assert abs(float(out) - terms.sum() / w[TARGETS].sum()) < 1e-10


def test_cross_entropy_from_probabilities():
    probs = np.exp(_logp(LOGITS))
    out = nn.CrossEntropyLossConfig(logits=False).init(DEV)(t(probs, "float64"), t(TARGETS))
    assert abs(float(out) + np.log(probs[np.arange(6), TARGETS]).mean()) < 1e-10
    a = 0.2
    y = (1 - a) * np.eye(4)[TARGETS] + a / 4
    out = nn.CrossEntropyLossConfig(logits=False, smoothing=a).init(DEV)(t(probs, "float64"), t(TARGETS))
    assert abs(float(out) + (y * np.log(probs)).sum(1).mean()) < 1e-10


def test_cross_entropy_gradients():
    x = t(LOGITS, "float64").require_grad()
    for cfg in (
        nn.CrossEntropyLossConfig(pad_tokens=[2]),
        nn.CrossEntropyLossConfig(smoothing=0.1),
        nn.CrossEntropyLossConfig(weights=[1.0, 2.0, 0.5, 1.5], smoothing=0.05),
    ):
        loss = cfg.init(DEV, "float64")
        check_grads(lambda: loss(x, t(TARGETS)), [x])


def test_cross_entropy_matches_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, y = torch.from_numpy(LOGITS), torch.from_numpy(TARGETS)
    for smoothing in (0.0, 0.15):
        ref = F.cross_entropy(x, y, label_smoothing=smoothing)
        ours = nn.CrossEntropyLossConfig(smoothing=smoothing or None).init(DEV)(
            t(LOGITS, "float64"), t(TARGETS)
        )
        assert abs(float(ours) - float(ref)) < 1e-10
    w = torch.tensor([0.5, 1.0, 2.0, 3.0], dtype=torch.float64)
    ref = F.cross_entropy(x, y, weight=w)
    ours = nn.CrossEntropyLossConfig(weights=[0.5, 1.0, 2.0, 3.0]).init(DEV, "float64")(
        t(LOGITS, "float64"), t(TARGETS)
    )
    assert abs(float(ours) - float(ref)) < 1e-10


@pytest.mark.parametrize("device", ["reference", "cpu"])
def test_cross_entropy_with_masked_minus_inf_logits(device):
    # masked logits at -inf (the target's own logit finite) must not make the loss NaN
    logits = LOGITS.copy()
    logits[0, 1] = logits[2, 0] = logits[2, 3] = logits[4, 1] = -np.inf
    p = np.exp(_logp(np.where(np.isinf(logits), -1e300, logits)))
    want = -np.log(p[np.arange(6), TARGETS]).mean()
    want_g = (p - np.eye(4)[TARGETS]) / 6
    for cfg in (nn.CrossEntropyLossConfig(), nn.CrossEntropyLossConfig(weights=[1.0, 1.0, 1.0, 1.0])):
        x = ember.tensor(logits, dtype="float64", device=device).require_grad()
        loss = cfg.init(device, "float64")(x, ember.tensor(TARGETS, device=device))
        g = loss.backward().get(x)
        assert abs(float(loss) - want) < 1e-12
        np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-12, atol=1e-15)
    x = ember.tensor(logits, device=device).require_grad()  # float32, the default
    loss = nn.CrossEntropyLossConfig().init(device)(x, ember.tensor(TARGETS, device=device))
    assert abs(float(loss) - want) < 1e-6
    np.testing.assert_allclose(loss.backward().get(x).numpy(), want_g, rtol=1e-5, atol=1e-7)


def test_cross_entropy_errors():
    loss = nn.CrossEntropyLossConfig().init(DEV)
    with pytest.raises(ValueError, match="targets must be int"):
        loss(t(LOGITS), t(TARGETS[:3]))
    with pytest.raises(ValueError, match="smoothing"):
        nn.CrossEntropyLossConfig(smoothing=1.5).init(DEV)
    with pytest.raises(ValueError, match="positive"):
        nn.CrossEntropyLossConfig(weights=[1.0, 0.0]).init(DEV)
    with pytest.raises(ValueError, match="class weights"):
        nn.CrossEntropyLossConfig(weights=[1.0, 2.0]).init(DEV)(t(LOGITS), t(TARGETS))


def test_binary_cross_entropy():
    x = RNG.standard_normal((5, 3))
    y = (RNG.random((5, 3)) > 0.5).astype(np.int64)
    p = 1 / (1 + np.exp(-x))
    expected = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    out = nn.BinaryCrossEntropyLossConfig(logits=True).init(DEV)(t(x, "float64"), t(y))
    assert abs(float(out) - expected.mean()) < 1e-10
    out = nn.BinaryCrossEntropyLossConfig().init(DEV)(t(p, "float64"), t(y), nn.Reduction.Sum)
    assert abs(float(out) - expected.sum()) < 1e-9
    w = np.array([1.0, 2.0, 3.0])
    a = 0.1
    ys = y * (1 - a) + a / 3
    expected = -(ys * np.log(p) + (1 - ys) * np.log(1 - p)) * w
    out = nn.BinaryCrossEntropyLossConfig(weights=list(w), smoothing=a, logits=True).init(DEV, "float64")(
        t(x, "float64"), t(y)
    )
    assert abs(float(out) - expected.mean()) < 1e-10
    # 1-D inputs: weights indexed by the target, smoothing over 2 classes
    x1, y1 = x[:, 0], y[:, 0]
    p1 = p[:, 0]
    ys1 = y1 * 0.8 + 0.1
    expected = -(ys1 * np.log(p1) + (1 - ys1) * np.log(1 - p1)) * np.array([0.5, 2.0])[y1]
    out = nn.BinaryCrossEntropyLossConfig(weights=[0.5, 2.0], smoothing=0.2, logits=True).init(
        DEV, "float64"
    )(t(x1, "float64"), t(y1))
    assert abs(float(out) - expected.mean()) < 1e-10


def test_binary_cross_entropy_matches_torch_and_gradients():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 3)) * 30  # large logits stay finite
    y = (RNG.random((4, 3)) > 0.5).astype(np.float64)
    ref = torch.nn.functional.binary_cross_entropy_with_logits(torch.from_numpy(x), torch.from_numpy(y))
    loss = nn.BinaryCrossEntropyLossConfig(logits=True).init(DEV)
    assert abs(float(loss(t(x, "float64"), t(y, "float64"))) - float(ref)) < 1e-9
    xe = t(x / 30, "float64").require_grad()
    check_grads(lambda: loss(xe, t(y, "float64")), [xe])
    probs = nn.BinaryCrossEntropyLossConfig().init(DEV)
    pe = t(1 / (1 + np.exp(-x / 30)), "float64").require_grad()
    check_grads(lambda: probs(pe, t(y, "float64")), [pe])


def test_mse_and_huber():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)) * 2
    mse = nn.MseLoss()
    assert abs(float(mse(t(a, "float64"), t(b, "float64"))) - ((a - b) ** 2).mean()) < 1e-12
    assert abs(float(mse(t(a, "float64"), t(b, "float64"), nn.Reduction.Sum)) - ((a - b) ** 2).sum()) < 1e-12
    huber = nn.HuberLossConfig(0.7).init()
    r = b - a
    expected = np.where(np.abs(r) <= 0.7, 0.5 * r**2, 0.7 * np.abs(r) - 0.5 * 0.49)
    assert abs(float(huber(t(a, "float64"), t(b, "float64"))) - expected.mean()) < 1e-12
    xe = t(a, "float64").require_grad()
    check_grads(lambda: huber(xe, t(b, "float64")) + mse(xe, t(b, "float64")), [xe])
    with pytest.raises(ValueError, match="non-negative"):
        nn.HuberLossConfig(-1.0).init()
    with pytest.raises(ValueError, match="reduction"):
        mse(t(a), t(a), "BatchMean")


def test_huber_matches_torch():
    torch = pytest.importorskip("torch")
    a, b = RNG.standard_normal(20), RNG.standard_normal(20) * 3
    ref = torch.nn.HuberLoss(delta=1.3)(torch.from_numpy(a), torch.from_numpy(b))
    assert abs(float(nn.HuberLossConfig(1.3).init()(t(a, "float64"), t(b, "float64"))) - float(ref)) < 1e-12
