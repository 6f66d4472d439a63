"""Every example command the README shows parses and resolves as written: each line
``python examples/text_classification/<script>.py ...`` of the README runs its script's
``main`` with training, inference and scoring replaced by recorders, on a tiny local CSV
directory standing for ``DIR``, a tiny random BERT checkpoint for ``CHECKPOINT`` and the synthetic corpus for the Hub. (The real runs take minutes to hours; the scripts' own tests
train tiny models end to end.)"""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
SCRIPTS = ("ag_news_train", "ag_news_infer", "ag_news_finetune", "db_pedia_train", "db_pedia_infer")


def readme_commands() -> list[list[str]]:
    """The argv of every README line that runs an example script (continuations joined)."""
    text = README.read_text().replace("\\\n", " ")
    commands = []
    for line in text.splitlines():
        match = re.search(r"python examples/text_classification/(\w+)\.py(.*)", line)
        if match and match.group(1) in SCRIPTS:
            args = match.group(2).split("#", 1)[0]
            commands.append([match.group(1)] + shlex.split(args))
    return commands


def test_the_readme_shows_every_script():
    shown = {argv[0] for argv in readme_commands()}
    assert shown == set(SCRIPTS)


@pytest.mark.parametrize("argv", readme_commands(), ids=lambda argv: " ".join(argv))
def test_readme_command_resolves(argv, tmp_path, monkeypatch):
    from text_classification import cli, fasttext, finetune, inference, training

    data = tmp_path / "ag_news"
    data.mkdir()
    for split in ("train", "test"):
        (data / f"{split}.csv").write_text('"3","Stocks rally","Oil falls."\n"2","Late goal","A win."\n')
    argv = [str(data) if a == "DIR" else a for a in argv]
    calls = []
    monkeypatch.setattr(training, "train", lambda *a, **k: calls.append(("train", a[3])))
    monkeypatch.setattr(fasttext, "train_fasttext", lambda *a, **k: calls.append(("fasttext", a[3])))
    monkeypatch.setattr(finetune, "lora_finetuning", lambda *a, **k: calls.append(("finetune", a[3])))
    monkeypatch.setattr(inference, "infer", lambda *a, **k: calls.append(("infer", k.get("model"))))
    monkeypatch.setattr(inference, "evaluate_run", lambda *a, **k: calls.append(("evaluate", a[2])) or 0.0)
    monkeypatch.setattr(inference, "run_model_kind", lambda directory: "transformer")
    real_load = cli.load_datasets

    def load_offline(dataset_cls, args, parser=None):  # the Hub stands in as the synthetic corpus
        if args.source == "hub":
            return dataset_cls.synthetic("train"), dataset_cls.synthetic("test")
        return real_load(dataset_cls, args, parser)

    monkeypatch.setattr(cli, "load_datasets", load_offline)
    script = importlib.import_module(f"text_classification.{argv[0]}")
    if "CHECKPOINT" in argv:  # a Hugging Face checkpoint: a tiny random BERT stands in
        pytest.importorskip("transformers")
        from helpers.hf_checkpoints import save_checkpoint

        save_checkpoint(tmp_path / "checkpoint", "bert", max_position_embeddings=512)
        argv = [str(tmp_path / "checkpoint") if a == "CHECKPOINT" else a for a in argv]
    if argv[0] == "ag_news_finetune" and "--pretrained" not in argv:  # the chain's DbPedia model.bpk
        pretrained = tmp_path / "db" / "model.bpk"
        pretrained.parent.mkdir()
        pretrained.write_bytes(b"")
        argv += ["--pretrained", str(pretrained)]
    script.main(argv[1:] + (["--artifact-dir", str(tmp_path / "run")] if "_infer" not in argv[0] else []))
    assert len(calls) == 1, calls
    kind, config = calls[0]
    if kind in ("train", "finetune"):
        assert config.validate() is config
    if kind == "fasttext":
        assert config.model == "fasttext"
    assert cli.MODELS  # the flags resolved through cli
