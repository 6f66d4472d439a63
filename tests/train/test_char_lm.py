"""A tiny character-level language model built on nn.TransformerDecoder (causal self-attention;
the cross-attention sees a one-position zero memory), trained through SupervisedTraining on a
few hundred characters written here: its loss must fall well below the initial loss, and
greedy generation with the decoder's incremental cache must give exactly the tokens that
re-running the whole prefix gives."""

from __future__ import annotations

import io

import numpy as np
from helpers.train_steps import ClassificationSteps

import ember
from ember import nn
from ember.data import DataLoaderBuilder, InMemDataset
from ember.optim import AdamConfig
from ember.train import ClassificationOutput, Learner, SupervisedTraining
from ember.train.logger import read_aggregate
from ember.train.metric import LossMetric
from ember.train.renderer import CliMetricsRenderer

TEXT = (
    "the cat sat on the mat. the dog sat on the log. "
    "a cat and a dog met on the mat and sat in the sun. "
    "the sun was warm and the cat was glad. the dog ran to the log and the cat ran to the mat. "
    "then the cat and the dog sat on the mat in the warm sun and they were glad. "
)
VOCAB = sorted(set(TEXT))
INDEX = {c: i for i, c in enumerate(VOCAB)}
IDS = np.array([INDEX[c] for c in TEXT], dtype=np.int64)
WINDOW = 20
D_MODEL = 32
DEVICE = "cpu"


class CharLm(ClassificationSteps, nn.Module):
    """Token and learned position embeddings, a 2-layer decoder, a linear head over the vocabulary."""

    def __init__(self, device=DEVICE):
        self.tokens = nn.EmbeddingConfig(len(VOCAB), D_MODEL).init(device)
        self.positions = nn.EmbeddingConfig(WINDOW, D_MODEL).init(device)
        self.decoder = nn.TransformerDecoderConfig(D_MODEL, 64, 2, 2, dropout=0.0, norm_first=True).init(
            device
        )
        self.head = nn.LinearConfig(D_MODEL, len(VOCAB)).init(device)
        self.loss = nn.CrossEntropyLossConfig().init()

    def embed(self, ids, start: int = 0):
        batch, length = ids.shape
        where = np.broadcast_to(np.arange(start, start + length), (batch, length))
        positions = ember.from_numpy(np.ascontiguousarray(where), device=ids.device)
        return self.tokens(ids) + self.positions(positions)

    def memory(self, batch: int, device):
        return ember.zeros(batch, 1, D_MODEL, device=device)

    def forward(self, ids):
        batch, length = ids.shape
        x = self.embed(ids)
        causal = nn.generate_autoregressive_mask(batch, length, ids.device)
        h = self.decoder(x, self.memory(batch, ids.device), target_mask_attn=causal)
        return self.head(h)

    def forward_classification(self, batch):
        x, y = batch
        logits = self(x).reshape(-1, len(VOCAB))
        targets = y.reshape(-1)
        return ClassificationOutput(self.loss(logits, targets), logits, targets)


class WindowBatcher:
    def batch(self, items, device):
        x = np.stack([item[0] for item in items])
        y = np.stack([item[1] for item in items])
        return ember.from_numpy(x, device=device), ember.from_numpy(y, device=device)


def windows(stride: int):
    return [(IDS[i : i + WINDOW], IDS[i + 1 : i + WINDOW + 1]) for i in range(0, len(IDS) - WINDOW, stride)]


def greedy_by_rerunning(model, prompt: list[int], total: int) -> list[int]:
    tokens = list(prompt)
    with ember.no_grad():
        while len(tokens) < total:
            ids = ember.from_numpy(np.array([tokens], dtype=np.int64), device=DEVICE)
            tokens.append(int(model(ids)[0, -1].argmax().item()))
    return tokens


def greedy_with_cache(model, prompt: list[int], total: int) -> list[int]:
    tokens = list(prompt)
    cache = model.decoder.new_autoregressive_cache()
    memory = model.memory(1, DEVICE)
    with ember.no_grad():
        ids = ember.from_numpy(np.array([prompt], dtype=np.int64), device=DEVICE)
        causal = nn.generate_autoregressive_mask(1, len(prompt), DEVICE)
        h = model.decoder.forward_step(model.embed(ids), cache, memory, target_mask_attn=causal)
        while True:
            tokens.append(int(model.head(h)[0, -1].argmax().item()))
            if len(tokens) == total:
                return tokens
            ids = ember.from_numpy(np.array([[tokens[-1]]], dtype=np.int64), device=DEVICE)
            h = model.decoder.forward_step(model.embed(ids, start=len(tokens) - 1), cache, memory)


def test_char_lm_learns_the_text_and_cached_generation_equals_rerunning(tmp_path):
    ember.seed(0)
    train = DataLoaderBuilder(WindowBatcher()).batch_size(16).shuffle(1).build(InMemDataset(windows(1)))
    valid = DataLoaderBuilder(WindowBatcher()).batch_size(64).build(InMemDataset(windows(7)))
    model = CharLm()
    with ember.no_grad():
        x, y = WindowBatcher().batch(windows(7), DEVICE)
        initial = float(model.forward_classification((x, y)).loss.item())
    assert abs(initial - np.log(len(VOCAB))) < 1.5  # an untrained model is close to uniform
    epochs = 14  # 15 batches an epoch: 210 optimizer steps
    result = (
        SupervisedTraining(tmp_path, train, valid)
        .metrics(LossMetric())
        .num_epochs(epochs)
        .renderer(CliMetricsRenderer(stream=io.StringIO()))
        .launch(Learner(model, AdamConfig().init(), 3e-3))
    )
    assert result.epochs_trained == epochs
    final = read_aggregate(tmp_path / "valid" / f"epoch-{epochs}" / "Loss.log")
    assert final < 0.4 * initial, (initial, final)

    trained = result.model
    prompt = [INDEX[c] for c in "the "]
    rerun = greedy_by_rerunning(trained, prompt, WINDOW)
    cached = greedy_with_cache(trained, prompt, WINDOW)
    assert cached == rerun, ("".join(VOCAB[i] for i in cached), "".join(VOCAB[i] for i in rerun))
    generated = "".join(VOCAB[i] for i in rerun)
    words = set(TEXT.replace(".", " ").split())
    assert sum(w in words for w in generated.split()[:-1]) >= 2, generated  # it writes the text's words
