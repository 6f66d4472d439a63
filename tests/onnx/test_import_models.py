"""ember.onnx.load on models exported by PyTorch's ONNX exporter: an MLP, a CNN, an
nn.TransformerEncoder classifier and a small random transformers BERT give PyTorch's outputs
within 1e-5 on every backend, and a training step on the imported module takes PyTorch's
gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

import ember.onnx  # noqa: E402
from ember.optim import GradientsParams, SgdConfig  # noqa: E402

pytestmark = pytest.mark.torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, stride=2)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.nn.functional.avg_pool2d(torch.relu(self.conv2(x)), 2, ceil_mode=True)
        return torch.log_softmax(self.head(torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)), -1)


class EncoderClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


class Bert(torch.nn.Module):
    """A tiny random BertForSequenceClassification returning its logits."""

    def __init__(self):
        super().__init__()
        transformers = pytest.importorskip("transformers")
        config = transformers.BertConfig(
            vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=16, num_labels=3,
        )  # fmt: skip
        self.bert = transformers.BertForSequenceClassification(config)

    def forward(self, input_ids, attention_mask):
        return self.bert(input_ids=input_ids, attention_mask=attention_mask).logits


class MaskedEncoder(torch.nn.Module):
    """Embedding, pre-norm GELU encoder layers under a causal and a padding mask, BatchNorm1d."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(
            16, 4, 32, batch_first=True, norm_first=True, activation="gelu"
        )
        self.embed = torch.nn.Embedding(30, 16)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = torch.nn.BatchNorm1d(16)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, ids, pad):
        causal = torch.ones(ids.shape[1], ids.shape[1], dtype=torch.bool).triu(1)  # bool, as the padding mask
        y = self.encoder(self.embed(ids), mask=causal, src_key_padding_mask=pad)
        return torch.log_softmax(self.head(self.norm(y[:, 0])), -1)


def _inputs(name: str, rng) -> tuple:
    if name == "MLP":
        return (rng.standard_normal((4, 6)).astype(np.float32),)
    if name.startswith("CNN"):
        return (rng.standard_normal((2, 3, 12, 12)).astype(np.float32),)
    if name == "EncoderClassifier":
        return (rng.standard_normal((2, 5, 16)).astype(np.float32),)
    if name == "MaskedEncoder":
        return rng.integers(0, 30, (2, 6)).astype(np.int64), np.array([[0, 0, 0, 0, 1, 1], [0] * 6], bool)
    mask = np.ones((2, 7), dtype=np.int64)
    mask[1, 5:] = 0  # padding in the second row
    return rng.integers(0, 50, (2, 7)).astype(np.int64), mask


_EXPORTED: dict = {}


def _export(name: str, tmp_path_factory):
    """The PyTorch model (eval mode), its .onnx file and its inputs, built once per model."""
    if name not in _EXPORTED:
        torch.manual_seed(0)
        classes = {
            "MLP": MLP,
            "CNN": CNN,
            "CNN@11": CNN,
            "EncoderClassifier": EncoderClassifier,
            "Bert": Bert,
        }
        model = classes.get(name, MaskedEncoder)().eval()
        with (
            torch.no_grad()
        ):  # no two equal tensors (cloned layers, zero biases), which the exporter would share
            for p in model.parameters():
                p.add_(0.05 * torch.randn_like(p))
            for name_, b in model.named_buffers():
                if "running" in name_:
                    b.copy_(torch.rand_like(b) + 0.5)
        inputs = _inputs(name, np.random.default_rng(0))
        path = tmp_path_factory.mktemp("onnx") / f"{name}.onnx"
        names = {"Bert": ["input_ids", "attention_mask"], "MaskedEncoder": ["ids", "pad"]}.get(name, ["x"])
        # opset 20 (the exporter's default), 17 (LayerNormalization's first, Gelu decomposed) and
        # 11 (ember's oldest: Softmax on 2-D views, axes as attributes)
        opset = {"MaskedEncoder": 17, "CNN@11": 11}.get(name, 20)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
            # dynamo=False: the TorchScript exporter; the default one needs onnxscript
            torch.onnx.export(
                model,
                tuple(torch.from_numpy(a) for a in inputs),
                str(path),
                dynamo=False,
                input_names=names,
                opset_version=opset,
            )
        _EXPORTED[name] = (model, path, inputs)
    return _EXPORTED[name]


MODELS = ["MLP", "CNN", "CNN@11", "EncoderClassifier", "Bert", "MaskedEncoder"]


@pytest.mark.parametrize("name", MODELS)
def test_outputs_match_pytorch(name, device, tmp_path_factory):
    model, path, inputs = _export(name, tmp_path_factory)
    with torch.no_grad():
        expected = model(*(torch.from_numpy(a) for a in inputs)).numpy()
    imported = ember.onnx.load(path, device=device)
    assert imported.devices() == [ember.tensor(0.0, device=device).device]
    got = imported(*(ember.tensor(a, device=device) for a in inputs))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=0, atol=1e-5)
    # the inference copy gives the same values and records no graph
    frozen = imported.valid()(*(ember.tensor(a, device=device) for a in inputs))
    np.testing.assert_allclose(frozen.numpy(), expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_training_step_takes_pytorch_gradients(name, tmp_path_factory):
    model, path, inputs = _export(name, tmp_path_factory)
    imported = ember.onnx.load(path, device="cpu")
    out_shape = imported(*(ember.tensor(a) for a in inputs)).shape
    weights = np.random.default_rng(1).standard_normal(out_shape).astype(np.float32)

    model.zero_grad()
    (model(*(torch.from_numpy(a) for a in inputs)) * torch.from_numpy(weights)).sum().backward()
    torch_grads = {n: p.grad.numpy() for n, p in model.named_parameters() if p.grad is not None}

    before = {n: p.numpy().copy() for n, p in imported.named_parameters()}
    loss = (imported(*(ember.tensor(a) for a in inputs)) * ember.tensor(weights)).sum()
    grads = GradientsParams.from_grads(loss.backward(), imported)
    # every parameter the exporter kept under its PyTorch name gets PyTorch's gradient
    compared = 0
    for n, p in imported.named_parameters():
        key = n if n in torch_grads else f"bert.{n}"  # Bert wraps the transformers model
        if key in torch_grads and torch_grads[key].shape == p.shape:
            got, want = grads.get(p.id).numpy(), torch_grads[key]
            if n.endswith("word_embeddings.weight"):  # PyTorch's padding_idx row gets no gradient;
                got, want = got[1:], want[1:]  # ONNX's Gather has no such notion
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=n)
            compared += 1
    assert compared >= 4
    # every float initializer is a trainable weight, but BatchNorm's statistics
    assert len(grads) == sum("running_" not in n for n, _ in imported.named_parameters())

    lr = 0.05
    step = {
        n: 0 if grads.get(p.id) is None else -lr * grads.get(p.id).numpy()
        for n, p in imported.named_parameters()
    }
    SgdConfig().init().step(lr, imported, grads)
    for n, p in imported.named_parameters():  # plain SGD: each parameter moves by -lr * its gradient
        np.testing.assert_allclose(p.numpy(), before[n] + step[n], rtol=1e-6, atol=1e-7, err_msg=n)
    moved = sum(np.abs(s).sum() > 0 for s in step.values())
    assert moved >= len(grads) - 2  # (a key projection's bias has a zero gradient)
    after = (imported(*(ember.tensor(a) for a in inputs)) * ember.tensor(weights)).sum()
    assert after.item() < loss.item()
