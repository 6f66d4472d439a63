"""The whole model-level performance table: ember `cpu`, ember on PyTorch's kernels (the
`torch` backend), PyTorch eager and, for inference, ONNX Runtime, each run in its own process
with NumPy imported first (as users' scripts do), beside the machine's own limit:

    python bench/model_table.py                 # both models, both row kinds, everything
    python bench/model_table.py --steps 5 --models agnews --rows full --no-fresh
    python bench/model_table.py --repeats 3     # each figure the median of 3 processes

Rows, for the AG News model (batch 32, sequence 256, d_model 128, ff 512, 4 heads, 4 pre-norm
layers, vocabulary 28,996; ``ember.autotune.MODELS`` names the same two models) and the
DbPedia model (d_model 256, ff 1024, 8 heads), each with rows of random length (a quarter of the
sequence to all of it, padded with 0 and masked) and with every row full (no padding to skip):

* train step: forward, cross-entropy, backward, Adam update (median over ``--steps`` after two
  warm-up steps);
* inference batch: ember's ``model.valid()`` under ``ember.no_grad()``, PyTorch's ``eval()``
  under ``torch.inference_mode()`` (its fused encoder fast path), and ONNX Runtime running the
  PyTorch model exported with opset 17 (all graph optimisations, intra-op threads = cores, its
  output checked against PyTorch's), softmax output;
* the first training step of a new process with a warm kernel cache, alone and with what comes
  before it in the process (importing the framework, building the model); peak resident memory;
* the machine's limit: NumPy's SGEMM speed measured in the same run (``machine_limit.py``), each
  step's useful work (matrix products over the real tokens), ember's achieved GFLOP/s and its
  share of the SGEMM speed;
* from an empty kernel and autotune cache (a temporary ``EMBER_CACHE_DIR``, as after a plain
  ``pip install .``): the first step, the first ``--cold-steps`` steps against as many warm
  ones, and the time until the background-compiled kernels take over;
* the AG News train step and inference batch again with PyTorch, then pandas, imported before
  ember (after NumPy): ember's thread settings must hold whatever the user imported first.

Before the ember processes run, ``python -m ember.autotune --model <model>`` fills the autotune
cache as ``make install`` does (``--no-tune``: leave it as it is); the timed processes report how
many keys they measured themselves (none, when every decision came from the cache). Prints
Markdown tables (ratios are ember `cpu` over the peer, lower is better for ember) and writes the
raw figures to ``bench/results/model_table.json``.
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
from machine_limit import sgemm_gflops, transformer_flops
from markdown_table import markdown_head, markdown_row
from torch_classifier import torch_classifier

ROOT = Path(__file__).resolve().parent
MODELS = {
    "agnews": dict(d_model=128, d_ff=512, heads=4, layers=4, classes=4),
    "dbpedia": dict(d_model=256, d_ff=1024, heads=8, layers=4, classes=14),
}
BATCH, SEQ, VOCAB = 32, 256, 28_996


ROWS = ("random", "full")


def _batch(rows: str):
    """Token ids, padding mask and labels: rows of random length, or every row full."""
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, VOCAB, (BATCH, SEQ))
    lengths = rng.integers(SEQ // 4, SEQ + 1, BATCH) if rows == "random" else np.full(BATCH, SEQ)
    mask = np.arange(SEQ)[None, :] >= lengths[:, None]
    tokens[mask] = 0
    labels = rng.integers(0, 4, BATCH)
    return tokens.astype(np.int64), mask, labels.astype(np.int64)


def _lengths(rows: str) -> np.ndarray:
    return SEQ - _batch(rows)[1].sum(axis=1)


def _ember_runner(shape: dict, mode: str, rows: str, device: str = "cpu"):
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
    tokens, mask, labels = (ember.tensor(a, device=device) for a in _batch(rows))
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


def _torch_model(shape: dict):
    import torch

    torch.manual_seed(0)
    return torch_classifier(
        shape["d_model"], shape["d_ff"], shape["heads"], shape["layers"], shape["classes"], VOCAB, SEQ
    )


def _torch_runner(shape: dict, mode: str, rows: str):
    import torch

    model = _torch_model(shape)
    tokens, mask, labels = (torch.as_tensor(a) for a in _batch(rows))
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


def _onnx_runner(shape: dict, mode: str, rows: str):
    """ONNX Runtime on the PyTorch model exported with opset 17, its output checked against
    PyTorch's (inference only)."""
    import io
    import warnings

    import onnxruntime
    import torch

    if mode != "infer":
        raise ValueError("ONNX Runtime runs inference only")
    model = _torch_model(shape).eval()

    class Probabilities(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, tokens, mask):
            return torch.softmax(self.model(tokens, mask), dim=1)

    probabilities = Probabilities().eval()  # (export restores the wrapper's mode, recursively)
    tokens, mask, _ = (torch.as_tensor(a) for a in _batch(rows))
    graph = io.BytesIO()
    with warnings.catch_warnings():  # the TorchScript exporter's deprecation and trace notes
        warnings.simplefilter("ignore")
        torch.onnx.export(
            probabilities,
            (tokens, mask),
            graph,
            opset_version=17,
            dynamo=False,
            input_names=["tokens", "mask"],
        )
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = os.cpu_count() or 1
    session = onnxruntime.InferenceSession(graph.getvalue(), options, providers=["CPUExecutionProvider"])
    feeds = {"tokens": tokens.numpy(), "mask": mask.numpy()}
    with torch.inference_mode():
        want = probabilities(tokens, mask).numpy()
    got = session.run(None, feeds)[0]
    if not np.allclose(got, want, atol=1e-5):
        raise RuntimeError(f"ONNX Runtime's output differs from PyTorch's by {np.abs(got - want).max():.2e}")

    def step():
        return session.run(None, feeds)[0]

    return step


