"""ember's main demo: train the DbPedia text classifier on the shipped sample, then use it.

Trains the example's Transformer classifier on the 4,000 DbPedia rows shipped in
``data/dbpedia_sample/`` with ember's recipe (``--recipe ember``, see ``cli.py``), validating on
the 1,000 held-out rows after every epoch, with the live dashboard on a terminal (plain lines
otherwise); writes the artifacts (``config.json``, ``model.bpk``, checkpoints, metric logs) to
/tmp/ember-text-classification-demo; reloads them to classify a few held-out rows in Burn's
inference format; and prints the accuracy over all 1,000 held-out rows and the wall time.
No network is needed: the rows and the bert-base-cased vocabulary ship with the example.

Run:
    python examples/text_classification/demo.py
    python examples/text_classification/demo.py --epochs 3 --artifact-dir /tmp/my-demo
    python examples/text_classification/demo.py --recipe burn --seq-length 128   # any training flag works
"""
from __future__ import annotations

import time

_START = time.perf_counter()  # the wall time reported includes imports and kernel compilation

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # examples/: makes `text_classification` importable

import ember  # noqa: E402,F401  (before NumPy: ember's OpenBLAS setting)

from text_classification import cli  # noqa: E402
from text_classification.dataset import DbPediaDataset  # noqa: E402

ARTIFACT_DIR = "/tmp/ember-text-classification-demo"
MODEL = cli.ModelShape(d_model=256, d_ff=1024, n_heads=8, n_layers=4, norm_first=True)  # Burn's, for --recipe burn
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


def main(argv=None) -> dict:
    """Train, infer, evaluate; returns ``{"accuracy", "seconds", "train_seconds", "result"}`` (for tests)."""
    from text_classification.inference import evaluate, infer, load_model
    from text_classification.training import train

    parser = cli.training_parser(__doc__.splitlines()[0], ARTIFACT_DIR, sources=("sample",))
    parser.set_defaults(recipe="ember")
    args = parser.parse_args(argv)
    device, dtype = cli.resolve_device(parser, args.backend, args.dtype)
    config = cli.build_config(args, MODEL)
    dataset_train, dataset_test = cli.load_datasets(DbPediaDataset, args, parser)

    t = config.transformer
    print(f"ember text-classification demo: DbPedia-14 ({DbPediaDataset.num_classes()} classes), "
          f"{len(dataset_train):,} training rows, {len(dataset_test):,} held out ({args.source} source)")
    print(f"Recipe {config.recipe}: Transformer d_model {t.d_model}, {t.n_layers} layers, {t.n_heads} heads, "
          f"seq {config.seq_length}, {config.pooling} pooling; {type(config.optimizer).__name__[:-6]} "
          f"lr {config.lr:g} ({config.lr_schedule}, {config.warmup_steps} warm-up steps), batch {config.batch_size}, "
          f"{config.num_epochs} epochs; backend {device}. Artifacts: {args.artifact_dir}")
    print("(the first run compiles ember's CPU kernels, about 40 s; later runs load them from the cache)\n",
          flush=True)

    result = train(args.artifact_dir, dataset_train, dataset_test, config, device, dataset_cls=DbPediaDataset,
                   dtype=dtype, checkpoint=args.resume, plots=args.plots)
    train_seconds = time.perf_counter() - _START

    rows = _pick_rows(dataset_test, INFER_ROWS)
    print(f"\nInference on {len(rows)} held-out rows, from the saved config.json and model.bpk:")
    predictions = infer(args.artifact_dir, DbPediaDataset, [dataset_test[i].text for i in rows], device, dtype)
    for i, (row, prediction) in enumerate(zip(rows, predictions)):
        expected = DbPediaDataset.class_name(dataset_test[row].label)
        mark = "right" if prediction.class_name == expected else "wrong"
        print(f"Item {i} (held-out row {row}): predicted {prediction.class_name}, expected {expected} ({mark})")

    _, tokenizer, model = load_model(args.artifact_dir, DbPediaDataset, device, dtype)
    accuracy = evaluate(model, tokenizer, config.seq_length, dataset_test, device)
    seconds = time.perf_counter() - _START
    correct = round(accuracy * len(dataset_test) / 100)
    print(f"\nHeld-out accuracy: {accuracy:.1f}% ({correct}/{len(dataset_test)} rows)")
    print(f"Wall time: {seconds:.0f} s (training {train_seconds:.0f} s, including start-up and kernel compilation)")
    return {"accuracy": accuracy, "seconds": seconds, "train_seconds": train_seconds, "result": result}


if __name__ == "__main__":
    sys.exit(cli.run_script(main))
