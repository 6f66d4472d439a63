"""ember.toml (``ember.config``): where the file is looked for, the environment overriding it,
paths relative to the file, every error, ``python -m ember.config``, and each setting taking
effect where ember reads it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ember import config
from ember.config import ConfigError
from ember.data.huggingface import default_cache_dir
from ember.distributed.environment import timeout_from_env
from ember.train.renderer import CliMetricsRenderer, default_renderer

_VARIABLES = [config.CONFIG_VARIABLE, *(s.env for s in config.SETTINGS)]


@pytest.fixture
def work(tmp_path, monkeypatch):
    """An empty working directory ``tmp/project/work``, no ember variable set; the file is
    looked up afresh, and again once the test is over."""
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)
    directory = tmp_path / "project" / "work"
    directory.mkdir(parents=True)
    monkeypatch.chdir(directory)
    config.reload()
    yield directory
    monkeypatch.undo()
    config.reload()


def write(path: Path, text: str, reload: bool = True) -> Path:
    """Write a configuration file and (unless told not to: an invalid one) read it."""
    path.write_text(text, encoding="utf-8")
    if reload:
        config.reload()
    return path


def error_of(text: str, directory: Path, name: str = "ember.toml") -> str:
    path = write(directory / name, text, reload=False)
    with pytest.raises(ConfigError) as caught:
        config.reload()
    message = str(caught.value)
    assert str(path) in message, message
    return message


# ---- where the file is looked for ----------------------------------------------------------------
def test_defaults_without_a_file(work):
    assert config.config_file().path is None
    for setting in config.SETTINGS:
        resolved = config.resolve(setting.name)
        assert resolved.source == config.DEFAULT and resolved.value == setting.default_value()
    assert config.get("compile.cache_dir") == Path.home() / ".cache" / "ember"


def test_the_working_directory_file_wins_over_a_parent_one(work):
    write(work.parent / "ember.toml", "[threads]\nnum_threads = 2\n")
    assert config.get("threads.num_threads") == 2
    assert config.resolve("threads.num_threads").source == str(work.parent / "ember.toml")
    write(work / "ember.toml", "[threads]\nnum_threads = 3\n")
    assert config.get("threads.num_threads") == 3


def test_ember_config_names_the_file_whatever_the_directory_holds(work, monkeypatch):
    write(work / "ember.toml", "[threads]\nnum_threads = 2\n")
    elsewhere = write(work.parent / "settings.toml", "[threads]\nnum_threads = 5\n")
    monkeypatch.setenv("EMBER_CONFIG", str(elsewhere))
    assert config.reload().path == elsewhere and config.get("threads.num_threads") == 5


def test_pyproject_tool_ember_comes_after_any_ember_toml(work):
    write(work / "pyproject.toml", "[project]\nname = 'x'\n\n[tool.ember.threads]\nnum_threads = 4\n")
    assert config.get("threads.num_threads") == 4
    assert config.config_file().path == work / "pyproject.toml"
    write(work.parent / "ember.toml", "[threads]\nnum_threads = 6\n")
    assert config.get("threads.num_threads") == 6


def test_the_nearest_pyproject_without_the_table_means_defaults(work):
    write(work.parent / "pyproject.toml", "[tool.ember.threads]\nnum_threads = 4\n")
    write(work / "pyproject.toml", "[project]\nname = 'inner'\n")
    assert config.config_file().path is None and config.get("threads.num_threads") is None


def test_the_file_is_read_once_until_reload(work):
    path = write(work / "ember.toml", "[threads]\nnum_threads = 2\n")
    path.write_text("[threads]\nnum_threads = 3\n")
    assert config.get("threads.num_threads") == 2
    config.reload()
    assert config.get("threads.num_threads") == 3


# ---- the environment, and paths -------------------------------------------------------------------
def test_the_environment_overrides_the_file(work, monkeypatch):
    write(work / "ember.toml", "[threads]\nnum_threads = 2\n[train]\nrenderer = 'tui'\n")
    monkeypatch.setenv("EMBER_NUM_THREADS", "7")
    monkeypatch.setenv("EMBER_RENDERER", "CLI")
    assert config.resolve("threads.num_threads").source == "EMBER_NUM_THREADS"
    assert config.get("threads.num_threads") == 7 and config.get("train.renderer") == "cli"
    monkeypatch.setenv("EMBER_NUM_THREADS", "")  # empty: unset
    assert config.get("threads.num_threads") == 2


def test_paths_in_a_file_are_relative_to_its_directory(work, monkeypatch):
    write(work.parent / "ember.toml", "[compile]\ncache_dir = 'cache'\n[data]\ndataset_cache = '~/sets'\n")
    assert config.get("compile.cache_dir") == work.parent / "cache"
    assert config.get("data.dataset_cache") == Path.home() / "sets"
    monkeypatch.setenv("EMBER_CACHE_DIR", "relative/here")  # a variable: as given, from the cwd
    assert config.get("compile.cache_dir") == Path("relative/here")


# ---- every error -----------------------------------------------------------------------------------
def test_an_unknown_section_is_an_error_naming_the_accepted_ones(work):
    message = error_of('[profiler]\nlevel = "full"\n', work)
    assert "unknown section [profiler]" in message
    for section in {s.section for s in config.SETTINGS}:
        assert f"[{section}]" in message


def test_the_reserved_autotune_section_is_checked_like_any_other(work, monkeypatch):
    assert config.get("autotune.level") == "balanced" and config.get("autotune.cache") == "user"
    write(work / "ember.toml", '[autotune]\nlevel = "Full"\ncache = "tuning"\n')
    assert config.get("autotune.level") == "full"
    assert config.get("autotune.cache") == work / "tuning"  # a path: relative to the file
    monkeypatch.setenv("EMBER_AUTOTUNE_CACHE", "OFF")
    monkeypatch.setenv("EMBER_AUTOTUNE_LEVEL", "minimal")
    assert config.get("autotune.cache") == "off" and config.get("autotune.level") == "minimal"
    monkeypatch.setenv("EMBER_AUTOTUNE_LEVEL", "fastest")
    with pytest.raises(ConfigError, match="EMBER_AUTOTUNE_LEVEL"):
        config.get("autotune.level")


def test_a_misspelt_section_or_key_gets_a_suggestion(work):
    assert "did you mean [threads]?" in error_of("[thread]\nnum_threads = 2\n", work)
    message = error_of("[threads]\nnum_thread = 2\n", work)
    assert "unknown key threads.num_thread (did you mean threads.num_threads?)" in message
    assert "accepted keys of [threads]: num_threads, gemm_pool" in message


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            '[threads]\nnum_threads = "4"',
            'threads.num_threads = "4": threads.num_threads must be a positive integer',
        ),
        ("[threads]\nnum_threads = 0", "threads.num_threads must be a positive integer"),
        (
            "[threads]\nnum_threads = true",
            "threads.num_threads = true: threads.num_threads must be a positive",
        ),
        (
            '[threads]\ngemm_pool = "yes"',
            'threads.gemm_pool = "yes": threads.gemm_pool must be true or false',
        ),
        ("[compile]\ncache_dir = 3", "compile.cache_dir = 3: compile.cache_dir must be a path"),
        ("[compile]\nbackground = 1", "compile.background = 1: compile.background must be true or false"),
        ('[train]\nrenderer = "fancy"', "train.renderer must be 'cli', 'tui' or 'auto'"),
        (
            "[distributed]\ntimeout = -1.5",
            "distributed.timeout = -1.5: distributed.timeout must be a positive",
        ),
        ("[distributed]\ntimeout = [1]", "distributed.timeout = [1]"),
        ("threads = 4", "threads = 4: threads must be a table"),
        (
            '[autotune]\nlevel = "fast"',
            "autotune.level must be 'minimal', 'balanced', 'extensive' or 'full'",
        ),
        (
            "[autotune]\ncache = 1",
            "autotune.cache = 1: autotune.cache must be 'user', 'project', 'off' or a path",
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_an_error(work, entry, expected):
    assert expected in error_of(entry + "\n", work)


def test_a_wrong_value_in_pyproject_is_named_with_its_table(work):
    message = error_of("[tool.ember.threads]\nnum_threads = -1\n", work, "pyproject.toml")
    assert "tool.ember.threads.num_threads = -1" in message
    assert "[tool.ember.compile]" in error_of("[tool.ember.compiler]\n", work, "pyproject.toml")


def test_invalid_toml_names_the_line(work):
    message = error_of("[threads]\nnum_threads = 2\ngemm_pool = \n", work)
    assert "invalid TOML" in message and "line 3" in message


def test_ember_config_naming_no_file_is_an_error(work, monkeypatch):
    monkeypatch.setenv("EMBER_CONFIG", "missing.toml")
    with pytest.raises(ConfigError, match="EMBER_CONFIG='missing.toml': no such file"):
        config.reload()


def test_a_bad_environment_value_names_the_variable(work, monkeypatch):
    monkeypatch.setenv("EMBER_GEMM_POOL", "maybe")
    with pytest.raises(
        ValueError, match=r"EMBER_GEMM_POOL='maybe': EMBER_GEMM_POOL must be 0 or 1.*threads\.gemm_pool"
    ):
        config.get("threads.gemm_pool")
    monkeypatch.setenv("EMBER_DISTRIBUTED_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="EMBER_DISTRIBUTED_TIMEOUT='soon'.*positive number of seconds"):
        timeout_from_env()


def test_an_invalid_file_is_reported_even_where_the_environment_overrides(work, monkeypatch):
    write(work / "ember.toml", "[threads]\nnum_threads = 'all'\n", reload=False)
    monkeypatch.setenv("EMBER_NUM_THREADS", "2")
    for read in (config.reload, lambda: config.get("threads.num_threads")):
        with pytest.raises(ConfigError, match='threads.num_threads = "all"'):
            read()


# ---- python -m ember.config ------------------------------------------------------------------------
def run_cli(directory: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in _VARIABLES}
    return subprocess.run(
        [sys.executable, "-m", "ember.config", *args],
        cwd=directory,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_command_prints_each_value_and_its_source(work):
    path = write(work / "ember.toml", "[threads]\nnum_threads = 2\n[train]\nrenderer = 'cli'\n")
    shown = run_cli(work, EMBER_RENDERER="tui")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"configuration file: {path}"
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert set(rows) == {s.name for s in config.SETTINGS}
    assert rows["threads.num_threads"] == ["threads.num_threads", "2", str(path), "EMBER_NUM_THREADS"]
    assert rows["train.renderer"][1:3] == ['"tui"', "EMBER_RENDERER"]
    assert rows["threads.gemm_pool"][1:3] == ["true", "default"]
    # the columns line up
    assert len({line.rindex(" EMBER_") for line in lines[2:]}) == 1

    as_json = json.loads(run_cli(work, "--json").stdout)
    assert as_json["file"] == str(path)
    by_name = {row["setting"]: row for row in as_json["settings"]}
    assert by_name["threads.num_threads"]["value"] == 2 and by_name["threads.num_threads"]["source"] == str(
        path
    )
    assert by_name["data.dataset_cache"] == {
        "setting": "data.dataset_cache",
        "value": None,
        "source": "default",
        "variable": "EMBER_DATASET_CACHE",
        "doc": config.SETTINGS_BY_NAME["data.dataset_cache"].doc,
    }


def test_the_command_exits_1_on_an_invalid_file(work):
    write(work / "ember.toml", "[threads]\ngemm_pool = 'no'\n", reload=False)
    failed = run_cli(work)
    assert failed.returncode == 1 and failed.stdout == ""
    assert "threads.gemm_pool must be true or false" in failed.stderr


# ---- each setting takes effect where ember reads it ------------------------------------------------
def test_cache_paths_follow_the_file(work):
    write(work / "ember.toml", "[compile]\ncache_dir = 'cache'\n")
    from ember.kernels.cpu import jit  # Numba: only for this test

    assert jit.cache_dir() == work / "cache" / "numba" / "kernels"
    assert default_cache_dir() == work / "cache" / "datasets"
    write(work / "ember.toml", "[compile]\ncache_dir = 'cache'\n[data]\ndataset_cache = 'sets'\n")
    assert default_cache_dir() == work / "sets"


def test_renderer_and_timeout_follow_the_file(work):
    write(work / "ember.toml", "[train]\nrenderer = 'cli'\n[distributed]\ntimeout = 12\n")
    assert isinstance(default_renderer(io.StringIO()), CliMetricsRenderer)
    assert timeout_from_env() == 12.0
    write(work / "ember.toml", "")
    assert timeout_from_env(default=40) == 40.0


_EFFECTS = """
import json
import threadpoolctl
from ember.kernels import host_memory, threads
from ember.kernels.cpu import background_compile, gemm, jit
import numba

threads.apply_blas_threads()
blas = [pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"]
print(json.dumps({
    "numba_threads": numba.config.NUMBA_NUM_THREADS,
    "blas_threads": sorted(set(blas)),
    "gemm_pool": gemm._setup().available,
    "malloc_tuned": host_memory.tune_allocator(),
    "background": background_compile.enabled(),
}))
"""


def test_thread_memory_and_compile_settings_take_effect_from_a_file(work):
    write(
        work / "ember.toml",
        "[threads]\nnum_threads = 1\ngemm_pool = false\n[memory]\nmalloc_tuning = false\n"
        "[compile]\nbackground = false\n",
    )
    thread_variables = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    clean = {k: v for k, v in os.environ.items() if k not in (*_VARIABLES, *thread_variables)}
    ran = subprocess.run(
        [sys.executable, "-c", _EFFECTS], cwd=work, env=clean, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout.splitlines()[-1]) == {
        "numba_threads": 1,
        "blas_threads": [1],
        "gemm_pool": False,
        "malloc_tuned": False,
        "background": False,
    }