RUNNERS = {
    "ember": _ember_runner,
    "ember-torch": lambda shape, mode, rows: _ember_runner(shape, mode, rows, device="torch"),
    "torch": _torch_runner,
    "onnxruntime": _onnx_runner,
}


def worker(args) -> None:
    """Run one framework / model / mode / row kind in this process and print its figures as JSON."""
    import importlib
    import resource

    start = time.perf_counter()
    if args.import_first:
        importlib.import_module(args.import_first)
    step = RUNNERS[args.framework](MODELS[args.model], args.mode, args.rows)
    t0 = time.perf_counter()
    setup = t0 - start
    step()
    first = time.perf_counter() - t0
    out: dict = {"first_step_s": first, "setup_s": setup}
    if args.cold:  # empty caches: the first `cold` steps as a user meets them, then until compiled
        for _ in range(args.cold - 1):
            step()
        out["cold_total_s"] = time.perf_counter() - start
        from ember.kernels.cpu.background_compile import BackgroundCompile

        tiers = BackgroundCompile()
        deadline = time.perf_counter() + 300
        while not tiers.ready("float32") and time.perf_counter() < deadline:
            step()
        out["compiled_after_s"] = time.perf_counter() - start
    else:
        step()  # a second warm-up: allocator, caches
        times = []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        out.update(median_s=statistics.median(times), times_s=times)
    if args.framework.startswith("ember"):
        from ember.kernels.autotune import measured_count

        out["autotune_measured"] = measured_count()
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print("RESULT " + json.dumps(out))


def _spawn(
    framework: str,
    model: str,
    mode: str,
    rows: str,
    steps: int,
    env: dict | None = None,
    cold: int = 0,
    import_first: str | None = None,
) -> dict:
    cmd = [sys.executable, __file__, "--worker", framework, model, mode, rows, "--steps", str(steps)]
    cmd += ["--cold", str(cold)] if cold else []
    cmd += ["--import-first", import_first] if import_first else []
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env or os.environ.copy())
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")


def _sgemm() -> dict:
    """The SGEMM speed, in a process of its own like every other figure."""
    proc = subprocess.run(
        [sys.executable, __file__, "--sgemm"],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ.copy(),
    )
    return json.loads(proc.stdout.splitlines()[-1])


def _merge(runs: list[dict]) -> dict:
    """One figure per key over repeated processes: the median, the peak for memory, the sum of
    keys measured by autotune."""
    merged: dict = {"runs": runs}
    for key in ("median_s", "first_step_s", "setup_s"):
        if key in runs[0]:
            merged[key] = statistics.median(r[key] for r in runs)
    merged["setup_and_first_step_s"] = statistics.median(r["setup_s"] + r["first_step_s"] for r in runs)
    merged["peak_rss_gb"] = max(r["peak_rss_gb"] for r in runs)
    if "autotune_measured" in runs[0]:
        merged["autotune_measured"] = sum(r["autotune_measured"] for r in runs)
    return merged


#: The columns of the main table after the figure's name: (framework, header).
COLUMNS = (
    ("ember", "ember `cpu`"),
    ("ember-torch", "ember `torch`"),
    ("torch", "PyTorch"),
    ("onnxruntime", "ONNX Runtime"),
)


def _row(label: str, values: dict, unit: str) -> str:
    """A table row: each column's figure (— where not measured), then ember `cpu` over PyTorch
    and over ONNX Runtime."""

    def shown(v):
        return "—" if v is None else (f"{v:.3f} {unit}" if unit == "s" else f"{v:.2f} {unit}")

    ours = values.get("ember")
    ratios = [
        "—" if ours is None or values.get(peer) is None else f"{ours / values[peer]:.2f}"
        for peer in ("torch", "onnxruntime")
    ]
    return markdown_row([label, *(shown(values.get(fw)) for fw, _ in COLUMNS), *ratios])


