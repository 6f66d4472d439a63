"""The whole model-level performance table, ember `cpu` and ember on PyTorch's kernels (the
`torch` backend) against PyTorch eager, each run in its own process with NumPy imported first
(as users' scripts do):

    python bench/model_table.py                 # both models, train + inference, first step, RSS
    python bench/model_table.py --steps 5 --models agnews --no-fresh
    python bench/model_table.py --repeats 3     # each figure the median of 3 processes

Rows, for the AG News model (batch 32, sequence 256, d_model 128, ff 512, 4 heads, 4 pre-norm
layers, vocabulary 28,996) and the DbPedia model (d_model 256, ff 1024, 8 heads):

* train step: forward, cross-entropy, backward, Adam update (median over ``--steps`` after two
  warm-up steps);
* inference batch: ember's ``model.valid()`` under ``ember.no_grad()`` against PyTorch's
  ``eval()`` under ``torch.inference_mode()`` (its fused encoder fast path), softmax output;
* the first training step of a new process with a warm kernel cache, alone and with what comes
  before it in the process (importing the framework, building the model);
* first training step of a new process with an empty kernel cache (a temporary
  ``EMBER_CACHE_DIR``: ember compiles its Numba kernels in a background process and runs the
  composed kernels meanwhile), and the time until the compiled kernels take over;
* peak resident memory of the training process;
* the AG News train step and inference batch again with PyTorch, then pandas, imported before
  ember (after NumPy): ember's thread settings must hold whatever the user imported first.

Batches are random token ids with lengths drawn between a quarter of the sequence and all of
it, padded with 0 and masked. Prints a Markdown table (ratios are ember `cpu` / PyTorch, lower
is better for ember; the ember-on-torch column is the same model on ``Device("torch")``, its
train step, inference batch, first step and memory) and writes the raw figures to ``bench/results/model_table.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np  # first, as in users' scripts (the workers import the frameworks after it)

ROOT = Path(__file__).resolve().parent
MODELS = {
    "agnews": dict(d_model=128, d_ff=512, heads=4, layers=4, classes=4),
    "dbpedia": dict(d_model=256, d_ff=1024, heads=8, layers=4, classes=14),
}
BATCH, SEQ, VOCAB = 32, 256, 28_996


def _batch():
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, VOCAB, (BATCH, SEQ))
    lengths = rng.integers(SEQ // 4, SEQ + 1, BATCH)
    mask = np.arange(SEQ)[None, :] >= lengths[:, None]
    tokens[mask] = 0
    labels = rng.integers(0, 4, BATCH)
    return tokens.astype(np.int64), mask, labels.astype(np.int64)


def _ember_runner(shape: dict, mode: str, device: str = "cpu"):
    import ember
    from ember import nn
    from ember.optim import AdamConfig, GradientsParams

    sys.path.insert(0, str(ROOT.parent / "examples"))
    from text_classification.model import TextClassificationModelConfig

    ember.seed(0)
    model = TextClassificationModelConfig(
        nn.TransformerEncoderConfig(
            shape["d_model"],
            shape["d_ff"],
            shape["heads"],
            shape["layers"],
            norm_first=True,
            quiet_softmax=True,
        ),
        shape["classes"],
        VOCAB,
        SEQ,
    ).init(device=device)
    tokens, mask, labels = (ember.tensor(a, device=device) for a in _batch())
    if mode == "infer":
        model = model.valid()

        def step():
            with ember.no_grad():
                return ember.softmax(model.logits(tokens, mask), dim=1).numpy()

        return step
    optim = AdamConfig().init()

    def step():
        nonlocal model
        loss = model.loss(model.logits(tokens, mask), labels)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(1e-4, model, grads)
        return loss.numpy()

    return step


def _torch_runner(shape: dict, mode: str):
    import torch

    torch.manual_seed(0)
    d = shape["d_model"]

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = torch.nn.Embedding(VOCAB, d)
            self.pos = torch.nn.Embedding(SEQ, d)
            layer = torch.nn.TransformerEncoderLayer(
                d, shape["heads"], shape["d_ff"], 0.1, activation="gelu", batch_first=True, norm_first=True
            )
            self.enc = torch.nn.TransformerEncoder(layer, shape["layers"], enable_nested_tensor=False)
            self.out = torch.nn.Linear(d, shape["classes"])

        def forward(self, tokens, mask):
            pos = torch.arange(tokens.shape[1])[None].expand_as(tokens)
            x = (self.pos(pos) + self.tok(tokens)) / 2
            return self.out(self.enc(x, src_key_padding_mask=mask)[:, 0])

    model = Model()
    tokens, mask, labels = (torch.as_tensor(a) for a in _batch())
    if mode == "infer":
        model.eval()

        def step():
            with torch.inference_mode():
                return torch.softmax(model(tokens, mask), dim=1).numpy()

        return step
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, eps=1e-5)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(tokens, mask), labels)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def worker(args) -> None:
    """Run one framework / model / mode in this process and print its figures as JSON."""
    import importlib
    import resource

    start = time.perf_counter()
    if args.import_first:
        importlib.import_module(args.import_first)
    if args.framework == "ember-torch":
        step = _ember_runner(MODELS[args.model], args.mode, device="torch")
    else:
        runner = _ember_runner if args.framework == "ember" else _torch_runner
        step = runner(MODELS[args.model], args.mode)
    t0 = time.perf_counter()
    setup = t0 - start
    step()
    first = time.perf_counter() - t0
    step()  # a second warm-up: allocator, caches
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    compiled_after = None
    if args.until_compiled:  # empty cache: step on until the compiled kernels run
        from ember.kernels.cpu.background_compile import BackgroundCompile

        tiers = BackgroundCompile()
        deadline = time.perf_counter() + 300
        while not tiers.ready("float32") and time.perf_counter() < deadline:
            step()
        compiled_after = time.perf_counter() - start
    out = {
        "compiled_after_s": compiled_after,
        "first_step_s": first,
        "median_s": statistics.median(times),
        "times_s": times,
        "setup_s": setup,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }
    print("RESULT " + json.dumps(out))


def _spawn(
    framework: str,
    model: str,
    mode: str,
    steps: int,
    env: dict | None = None,
    until_compiled: bool = False,
    import_first: str | None = None,
) -> dict:
    cmd = [sys.executable, __file__, "--worker", framework, model, mode, "--steps", str(steps)]
    cmd += ["--until-compiled"] if until_compiled else []
    cmd += ["--import-first", import_first] if import_first else []
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env or os.environ.copy())
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


def _merge(runs: list[dict]) -> dict:
    """One figure per key over repeated processes: the median, the peak for memory."""
    merged = {"runs": runs}
    for key in ("median_s", "first_step_s", "setup_s"):
        merged[key] = statistics.median(r[key] for r in runs)
    merged["setup_and_first_step_s"] = statistics.median(r["setup_s"] + r["first_step_s"] for r in runs)
    merged["peak_rss_gb"] = max(r["peak_rss_gb"] for r in runs)
    return merged


def _row(
    label: str, ember_value: float, torch_value: float | None, unit: str, on_torch: float | None = None
) -> str:
    fmt = (lambda v: f"{v:.3f} {unit}") if unit == "s" else (lambda v: f"{v:.2f} {unit}")
    middle = "—" if on_torch is None else fmt(on_torch)
    if torch_value is None:
        return f"| {label} | {fmt(ember_value)} | {middle} | — | — |"
    return (
        f"| {label} | {fmt(ember_value)} | {middle} | {fmt(torch_value)} | {ember_value / torch_value:.2f} |"
    )


#: Row labels of the two timed modes.
MODE_LABELS = {"train": "train step", "infer": "inference batch"}
#: Modules a user's script may import before ember (after NumPy), and their row labels.
IMPORTED_FIRST = {"torch": "PyTorch", "pandas": "pandas"}


def _imported_first(args, model: str) -> list[str]:
    """The modules of IMPORTED_FIRST to measure before ember for ``model`` (the first model
    only, and only those installed)."""
    import importlib.util

    if args.no_import_order or model != args.models.split(",")[0]:
        return []
    return [m for m in IMPORTED_FIRST if importlib.util.find_spec(m) is not None]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=3, metavar=("FRAMEWORK", "MODEL", "MODE"), help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=10, help="timed steps per figure (default 10)")
    ap.add_argument("--models", default="agnews,dbpedia", help="comma-separated: agnews, dbpedia")
    ap.add_argument(
        "--repeats", type=int, default=1, help="processes per figure and framework, alternating; medians"
    )
    ap.add_argument("--no-fresh", action="store_true", help="skip the empty-kernel-cache first step")
    ap.add_argument(
        "--no-torch", action="store_true", help="ember `cpu` only (no PyTorch, no ember on torch)"
    )
    ap.add_argument("--no-import-order", action="store_true", help="skip the import-order rows")
    ap.add_argument("--until-compiled", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--import-first", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.framework, args.model, args.mode = args.worker
        worker(args)
        return

    frameworks = ["ember"] if args.no_torch else ["ember", "ember-torch", "torch"]
    raw: dict = {}
    lines = ["| figure | ember `cpu` | ember `torch` | PyTorch | ratio |", "|---|---|---|---|---|"]
    import_rows = []
    for model in args.models.split(","):
        name = {"agnews": "AG News", "dbpedia": "DbPedia"}[model]
        # (framework, module imported before it): ember with NumPy first, PyTorch, then ember
        # again with each of IMPORTED_FIRST imported before it
        variants = [(fw, None) for fw in frameworks] + [("ember", m) for m in _imported_first(args, model)]
        for mode in MODE_LABELS:
            runs: dict[tuple, list] = {v: [] for v in variants}
            for _ in range(args.repeats):  # alternating, so a slow spell hits every variant
                for fw, first in variants:
                    runs[fw, first].append(_spawn(fw, model, mode, args.steps, import_first=first))
                    after = f", {first} first" if first else ""
                    print(
                        f"  {model} {mode} {fw}{after}: {runs[fw, first][-1]['median_s']:.3f} s",
                        file=sys.stderr,
                    )
            for (fw, first), figures in runs.items():
                raw[f"{model}/{mode}/{fw}" + (f"/{first}-first" if first else "")] = merged = _merge(figures)
                if first:
                    theirs = raw.get(f"{model}/{mode}/torch", {}).get("median_s")
                    label = f"{name} {MODE_LABELS[mode]}, {IMPORTED_FIRST[first]} imported before ember"
                    import_rows.append(_row(label, merged["median_s"], theirs, "s"))
        for label, mode, key, unit in (
            (MODE_LABELS["train"], "train", "median_s", "s"),
            (MODE_LABELS["infer"], "infer", "median_s", "s"),
            ("first step, warm cache", "train", "first_step_s", "s"),
            ("imports + set-up + first step, warm cache", "train", "setup_and_first_step_s", "s"),
            ("peak RSS (train)", "train", "peak_rss_gb", "GB"),
        ):
            theirs = raw[f"{model}/{mode}/torch"][key] if "torch" in frameworks else None
            on_torch = raw[f"{model}/{mode}/ember-torch"][key] if "ember-torch" in frameworks else None
            lines.append(_row(f"{name} {label}", raw[f"{model}/{mode}/ember"][key], theirs, unit, on_torch))
    lines += import_rows
    if not args.no_fresh:
        model = args.models.split(",")[0]
        with tempfile.TemporaryDirectory(prefix="ember-fresh-cache-") as cache:
            env = os.environ.copy()
            env["EMBER_CACHE_DIR"] = cache
            env.pop("NUMBA_CACHE_DIR", None)
            env["EMBER_BACKGROUND_COMPILE"] = "1"
            raw[f"{model}/fresh/ember"] = fresh = _spawn("ember", model, "train", 1, env, until_compiled=True)
        torch_first = raw.get(f"{model}/train/torch", {}).get("first_step_s")
        # Everything a fresh install waits for: imports, model set-up and the first step.
        torch_total = raw[f"{model}/train/torch"]["setup_s"] + torch_first if torch_first else None
        lines.append(
            _row(
                "setup + first step, empty kernel cache",
                fresh["setup_s"] + fresh["first_step_s"],
                torch_total,
                "s",
            )
        )
        lines.append(
            _row("empty kernel cache: compiled kernels run after", fresh["compiled_after_s"], None, "s")
        )
    table = "\n".join(lines)
    print(table)
    out = ROOT / "results"
    out.mkdir(exist_ok=True)
    (out / "model_table.json").write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
