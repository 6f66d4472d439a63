"""Fine-tuning reads which model the pretrained run holds from its ``config.json``: a
fastText-style run is refused with the reason, without ``--model fasttext``, and a ``--model``
flag that contradicts the file says so (not "unknown key 'd_model'")."""

from __future__ import annotations

import pytest
from text_classification import ag_news_finetune
from text_classification.fasttext import fasttext_experiment


@pytest.fixture
def fasttext_run(tmp_path):
    """A fastText-style DbPedia run's config.json and model.bpk, as db_pedia_train.py leaves them."""
    run = tmp_path / "db-pedia-fasttext"
    run.mkdir()
    fasttext_experiment("dbpedia").save(run / "config.json")
    (run / "model.bpk").write_bytes(b"")
    return run


def test_a_fasttext_base_run_is_refused_from_its_config(fasttext_run, tmp_path, usage_error):
    argv = ["--source", "synthetic", "--pretrained", str(fasttext_run / "model.bpk")]
    err = usage_error(ag_news_finetune.main, argv + ["--artifact-dir", str(tmp_path / "ft")])
    assert 'its config.json says "model": "fasttext"' in err
    assert "LoRA fine-tuning does not apply to the fastText-style model" in err
    assert "unknown key" not in err and "contradicts" not in err


def test_a_model_flag_contradicting_the_config_says_so(fasttext_run, tmp_path, usage_error):
    argv = [
        "--source",
        "synthetic",
        "--pretrained",
        str(fasttext_run / "model.bpk"),
        "--model",
        "transformer",
    ]
    err = usage_error(ag_news_finetune.main, argv + ["--artifact-dir", str(tmp_path / "ft")])
    assert "--model transformer contradicts it" in err
