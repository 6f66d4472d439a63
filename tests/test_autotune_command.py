"""``python -m ember.autotune``: tuning a model ahead of time fills the cache, a second process
measures nothing, and bad input is refused with a message naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ember import nn
from ember.autotune import MODELS, ModelShape, load_shape

_TINY = "d_model = 16\nd_ff = 32\nheads = 2\nlayers = 2\nbatch = 4\nseq = 32\nvocab = 50\n"


def _run(tmp_path, *args, cache=None, log="autotune.log"):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_AUTOTUNE")}
    env.update(
        EMBER_AUTOTUNE_CACHE=cache or str(tmp_path / "cache"),
        EMBER_AUTOTUNE_LOG=str(tmp_path / log),
        EMBER_AUTOTUNE_LOG_LEVEL="basic",
    )
    return subprocess.run(
        [sys.executable, "-m", "ember.autotune", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _tunes(path):
    return [json.loads(line) for line in path.read_text().splitlines() if '"tune"' in line]


def test_a_model_file_is_tuned_once_and_read_back_by_the_next_process(tmp_path):
    (tmp_path / "tiny.toml").write_text(_TINY)
    first = _run(tmp_path, "--model", "tiny.toml", "--random-rows", "1", log="first.log")
    assert first.returncode == 0, first.stderr
    measured = _tunes(tmp_path / "first.log")
    assert measured and all(e["from"] == "measured" for e in measured)
    assert {e["op"] for e in measured} >= {"cpu.matmul", "cpu.attention", "cpu.attention_backward"}
    assert f"{len(measured)} keys measured at balanced" in first.stdout

    second = _run(tmp_path, "--model", "tiny.toml", "--random-rows", "1", log="second.log")
    assert second.returncode == 0, second.stderr
    assert "0 keys measured" in second.stdout
    again = _tunes(tmp_path / "second.log")
    assert {(e["op"], e["key"]) for e in again} == {(e["op"], e["key"]) for e in measured}
    assert all(e["from"] == "cache" for e in again)


def test_fresh_measures_every_key_again_and_the_new_line_wins(tmp_path):
    (tmp_path / "tiny.toml").write_text(_TINY)
    assert _run(tmp_path, "--model", "tiny.toml", "--random-rows", "0", log="first.log").returncode == 0
    again = _run(tmp_path, "--model", "tiny.toml", "--random-rows", "0", "--fresh", log="fresh.log")
    assert again.returncode == 0, again.stderr
    first, fresh = _tunes(tmp_path / "first.log"), _tunes(tmp_path / "fresh.log")
    assert {e["from"] for e in fresh} == {"measured"}
    assert {(e["op"], e["key"]) for e in fresh} == {(e["op"], e["key"]) for e in first}
    third = _run(tmp_path, "--model", "tiny.toml", "--random-rows", "0", log="third.log")
    latest = {(e["op"], e["key"]): e["winner"] for e in fresh}
    assert {(e["op"], e["key"]): e["winner"] for e in _tunes(tmp_path / "third.log")} == latest
    assert "0 keys measured" in third.stdout


def test_built_in_models_and_json_files():
    assert load_shape("agnews") == MODELS["agnews"] and MODELS["dbpedia"].encoder.d_model == 256


def test_a_json_model_file(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(
        json.dumps({"d_model": 8, "d_ff": 16, "heads": 2, "layers": 1, "quiet_softmax": False, "seq": 64})
    )
    shape = load_shape(str(path))
    assert shape == ModelShape(
        nn.TransformerEncoderConfig(8, 16, 2, 1, norm_first=True, quiet_softmax=False), tokens=(32, 64)
    )


@pytest.mark.parametrize(
    "name, text, message",
    [
        (
            "m.toml",
            "d_model = 16\nheads = 2\nlayers = 1\nwidth = 3\n",
            "unknown fields ['width'], missing fields ['d_ff']",
        ),
        ("m.toml", _TINY.replace("heads = 2", "heads = 0"), "heads = 0, expected an int > 0"),
        ("m.toml", _TINY + "quiet_softmax = 1\n", "quiet_softmax = 1, expected a bool"),
        ("m.toml", _TINY + 'dtype = "float13"\n', "float13"),
        ("m.yaml", _TINY, "a model file is .toml or .json"),
    ],
)
def test_bad_model_files_are_named(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises((ValueError, TypeError), match=message.replace("[", r"\[").replace("]", r"\]")):
        load_shape(str(tmp_path / name))


def test_the_command_refuses_an_unknown_model_and_a_cache_that_is_off(tmp_path):
    unknown = _run(tmp_path, "--model", "imagenet")
    assert (
        unknown.returncode == 2 and "neither a built-in model (agnews, dbpedia) nor a file" in unknown.stderr
    )
    off = _run(tmp_path, "--model", "agnews", cache="off")
    assert off.returncode == 2 and "[autotune] cache is 'off'" in off.stderr
