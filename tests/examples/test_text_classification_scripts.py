"""The text-classification example's scripts: train -> artifacts, infer -> Burn's output format,
LoRA finetune from that run's model.bpk, the errors users meet, the recipe presets, and a
smoke run of the demo. Everything runs on the synthetic source at a tiny size, offline."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from text_classification import (
    ag_news_finetune,
    ag_news_infer,
    ag_news_train,
    cli,
    db_pedia_infer,
    db_pedia_train,
    demo,
    flags,
    from_flags,
    recipes,
)
from text_classification.dataset import AgNewsDataset, DbPediaDataset
from text_classification.inference import ArtifactError, format_f32_debug, format_logits
from text_classification.training import ExperimentConfig, build_lr_scheduler

from ember.nn.module_record import ModuleRecord
from ember.optim import AdamConfig, AdamWConfig

# The smallest Transformer on synthetic rows, one epoch: the demo takes these flags too.
TINY_MODEL = [
    "--source",
    "synthetic",
    "--d-model",
    "16",
    "--d-ff",
    "32",
    "--n-heads",
    "2",
    "--n-layers",
    "1",
    "--seq-length",
    "32",
    "--epochs",
    "1",
]
TINY = [
    *TINY_MODEL,
    "--batch-size",
    "16",
    "--train-samples",
    "160",
    "--valid-samples",
    "48",
    "--num-workers",
    "0",
]


# Every test here runs offline: a connection beyond loopback fails it.
pytestmark = pytest.mark.usefixtures("no_network")


@pytest.fixture(scope="module")
def dbpedia_run(tmp_path_factory):
    """A tiny DbPedia training run (Burn's recipe, synthetic rows); its artifact directory."""
    directory = tmp_path_factory.mktemp("db-pedia")
    result = db_pedia_train.main(TINY + ["--artifact-dir", str(directory)])
    assert result.epochs_trained == 1
    return directory


# ---------------------------------------------------------------------------------- train
def test_train_writes_burns_artifacts(dbpedia_run):
    d = dbpedia_run
    for path in (
        "config.json",
        "model.bpk",
        "experiment.log",
        "checkpoint/model-1.bpk",
        "checkpoint/optim-1.bpk",
        "checkpoint/scheduler-1.bpk",
        "train/epoch-1/Loss.log",
        "train/epoch-1/Accuracy.log",
        "train/epoch-1/Learning_Rate.log",
        "train/epoch-1/Iteration_Speed.log",
        "valid/epoch-1/Loss.log",
        "valid/epoch-1/Accuracy.log",
    ):
        assert (d / path).is_file(), path
    assert not (d / "valid/epoch-1/Learning_Rate.log").exists()  # train-only metric, as Burn
    lines = (d / "train/epoch-1/Loss.log").read_text().splitlines()
    assert len(lines) == 160 // 16 + 1 and lines[-1].endswith(",final")
    assert all(re.fullmatch(r"[0-9.e-]+,1", line) for line in lines[:-1])
    config = ExperimentConfig.load(d / "config.json")
    assert (config.transformer.d_model, config.transformer.n_layers, config.seq_length) == (16, 1, 32)
    assert config.recipe == "burn" and isinstance(config.optimizer, AdamConfig)
    record = ModuleRecord.load(d / "model.bpk").numpy()
    assert record["output.weight"].shape == (16, DbPediaDataset.num_classes())


# ---------------------------------------------------------------------------------- infer
def test_infer_prints_burns_format(dbpedia_run, capsys):
    predictions = db_pedia_infer.main(["--artifact-dir", str(dbpedia_run)])
    out = capsys.readouterr().out
    # Burn's report: header, then per item a blank line and the 5-line block.
    expected = ["Loading weights ...", "Creating model ...", "Running inference ..."]
    for i, p in enumerate(predictions):
        expected += [
            "",
            f"=== Item {i} ===",
            f"- Text: {db_pedia_infer.SAMPLES[i]}",
            f"- Logits: {format_logits(p.probabilities)}",
            f"- Prediction: {p.class_name}",
            "================",
        ]
    assert out.splitlines() == expected
    logits = [line for line in out.splitlines() if line.startswith("- Logits: ")]
    number = r"\d\.\d+(e-\d+)?"
    assert len(logits) == 3 and all(
        re.fullmatch(rf"- Logits: \[({number}, ){{13}}{number}\]", line) for line in logits
    )
    for p in predictions:
        assert len(p.probabilities) == 14 and abs(sum(p.probabilities) - 1) < 1e-5
        assert p.class_name == DbPediaDataset.class_name(int(np.argmax(p.probabilities)))
    assert (
        db_pedia_infer.SAMPLES[0]
        == " Magnus Eriksson is a Swedish former footballer who played as a forward."
    )
    assert "SkyDome" in ag_news_infer.SAMPLES[0] and "Yemen" in ag_news_infer.SAMPLES[1]
    assert ag_news_infer.SAMPLES[2].startswith("IBM puts grids to work at U.S. Open")


def test_infer_in_float16(dbpedia_run, capsys):
    predictions = db_pedia_infer.main(
        ["--artifact-dir", str(dbpedia_run), "--dtype", "f16", "--text", "A river."]
    )
    assert len(predictions) == 1 and abs(sum(predictions[0].probabilities) - 1) < 1e-2
    assert "- Text: A river." in capsys.readouterr().out


def test_logits_use_rusts_f32_debug_format():
    assert format_f32_debug(1.0) == "1.0"
    assert format_f32_debug(0.25) == "0.25"
    assert format_f32_debug(0.1) == "0.1"
    assert format_f32_debug(3.5e-5) == "3.5e-5"
    assert format_f32_debug(1 / 3) == "0.33333334"
    assert format_logits([0.5, 0.5]) == "[0.5, 0.5]"


# ---------------------------------------------------------------------------------- finetune
def test_lora_finetune_changes_only_adapters_and_head(dbpedia_run, tmp_path, capsys):
    out_dir = tmp_path / "ag-news"
    pretrained = dbpedia_run / "model.bpk"
    result = ag_news_finetune.main(TINY + ["--pretrained", str(pretrained), "--artifact-dir", str(out_dir)])
    assert result.epochs_trained == 1
    base = ModuleRecord.load(pretrained).numpy()
    trained = ModuleRecord.load(out_dir / "checkpoint" / "model-1.bpk").numpy()  # adapters not merged yet
    adapters = sorted(k for k in trained if ".lora." in k)
    assert adapters and all(k.endswith((".lora.a", ".lora.b")) for k in adapters)
    assert any(k.startswith("embedding_token.weight.lora") for k in adapters)
    assert trained["output.weight"].shape == (16, AgNewsDataset.num_classes())
    assert base["output.weight"].shape == (16, DbPediaDataset.num_classes())
    moved_adapters = [k for k in adapters if k.endswith(".lora.b") and np.any(trained[k] != 0)]
    assert moved_adapters, "the LoRA up-projections (zero at start) should have been trained"
    for key, value in base.items():
        if key.startswith("output."):
            continue
        np.testing.assert_array_equal(trained[key], value, err_msg=f"frozen base weight {key} changed")
    # The saved model has the adapters merged: W = W0 + (alpha / r)·a@b, 1-d parameters untouched.
    merged = ModuleRecord.load(out_dir / "model.bpk").numpy()
    assert not any(".lora." in k for k in merged)
    for key, value in base.items():
        if key.startswith("output."):
            continue
        if value.ndim == 1:
            np.testing.assert_array_equal(merged[key], value, err_msg=key)
        else:
            delta = (16.0 / 8) * trained[f"{key}.lora.a"] @ trained[f"{key}.lora.b"]
            np.testing.assert_allclose(merged[key], value + delta, rtol=1e-5, atol=1e-6, err_msg=key)
    np.testing.assert_array_equal(merged["output.weight"], trained["output.weight"])
    assert json.loads((out_dir / "config.json").read_text())["lr_schedule"] == "constant"
    capsys.readouterr()
    predictions = ag_news_infer.main(["--artifact-dir", str(out_dir)])
    assert len(predictions) == 3 and all(len(p.probabilities) == 4 for p in predictions)
    assert all(p.class_name in AgNewsDataset.CLASS_NAMES for p in predictions)


# ---------------------------------------------------------------------------------- errors
def test_missing_model_is_a_clear_error(dbpedia_run, tmp_path, capsys):
    with pytest.raises(ArtifactError, match="config.json"):
        db_pedia_infer.main(["--artifact-dir", str(tmp_path / "nothing")])
    shutil.copy(dbpedia_run / "config.json", tmp_path / "config.json")
    with pytest.raises(ArtifactError, match=r"no trained weights at .*model\.bpk"):
        db_pedia_infer.main(["--artifact-dir", str(tmp_path)])
    assert cli.run_script(db_pedia_infer.main, ["--artifact-dir", str(tmp_path)]) == 1
    assert "error: no trained weights" in capsys.readouterr().err
    with pytest.raises(ArtifactError, match="pretrained"):
        ag_news_finetune.main(
            TINY
            + [
                "--pretrained",
                str(tmp_path / "missing" / "model.bpk"),
                "--artifact-dir",
                str(tmp_path / "ft"),
            ]
        )


def test_config_model_mismatch_is_a_clear_error(dbpedia_run, tmp_path):
    config = json.loads((dbpedia_run / "config.json").read_text())
    config["transformer"]["d_model"] = 24
    (tmp_path / "config.json").write_text(json.dumps(config))
    shutil.copy(dbpedia_run / "model.bpk", tmp_path / "model.bpk")
    with pytest.raises(ArtifactError, match="do not fit") as info:
        db_pedia_infer.main(["--artifact-dir", str(tmp_path)])
    assert "model.bpk" in str(info.value) and "embedding_token.weight" in str(info.value)
    # An AG News model read as DbPedia: the head has 4 classes, not 14.
    with pytest.raises(ArtifactError, match="output"):
        ag_news_infer.main(["--artifact-dir", str(dbpedia_run)])


@pytest.mark.parametrize("script", [db_pedia_train, ag_news_infer, demo])
def test_unknown_backend_is_a_clear_error(script, usage_error):
    err = usage_error(script.main, ["--backend", "tpu"])
    assert "unknown backend 'tpu'" in err and "cpu, reference, cuda" in err


def test_unknown_dtype_is_a_clear_error(usage_error):
    assert "--dtype" in usage_error(db_pedia_infer.main, ["--dtype", "f64"])


def test_cuda_without_gpu_is_a_clear_error(usage_error):
    from ember.kernels.cuda.runtime import is_available

    if is_available():
        pytest.skip("a GPU is usable here")
    err = usage_error(ag_news_train.main, ["--backend", "cuda"])
    assert "--backend cuda: no usable CUDA GPU" in err and "--backend cpu" in err


def test_local_source_without_data_dir_is_a_clear_error(usage_error):
    assert "--data-dir" in usage_error(ag_news_train.main, ["--source", "local"])


# ---------------------------------------------------------------------------------- recipes
def _config(script, argv, **kwargs):
    parser = flags.training_parser("t", "/tmp/unused")
    dataset = AgNewsDataset if script in (ag_news_train, ag_news_finetune) else DbPediaDataset
    return from_flags.build_config(parser.parse_args(argv), script.MODEL, dataset=dataset.NAME, **kwargs)


def test_burn_preset_is_burns_recipe():
    ag = _config(ag_news_train, [])
    t = ag.transformer
    assert (t.d_model, t.d_ff, t.n_heads, t.n_layers, t.norm_first, t.quiet_softmax) == (
        128,
        512,
        4,
        4,
        True,
        True,
    )
    assert isinstance(ag.optimizer, AdamConfig) and ag.optimizer.weight_decay.penalty == 5e-5
    assert (ag.seq_length, ag.batch_size, ag.num_epochs) == (256, 32, 5)
    assert (ag.train_samples, ag.valid_samples, ag.sample_with_replacement) == (25_000, 2_500, True)
    assert (ag.lr_schedule, ag.lr, ag.warmup_steps, ag.pooling, ag.label_smoothing) == (
        "noam",
        1e-2,
        1000,
        "first",
        0.0,
    )
    assert ag.num_workers == 1
    db = _config(db_pedia_train, []).transformer
    assert (db.d_model, db.d_ff, db.n_heads, db.n_layers, db.norm_first, db.quiet_softmax) == (
        256,
        1024,
        8,
        4,
        True,
        False,
    )
    # Noam(1e-2) with 1,000 warm-up steps and model size d_model, stepped before every iteration.
    schedule = build_lr_scheduler(ag, 10_000).init()
    rates = [schedule.step() for _ in range(2000)]
    for k in (1, 500, 1000, 2000):
        assert rates[k - 1] == pytest.approx(1e-2 * 128**-0.5 * min(k**-0.5, k * 1000**-1.5))
    ft = _config(ag_news_finetune, [], finetune=True)
    assert (ft.lr_schedule, ft.lr, ft.warmup_steps) == ("constant", 1e-3, 0)
    assert build_lr_scheduler(ft, 100) == 1e-3


def test_ember_preset_and_explicit_flags_override():
    ember_cfg = _config(db_pedia_train, ["--recipe", "ember"])
    recipe = recipes.EMBER_RECIPE
    assert (
        isinstance(ember_cfg.optimizer, AdamWConfig)
        and ember_cfg.optimizer.weight_decay == recipe.weight_decay
    )
    assert (ember_cfg.lr_schedule, ember_cfg.lr, ember_cfg.pooling) == ("cosine", recipe.lr, "mean")
    assert ember_cfg.transformer.d_model == recipe.model.d_model and ember_cfg.recipe == "ember"
    over = _config(
        db_pedia_train,
        [
            "--recipe",
            "ember",
            "--optimizer",
            "adam",
            "--lr",
            "0.02",
            "--seq-length",
            "100",
            "--lr-schedule",
            "noam",
            "--warmup-steps",
            "7",
            "--weight-decay",
            "0",
            "--epochs",
            "2",
            "--batch-size",
            "8",
            "--train-samples",
            "99",
            "--seed",
            "3",
        ],
    )
    assert isinstance(over.optimizer, AdamConfig) and over.optimizer.weight_decay is None
    assert (over.lr, over.seq_length, over.lr_schedule, over.warmup_steps) == (0.02, 100, "noam", 7)
    assert (over.num_epochs, over.batch_size, over.train_samples, over.seed) == (2, 8, 99, 3)
    assert (over.pooling, over.label_smoothing) == (
        "mean",
        recipe.label_smoothing,
    )  # not overridden: the preset's
    burn_over = _config(
        ag_news_train,
        [
            "--lr-schedule",
            "cosine",
            "--lr",
            "1e-3",
            "--warmup-steps",
            "10",
            "--pooling",
            "mean",
            "--d-model",
            "64",
        ],
    )
    assert (burn_over.lr_schedule, burn_over.pooling, burn_over.transformer.d_model) == ("cosine", "mean", 64)
    assert burn_over.transformer.n_layers == 4 and burn_over.seq_length == 256


def test_ember_preset_is_tuned_per_dataset():
    ag, db = _config(ag_news_train, ["--recipe", "ember"]), _config(db_pedia_train, ["--recipe", "ember"])
    recipe = recipes.EMBER_AG_NEWS_RECIPE
    assert (ag.num_epochs, ag.warmup_steps, ag.token_dropout) == (
        recipe.epochs,
        recipe.warmup_steps,
        recipe.token_dropout,
    )
    assert (
        ag.optimizer.weight_decay == recipe.weight_decay and ag.transformer.n_layers == recipe.model.n_layers
    )
    assert (db.num_epochs, db.warmup_steps, db.token_dropout) == (
        recipes.EMBER_RECIPE.epochs,
        recipes.EMBER_RECIPE.warmup_steps,
        0.0,
    )
    # Burn's preset is one for all datasets
    assert (
        recipes.preset("burn", dataset="ag_news")
        is recipes.preset("burn", dataset="dbpedia")
        is recipes.BURN_RECIPE
    )


def test_token_dropout_augments_the_training_loader_only(tmp_path):
    from text_classification.tokenizer import load_tokenizer
    from text_classification.training import build_dataloaders

    config = _config(db_pedia_train, ["--recipe", "ember", "--token-dropout", "0.15", "--num-workers", "0"])
    assert (
        config.token_dropout == 0.15 and _config(db_pedia_train, ["--recipe", "ember"]).token_dropout == 0.0
    )
    tokenizer = load_tokenizer(None)
    train, valid = build_dataloaders(
        DbPediaDataset.sample("train"), DbPediaDataset.sample("test"), config, tokenizer, "cpu"
    )
    unk, pad = tokenizer.token_to_id("[UNK]"), tokenizer.pad_token()

    def unk_share(loader):
        tokens = next(iter(loader)).tokens.numpy()
        return (tokens == unk).sum() / (tokens != pad).sum()

    assert 0.08 < unk_share(train) < 0.2 and unk_share(valid) < 0.02


def test_cosine_and_constant_schedules_warm_up_linearly():
    config = _config(ag_news_train, ["--lr-schedule", "cosine", "--lr", "1e-3", "--warmup-steps", "10"])
    schedule = build_lr_scheduler(config, 110).init()
    rates = [schedule.step() for _ in range(110)]
    assert rates[0] == pytest.approx(1e-4) and rates[9] == pytest.approx(1e-3)
    assert rates[10] == pytest.approx(1e-3) and max(rates) == pytest.approx(1e-3)
    assert rates[-1] < 1e-6 and all(a >= b for a, b in zip(rates[10:], rates[11:]))
    constant = _config(ag_news_train, ["--lr-schedule", "constant", "--lr", "2e-3", "--warmup-steps", "4"])
    schedule = build_lr_scheduler(constant, 50).init()
    assert [schedule.step() for _ in range(6)] == pytest.approx([5e-4, 1e-3, 1.5e-3, 2e-3, 2e-3, 2e-3])


# ---------------------------------------------------------------------------------- demo
def test_demo_smoke(tmp_path, capsys):
    out = demo.main(
        [
            *TINY_MODEL,
            "--buckets",
            "1024",
            "--artifact-dir",
            str(tmp_path),
        ]
    )
    text = capsys.readouterr().out
    assert "Transformer held-out accuracy:" in text and "fastText-style held-out accuracy:" in text
    assert (
        "Transformer wall time:" in text and "Total wall time:" in text and text.count("=== Item 2 ===") == 2
    )
    assert set(out) == {"transformer", "fasttext", "seconds"}
    assert 0 <= out["transformer"]["accuracy"] <= 100 and (tmp_path / "model.bpk").is_file()
    assert ExperimentConfig.load(tmp_path / "config.json").recipe == "ember"
    fasttext_dir = tmp_path.parent / (tmp_path.name + "-fasttext")
    config = json.loads((fasttext_dir / "config.json").read_text())
    # the shared flags (--epochs, --d-model) set the Transformer only; --buckets the fastText model
    assert config["model"] == "fasttext" and config["buckets"] == 1024 and config["d_model"] == 64
    assert config["num_epochs"] == 8 and out["fasttext"]["accuracy"] > 50


def test_demo_one_model(tmp_path, capsys):
    out = demo.main(
        [
            "--model",
            "fasttext",
            "--source",
            "synthetic",
            "--buckets",
            "1024",
            "--epochs",
            "1",
            "--d-model",
            "8",
            "--artifact-dir",
            str(tmp_path),
        ]
    )
    assert set(out) == {"fasttext", "seconds"} and "Transformer" not in capsys.readouterr().out
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model"] == "fasttext" and config["num_epochs"] == 1 and config["d_model"] == 8


# ---------------------------------------------------------------------------------- --model fasttext
FASTTEXT_TINY = [
    "--model",
    "fasttext",
    "--source",
    "synthetic",
    "--buckets",
    "2048",
    "--epochs",
    "2",
    "--num-workers",
    "0",
]


def test_fasttext_through_the_scripts(tmp_path, capsys):
    run = tmp_path / "run"
    result = db_pedia_train.main(FASTTEXT_TINY + ["--artifact-dir", str(run), "--lr", "0.1"])
    assert result.epochs_trained == 2 and (run / "model.bpk").is_file()
    assert (run / "checkpoint" / "model-2.bpk").is_file() and (
        run / "valid" / "epoch-2" / "Accuracy.log"
    ).is_file()
    config = json.loads((run / "config.json").read_text())
    assert config["model"] == "fasttext" and config["lr"] == 0.1 and config["buckets"] == 2048
    assert config["recipe"] == "ember"
    capsys.readouterr()
    predictions = db_pedia_infer.main(["--model", "fasttext", "--artifact-dir", str(run)])
    text = capsys.readouterr().out
    assert len(predictions) == 3 and text.count("=== Item") == 3 and "- Prediction: " in text
    assert all(abs(sum(p.probabilities) - 1) < 1e-4 for p in predictions)
    # without --model, config.json decides
    again = db_pedia_infer.main(["--artifact-dir", str(run), "--text", predictions[0].text])
    assert again[0].probabilities == pytest.approx(predictions[0].probabilities, abs=1e-6)
    with pytest.raises(ArtifactError, match="holds a fasttext run"):
        db_pedia_infer.main(["--model", "transformer", "--artifact-dir", str(run)])
    capsys.readouterr()
    accuracy = db_pedia_infer.main(["--artifact-dir", str(run), "--evaluate", "--source", "synthetic"])
    assert f"accuracy {accuracy:.2f}% over the" in capsys.readouterr().out and accuracy > 50


def test_evaluate_scores_the_whole_test_split(dbpedia_run, capsys, usage_error):
    accuracy = db_pedia_infer.main(
        ["--artifact-dir", str(dbpedia_run), "--evaluate", "--source", "synthetic"]
    )
    out = capsys.readouterr().out
    test_rows = len(DbPediaDataset.from_source("synthetic", "test", seed=flags.DEFAULT_SEED))
    assert f"over the {test_rows:,} rows of the test split (synthetic)" in out and 0 <= accuracy <= 100
    argv = ["--artifact-dir", str(dbpedia_run), "--evaluate", "--source", "local"]
    assert "--data-dir" in usage_error(db_pedia_infer.main, argv)


def test_fasttext_default_artifact_dir():
    assert flags.model_artifact_dir(db_pedia_train.ARTIFACT_DIR, "transformer") == db_pedia_train.ARTIFACT_DIR
    assert (
        flags.model_artifact_dir(db_pedia_train.ARTIFACT_DIR, "fasttext")
        == db_pedia_train.ARTIFACT_DIR + "-fasttext"
    )
    parser = flags.training_parser("t", db_pedia_train.ARTIFACT_DIR)
    args = parser.parse_args(["--model", "fasttext"])
    flags.resolve_model_flags(parser, args, db_pedia_train.ARTIFACT_DIR)
    assert args.artifact_dir.endswith("-fasttext") and args.recipe == "ember"
    config = from_flags.build_fasttext_config(args, AgNewsDataset)
    assert config.buckets == 2**21 and config.d_model == 16  # AG News's preset, not DbPedia's


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "fasttext", "--seq-length", "64"], "--seq-length: not a setting of --model fasttext"),
        (["--model", "fasttext", "--pooling", "mean", "--n-layers", "2"], "--n-layers"),
        (["--model", "fasttext", "--recipe", "burn"], "Burn's example has no fastText-style model"),
        (["--model", "fasttext", "--token-dropout", "0.1"], "--token-dropout: not a setting"),
        (["--model", "fasttext", "--lr-schedule", "cosine"], "linear or constant"),
        (["--buckets", "1024"], "--buckets: not a setting of --model transformer"),
        (["--lr-schedule", "linear"], "noam, cosine and constant"),
    ],
)
def test_flags_of_the_other_model_are_refused(argv, message, usage_error):
    assert message in usage_error(db_pedia_train.main, argv + ["--source", "synthetic"])


def test_finetune_refuses_fasttext(usage_error):
    err = usage_error(ag_news_finetune.main, ["--model", "fasttext", "--source", "synthetic"])
    assert "LoRA fine-tuning does not apply" in err