#: Row labels of the two timed modes.
MODE_LABELS = {"train": "train step", "infer": "inference batch"}
#: Modules a user's script may import before ember (after NumPy), and their row labels.
IMPORTED_FIRST = {"torch": "PyTorch", "pandas": "pandas"}
#: Who runs which mode.
FRAMEWORKS = {
    "train": ("ember", "ember-torch", "torch"),
    "infer": ("ember", "ember-torch", "torch", "onnxruntime"),
}


def _imported_first(args, model: str) -> list[str]:
    """The modules of IMPORTED_FIRST to measure before ember for ``model`` (the first model
    only, and only those installed)."""
    import importlib.util

    if args.no_import_order or model != args.models.split(",")[0]:
        return []
    return [m for m in IMPORTED_FIRST if importlib.util.find_spec(m) is not None]


def _available(frameworks, args) -> list[str]:
    import importlib.util

    frameworks = [fw for fw in frameworks if fw not in args.skip.split(",")]
    if args.no_torch:
        return [fw for fw in frameworks if fw == "ember"]
    needs = {"ember-torch": "torch", "torch": "torch", "onnxruntime": "onnxruntime"}
    return [fw for fw in frameworks if fw not in needs or importlib.util.find_spec(needs[fw]) is not None]


def _tune(model: str) -> None:
    """Fill the autotune cache for ``model``, as `make install` does."""
    subprocess.run(
        [sys.executable, "-m", "ember.autotune", "--model", model], check=True, capture_output=True
    )


def _limit_lines(raw: dict, models: list[str], rows_kinds: list[str], sgemm: float) -> list[str]:
    lines = [
        f"SGEMM (NumPy float32, every core): {sgemm:.0f} GFLOP/s.",
        "",
        *markdown_head(["step", "work", "ember `cpu`", "GFLOP/s", "share of SGEMM", "PyTorch GFLOP/s"]),
    ]
    for model in models:
        for mode in MODE_LABELS:
            for rows in rows_kinds:
                ours = raw.get(f"{model}/{mode}/{rows}/ember", {}).get("median_s")
                if ours is None:
                    continue
                flops = transformer_flops(MODELS[model], _lengths(rows), train=mode == "train")
                theirs = raw.get(f"{model}/{mode}/{rows}/torch", {}).get("median_s")
                achieved = flops / ours / 1e9
                lines.append(
                    markdown_row(
                        [
                            f"{NAMES[model]} {MODE_LABELS[mode]}, {rows} rows",
                            f"{flops / 1e9:.1f} GFLOP",
                            f"{ours:.3f} s",
                            f"{achieved:.0f}",
                            f"{achieved / sgemm:.0%}",
                            "—" if theirs is None else f"{flops / theirs / 1e9:.0f}",
                        ]
                    )
                )
    return lines


