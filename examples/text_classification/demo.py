"""ember's main demo: two text classifiers trained on the shipped DbPedia sample, then used.

1. The example's Transformer classifier, trained on the 4,000 DbPedia rows shipped in
   ``data/dbpedia_sample/`` with ember's recipe (``--recipe ember``, see ``recipes.py``), validated on
   the 1,000 held-out rows after every epoch, with the live dashboard on a terminal (plain lines
   otherwise); artifacts (``config.json``, ``model.bpk``, checkpoints, metric logs) in
   /tmp/ember-text-classification-demo; then reloaded to classify a few held-out rows in Burn's
   inference format, and scored on all 1,000 held-out rows.
2. The fastText-style model (a bag of word pieces and hashed bigrams, ``fasttext.py``) on the
   same rows with its preset, the same dashboard and artifacts (in ``<artifact dir>-fasttext``),
   reloaded and scored the same way.

Each prints its held-out accuracy and wall time, and a table ends the run. No network is
needed: the rows and the bert-base-cased vocabulary ship with the example.

Run:
    python examples/text_classification/demo.py
    python examples/text_classification/demo.py --model transformer   # one of the two only
    python examples/text_classification/demo.py --epochs 4 --artifact-dir /tmp/my-demo
    python examples/text_classification/demo.py --recipe burn --seq-length 128   # the training flags set the Transformer

With both models, the training flags set the Transformer's run (the fastText model keeps its
preset, apart from ``--seed``, ``--tokenizer`` and its own flags ``--buckets``, ``--ngrams``,
``--head-tokens``, ``--max-tokens``); with ``--model fasttext`` they set the fastText run.
"""

from __future__ import annotations

import time

_START = time.perf_counter()  # the wall time reported includes imports and kernel compilation

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(
    0, str(Path(__file__).resolve().parent.parent)
)  # examples/: makes `text_classification` importable

import ember  # noqa: E402,F401  (before NumPy: ember's OpenBLAS setting)
from text_classification import cli  # noqa: E402
from text_classification.dataset import DbPediaDataset  # noqa: E402

ARTIFACT_DIR = "/tmp/ember-text-classification-demo"
MODEL = cli.ModelShape(
    d_model=256, d_ff=1024, n_heads=8, n_layers=4, norm_first=True
)  # Burn's, for --recipe burn
INFER_ROWS = 3


def _pick_rows(dataset, n: int) -> list[int]:
    """The first row of each of the first ``n`` classes met, in file order (varied and stable)."""
    seen, rows = set(), []
    for i in range(len(dataset)):
        label = dataset[i].label
        if label not in seen:
            seen.add(label)
            rows.append(i)
            if len(rows) == n:
                break
    return rows


def _show_predictions(artifact_dir: str, dataset_test, device, dtype) -> None:
    from text_classification.inference import infer

    rows = _pick_rows(dataset_test, INFER_ROWS)
    print(f"\nInference on {len(rows)} held-out rows, from the saved config.json and model.bpk:")
    predictions = infer(artifact_dir, DbPediaDataset, [dataset_test[i].text for i in rows], device, dtype)
    for i, (row, prediction) in enumerate(zip(rows, predictions)):
        expected = DbPediaDataset.class_name(dataset_test[row].label)
        mark = "right" if prediction.class_name == expected else "wrong"
        print(
            f"Item {i} (held-out row {row}): predicted {prediction.class_name}, expected {expected} ({mark})"
        )


def kernel_cache_cold(device) -> bool:
    """Whether this run will compile the cpu kernels: the backend is ``cpu`` and the kernel
    cache lacks the marker that ``python -m ember.precompile`` (``make install``) leaves."""
    if str(device) != "cpu":
        return False
    from ember.kernels.cpu import jit  # noqa: F401  (sets Numba's cache directory)
    from ember.kernels.cpu.background_compile import marker_path

    marker = marker_path("float32")  # float16 computes through the float32 kernels
    return marker is None or not marker.exists()


COLD_CACHE_NOTE = (
    "(ember's cpu kernels are not in the cache yet: this run compiles them, about 40 s; "
    "`python -m ember.precompile` (make install) does it ahead, and later runs load them from the cache)\n"
)


def _what_timed(started: float, cold: bool) -> str:
    if started != _START:
        return "training, inference and scoring"
    return "training, inference and scoring, with start-up" + (" and kernel compilation" if cold else "")


def _report(name: str, accuracy: float, total: int, seconds: float, note: str) -> None:
    correct = round(accuracy * total / 100)
    print(f"\n{name} held-out accuracy: {accuracy:.1f}% ({correct}/{total} rows)")
    print(f"{name} wall time: {seconds:.0f} s ({note})", flush=True)


def _run_transformer(args, dataset_train, dataset_test, device, dtype, started: float, cold: bool) -> dict:
    from text_classification.inference import evaluate_run
    from text_classification.training import train

    config = cli.build_config(args, MODEL, dataset=DbPediaDataset.NAME)
    t = config.transformer
    print(
        f"[1] Transformer, recipe {config.recipe}: d_model {t.d_model}, {t.n_layers} layers, {t.n_heads} heads, "
        f"seq {config.seq_length}, {config.pooling} pooling; {type(config.optimizer).__name__[:-6]} "
        f"lr {config.lr:g} ({config.lr_schedule}, {config.warmup_steps} warm-up steps), batch {config.batch_size}, "
        f"{config.num_epochs} epochs; backend {device}. Artifacts: {args.artifact_dir}\n",
        flush=True,
    )
    result = cli.launch(train, args, (dataset_train, dataset_test), config, device, dtype, DbPediaDataset)
    _show_predictions(args.artifact_dir, dataset_test, device, dtype)
    accuracy = evaluate_run(args.artifact_dir, DbPediaDataset, dataset_test, device, dtype)
    seconds = time.perf_counter() - started
    _report("Transformer", accuracy, len(dataset_test), seconds, _what_timed(started, cold))
    return {"accuracy": accuracy, "seconds": seconds, "result": result}


