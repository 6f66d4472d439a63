"""One training step of the AG News text classifier (forward, loss, backward, Adam update) at
batch 32, sequence 256, d_model 128, 4 heads, feed-forward 512, 4 pre-norm layers with quiet
softmax, vocabulary 28,996, 4 classes — ember against PyTorch on the same device kind.

    python bench/run.py bench/bench_train_step.py          # cpu (and cuda when available)
"""

from __future__ import annotations

import numpy as np
import pytest
from sizes import BATCH, CLASSES, D_FF, D_MODEL, HEADS, SEQ
from torch_classifier import torch_classifier

import ember
from ember import nn

try:
    import torch
except ImportError:
    torch = None

VOCAB = 28_996
LAYERS = 4


def _devices():
    out = ["cpu"]
    try:
        from ember.kernels.cuda.runtime import is_available

        if is_available():
            out.append("cuda")
    except ImportError:
        pass
    return out


def _batch(rng):
    tokens = rng.integers(1, VOCAB, (BATCH, SEQ))
    lengths = rng.integers(SEQ // 4, SEQ + 1, BATCH)
    mask = np.arange(SEQ)[None, :] >= lengths[:, None]
    tokens[mask] = 0
    return tokens.astype(np.int64), mask, rng.integers(0, CLASSES, BATCH).astype(np.int64)


class TextClassifier(nn.Module):
    """Burn's text-classification model: (token + position embeddings) / 2, encoder, head."""

    def __init__(self, device):
        self.embedding_token = nn.EmbeddingConfig(VOCAB, D_MODEL).init(device)
        self.embedding_pos = nn.EmbeddingConfig(SEQ, D_MODEL).init(device)
        self.transformer = nn.TransformerEncoderConfig(
            D_MODEL, D_FF, HEADS, LAYERS, norm_first=True, quiet_softmax=True
        ).init(device)
        self.output = nn.LinearConfig(D_MODEL, CLASSES).init(device)

    def forward(self, tokens, mask):
        b, s = tokens.shape
        pos = ember.arange(s, device=tokens.device).unsqueeze(0).expand(b, s)
        x = (self.embedding_pos(pos) + self.embedding_token(tokens)) / 2
        x = self.transformer(nn.TransformerEncoderInput(x).mask_pad(mask))
        return self.output(x)[:, 0]


def _ember_step(device):
    ember.seed(0)
    model = TextClassifier(device)
    tokens, mask, labels = _batch(np.random.default_rng(0))
    tokens, mask, labels = (ember.tensor(a, device=device) for a in (tokens, mask, labels))
    loss_fn = nn.CrossEntropyLossConfig().init()
    optim = ember.optim.AdamConfig().init() if hasattr(ember.optim, "AdamConfig") else None

    def step():
        nonlocal model
        loss = loss_fn(model(tokens, mask), labels)
        grads = loss.backward()
        if optim is not None:
            model = optim.step(1e-4, model, ember.optim.GradientsParams.from_grads(grads, model))
        if device == "cuda":
            ember.cuda.synchronize()
        return loss

    return step


def _torch_step(device):
    torch.manual_seed(0)
    dev = torch.device(device)
    model = torch_classifier(D_MODEL, D_FF, HEADS, LAYERS, CLASSES, VOCAB, SEQ).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, eps=1e-5)
    tokens, mask, labels = (torch.as_tensor(a, device=dev) for a in _batch(np.random.default_rng(0)))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(tokens, mask), labels)
        loss.backward()
        opt.step()
        if device == "cuda":
            torch.cuda.synchronize()
        return loss

    return step


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("impl", ["ember", "torch"])
def bench_train_step(benchmark, impl, device):
    if impl == "torch" and (torch is None or (device == "cuda" and not torch.cuda.is_available())):
        pytest.skip("PyTorch (with CUDA for the cuda column) is not installed")
    step = _ember_step(device) if impl == "ember" else _torch_step(device)
    step()  # warm-up: JIT compilation, allocator
    benchmark.group = f"AG News train step ({device})"
    benchmark.extra_info["impl"] = f"{impl}-{device}" if impl == "ember" else "torch"
    benchmark.pedantic(step, rounds=5 if device == "cpu" else 20, iterations=1, warmup_rounds=1)
