"""The scripts' defaults work offline: the DbPedia scripts read the shipped sample unless told
otherwise, on the sample the Transformer takes ember's recipe (Burn's takes ~6 min an epoch
there), and an unreachable Hub ends in one line naming the offline sources."""

from __future__ import annotations

import pytest
from text_classification import ag_news_train, cli, db_pedia_infer, db_pedia_train, flags, recipes, training

from ember.data import DatasetUnavailableError


@pytest.fixture
def recorded(monkeypatch):
    """``training.train`` replaced by a recorder of its dataset and config."""
    calls = []
    monkeypatch.setattr(training, "train", lambda *a, **k: calls.append((a[1], a[3])))
    return calls


@pytest.fixture
def offline_hub(monkeypatch, tmp_path):
    """No Hub and empty caches: what a machine without network sees."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("EMBER_DATASET_CACHE", str(tmp_path / "ember"))


def test_db_pedia_train_defaults_to_the_shipped_sample_and_ember_recipe(recorded, tmp_path, offline_hub):
    db_pedia_train.main(["--artifact-dir", str(tmp_path)])
    ((dataset, config),) = recorded
    assert dataset.source.startswith("sample:") and len(dataset) == 4000
    assert config.recipe == "ember" and config.seq_length == recipes.EMBER_RECIPE.seq_length


def test_burns_recipe_stays_the_default_of_the_full_datasets_and_on_request(recorded, tmp_path):
    db_pedia_train.main(["--artifact-dir", str(tmp_path), "--recipe", "burn"])
    db_pedia_train.main(["--artifact-dir", str(tmp_path), "--source", "synthetic"])
    assert [config.recipe for _, config in recorded] == ["burn", "burn"]
    assert recorded[0][0].source.startswith("sample:") and recorded[0][1].train_samples == 25_000


def test_db_pedia_evaluate_defaults_to_the_sample():
    parser = flags.inference_parser("t", "/tmp/unused", flags.default_source(db_pedia_infer.DbPediaDataset))
    assert parser.parse_args(["--evaluate"]).source == "sample"
    assert flags.default_source(ag_news_train.AgNewsDataset) == "hub"  # no AG News rows ship


def test_an_unreachable_hub_names_the_offline_sources(tmp_path, offline_hub, capsys):
    with pytest.raises(DatasetUnavailableError, match=r"--source hub: .*--source local --data-dir DIR"):
        ag_news_train.main(["--artifact-dir", str(tmp_path)])
    argv = ["--source", "hub", "--artifact-dir", str(tmp_path)]
    assert cli.run_script(db_pedia_train.main, argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --source hub: DbPediaDataset cannot be read") and "--source sample" in err