NAMES = {"agnews": "AG News", "dbpedia": "DbPedia"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--worker", nargs=4, metavar=("FRAMEWORK", "MODEL", "MODE", "ROWS"), help=argparse.SUPPRESS
    )
    ap.add_argument("--sgemm", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=10, help="timed steps per figure (default 10)")
    ap.add_argument("--models", default="agnews,dbpedia", help="comma-separated: agnews, dbpedia")
    ap.add_argument("--rows", default="random,full", help="comma-separated: random, full")
    ap.add_argument(
        "--repeats", type=int, default=1, help="processes per figure and framework, alternating; medians"
    )
    ap.add_argument("--no-fresh", action="store_true", help="skip the empty-cache rows")
    ap.add_argument("--cold-steps", type=int, default=50, help="steps timed from an empty cache (default 50)")
    ap.add_argument("--no-tune", action="store_true", help="do not run `python -m ember.autotune` first")
    ap.add_argument(
        "--no-torch", action="store_true", help="ember `cpu` only (no PyTorch, ember on torch, ONNX Runtime)"
    )
    ap.add_argument(
        "--skip", default="", help="comma-separated frameworks to leave out: ember-torch, torch, onnxruntime"
    )
    ap.add_argument("--no-import-order", action="store_true", help="skip the import-order rows")
    ap.add_argument("--cold", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--import-first", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.sgemm:
        print(json.dumps(sgemm_gflops()))
        return
    if args.worker:
        args.framework, args.model, args.mode, args.rows = args.worker
        worker(args)
        return

    models, rows_kinds = args.models.split(","), args.rows.split(",")
    raw: dict = {"sgemm": [_sgemm()]}
    lines = markdown_head(["figure", *(h for _, h in COLUMNS), "ember / PyTorch", "ember / ORT"])
    import_rows, measured = [], 0
    for model in models:
        name = NAMES[model]
        if not args.no_tune:
            _tune(model)
        for mode, frameworks in FRAMEWORKS.items():
            frameworks = _available(frameworks, args)
            for rows in rows_kinds:
                # ember with NumPy first, the peers, then ember again with each of IMPORTED_FIRST
                # imported before it (random rows only)
                firsts = _imported_first(args, model) if rows == "random" else []
                variants = [(fw, None) for fw in frameworks] + [("ember", m) for m in firsts]
                runs: dict[tuple, list] = {v: [] for v in variants}
                for _ in range(args.repeats):  # alternating, so a slow spell hits every variant
                    for fw, first in variants:
                        runs[fw, first].append(_spawn(fw, model, mode, rows, args.steps, import_first=first))
                        after = f", {first} first" if first else ""
                        print(
                            f"  {model} {mode} {rows} {fw}{after}: {runs[fw, first][-1]['median_s']:.3f} s",
                            file=sys.stderr,
                        )
                for (fw, first), figures in runs.items():
                    key = f"{model}/{mode}/{rows}/{fw}" + (f"/{first}-first" if first else "")
                    raw[key] = merged = _merge(figures)
                    measured += merged.get("autotune_measured", 0)
                    if first:
                        label = f"{name} {MODE_LABELS[mode]}, {IMPORTED_FIRST[first]} imported before ember"
                        theirs = raw.get(f"{model}/{mode}/{rows}/torch", {}).get("median_s")
                        import_rows.append(_row(label, {"ember": merged["median_s"], "torch": theirs}, "s"))
                lines.append(
                    _row(
                        f"{name} {MODE_LABELS[mode]}, {rows} rows",
                        {fw: raw[f"{model}/{mode}/{rows}/{fw}"]["median_s"] for fw in frameworks},
                        "s",
                    )
                )
        train = _available(FRAMEWORKS["train"], args)
        for label, key, unit in (
            ("first step, warm cache", "first_step_s", "s"),
            ("imports + set-up + first step, warm cache", "setup_and_first_step_s", "s"),
            ("peak RSS (train)", "peak_rss_gb", "GB"),
        ):
            figures = {fw: raw[f"{model}/train/{rows_kinds[0]}/{fw}"][key] for fw in train}
            lines.append(_row(f"{name} {label}, {rows_kinds[0]} rows", figures, unit))
    lines += import_rows
    raw["sgemm"].append(_sgemm())  # again at the end: the better of the two is the machine's speed
    sgemm = max(r["gflops"] for r in raw["sgemm"])
    notes = [f"Keys autotune measured inside the timed ember processes: {measured}."]
    if not args.no_fresh:
        model, rows = models[0], rows_kinds[0]
        with tempfile.TemporaryDirectory(prefix="ember-fresh-cache-") as cache:
            env = os.environ.copy()
            env["EMBER_CACHE_DIR"] = cache  # the kernel cache and the autotune cache under it
            env.pop("NUMBA_CACHE_DIR", None)
            env.pop("EMBER_AUTOTUNE_CACHE", None)
            env["EMBER_BACKGROUND_COMPILE"] = "1"
            fresh = _spawn("ember", model, "train", rows, 1, env, cold=args.cold_steps)
            raw[f"{model}/fresh/ember"] = fresh
        theirs = raw.get(f"{model}/train/{rows}/torch")
        torch_total = theirs["setup_s"] + theirs["first_step_s"] if theirs else None
        lines.append(
            _row(
                "setup + first step, empty kernel and autotune cache",
                {"ember": fresh["setup_s"] + fresh["first_step_s"], "torch": torch_total},
                "s",
            )
        )
        lines.append(
            _row("empty cache: compiled kernels run after", {"ember": fresh["compiled_after_s"]}, "s")
        )
        warm = raw[f"{model}/train/{rows}/ember"]["median_s"] * args.cold_steps
        notes.append(
            f"{NAMES[model]}, empty kernel and autotune cache: the first {args.cold_steps} steps took "
            f"{fresh['cold_total_s']:.1f} s with set-up ({fresh['autotune_measured']} keys measured on the way); "
            f"{args.cold_steps} warm steps {warm:.1f} s; bound 1.5 x warm + 10 s = {1.5 * warm + 10:.1f} s."
        )
    table = "\n".join(lines + [""] + _limit_lines(raw, models, rows_kinds, sgemm) + [""] + notes)
    print(table)
    out = ROOT / "results"
    out.mkdir(exist_ok=True)
    (out / "model_table.json").write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