def _run_fasttext(args, dataset_train, dataset_test, device, dtype, started: float, cold: bool) -> dict:
    from text_classification.fasttext import train_fasttext
    from text_classification.inference import evaluate_run

    config = cli.build_fasttext_config(args, DbPediaDataset)
    artifact_dir = args.artifact_dir
    print(
        f"\n[2] fastText-style model, ember's preset: mean of word-piece and hashed {config.ngrams}-gram embeddings "
        f"(d {config.d_model}, {config.buckets:,} buckets), linear head; lazy Adam lr {config.lr:g} "
        f"({config.lr_schedule}), batch {config.batch_size}, {config.num_epochs} epochs; backend {device}. "
        f"Artifacts: {artifact_dir}\n",
        flush=True,
    )
    result = cli.launch(
        train_fasttext, args, (dataset_train, dataset_test), config, device, dtype, DbPediaDataset
    )
    _show_predictions(artifact_dir, dataset_test, device, dtype)
    accuracy = evaluate_run(artifact_dir, DbPediaDataset, dataset_test, device, dtype)
    seconds = time.perf_counter() - started
    _report("fastText-style", accuracy, len(dataset_test), seconds, _what_timed(started, cold))
    return {"accuracy": accuracy, "seconds": seconds, "result": result}


# The training flags both models read; with both models they set the Transformer's run only.
_SHARED = (
    "epochs",
    "batch_size",
    "train_samples",
    "valid_samples",
    "optimizer",
    "lr",
    "lr_schedule",
    "label_smoothing",
    "num_workers",
    "d_model",
)


def _split_flags(parser, args) -> tuple:
    """``(transformer_args, fasttext_args)``, each resolved for its model, or None for a model
    ``--model`` leaves out."""

    def resolved(model: str, drop: tuple, recipe) -> argparse.Namespace:
        own = argparse.Namespace(**vars(args))
        for name in drop:
            setattr(own, name, None)
        own.model, own.recipe = model, recipe
        cli.resolve_model_flags(parser, own, ARTIFACT_DIR)
        if args.model is None and model == "fasttext":  # beside the Transformer's directory
            own.artifact_dir = cli.model_artifact_dir(args.artifact_dir or ARTIFACT_DIR, "fasttext")
        return own

    both = args.model is None
    transformer = fasttext = None
    if args.model in (None, "transformer"):
        transformer = resolved("transformer", cli.FASTTEXT_ONLY if both else (), args.recipe or "ember")
    if args.model in (None, "fasttext"):
        fasttext = resolved(
            "fasttext",
            _SHARED + cli.TRANSFORMER_ONLY + ("resume",) if both else (),
            None if both else args.recipe,
        )
    return transformer, fasttext


def main(argv=None) -> dict:
    """Train, infer, evaluate; returns ``{"transformer": {...}, "fasttext": {...}, "seconds"}``
    (a model left out by ``--model`` has no entry), each ``{"accuracy", "seconds", "result"}``."""
    parser = cli.training_parser(__doc__.splitlines()[0], ARTIFACT_DIR, sources=("sample",))
    parser.set_defaults(model=None)  # both
    args = parser.parse_args(argv)
    device, dtype = cli.resolve_device(parser, args.backend, args.dtype)
    transformer_args, fasttext_args = _split_flags(parser, args)
    for own in (transformer_args, fasttext_args):
        if own is not None:
            cli.check_run_dir(parser, own.artifact_dir, own.resume)
    dataset_train, dataset_test = cli.load_datasets(DbPediaDataset, args, parser)

    print(
        f"ember text-classification demo: DbPedia-14 ({DbPediaDataset.num_classes()} classes), "
        f"{len(dataset_train):,} training rows, {len(dataset_test):,} held out ({args.source} source)\n"
    )
    cold = kernel_cache_cold(device)
    if cold:
        print(COLD_CACHE_NOTE, flush=True)
    out = {}
    if transformer_args is not None:
        out["transformer"] = _run_transformer(
            transformer_args, dataset_train, dataset_test, device, dtype, _START, cold
        )
    if fasttext_args is not None:
        started = time.perf_counter() if out else _START
        out["fasttext"] = _run_fasttext(
            fasttext_args, dataset_train, dataset_test, device, dtype, started, cold
        )
    out["seconds"] = time.perf_counter() - _START
    print(f"\n{'model':<16} {'held-out accuracy':>18} {'wall time':>10}")
    for name, label in (("transformer", "Transformer"), ("fasttext", "fastText-style")):
        if name in out:
            print(f"{label:<16} {out[name]['accuracy']:>17.1f}% {out[name]['seconds']:>9.0f} s")
    print(
        f"Total wall time: {out['seconds']:.0f} s, including start-up"
        + (" and kernel compilation" if cold else "")
    )
    return out


if __name__ == "__main__":
    sys.exit(cli.run_script(main))
