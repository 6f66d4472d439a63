"""HuggingfaceDatasetLoader without a reachable Hub: fails fast with the remedies, honours the
offline variables, falls back to the datasets cache. Never reaches the real network: a guard
refuses every non-loopback connection, and the Hub is simulated on 127.0.0.1."""

from __future__ import annotations

import http.server
import socket
import threading
import time

import pytest

from ember.data import DatasetUnavailableError, HuggingfaceDatasetLoader, SqliteDataset

datasets = pytest.importorskip("datasets")
hub_constants = pytest.importorskip("huggingface_hub.constants")

OFFLINE_VARS = ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


@pytest.fixture(autouse=True)
def no_real_network(monkeypatch):
    """Refuse connections to anything but loopback, and start with no offline variables."""
    original = socket.socket.connect

    def guarded(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
            if host not in ("127.0.0.1", "::1", "localhost"):
                raise AssertionError(f"test tried to reach the network: {address}")
        return original(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    for name in OFFLINE_VARS:
        monkeypatch.delenv(name, raising=False)


class ClosingServer:
    """Accepts TCP connections and closes them at once (a Hub that never answers); counts them."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.connections = 0
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


class NotFoundHub:
    """A loopback HTTP server answering 404 to everything (a reachable Hub); counts requests."""

    def __init__(self) -> None:
        counter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server API
                counter.requests.append(self.path)
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.requests: list[str] = []
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def closing_server():
    server = ClosingServer()
    yield server
    server.close()


def refused_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now: connection refused
    return f"http://127.0.0.1:{port}"


def hub_loader(tmp_path, name="someone/not-cached"):
    return (
        HuggingfaceDatasetLoader(name)
        .with_base_dir(tmp_path / "ember-cache")
        .with_huggingface_cache_dir(tmp_path / "hf-cache")
        .with_hub_timeout(2.0)
    )


def assert_names_remedies(message: str, loader: HuggingfaceDatasetLoader) -> None:
    assert "HuggingfaceDatasetLoader('/path/to/dir_or_file')" in message  # a local path
    assert "HF_DATASETS_OFFLINE" in message and "HF_HUB_OFFLINE" in message
    assert str(loader.db_file_path()) in message  # where a converted file would be used
    assert "with_base_dir" in message and "with_huggingface_cache_dir" in message


def test_unreachable_hub_fails_fast_with_remedies(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", refused_url())
    loader = hub_loader(tmp_path)
    start = time.monotonic()
    with pytest.raises(DatasetUnavailableError) as info:
        loader.dataset("train")
    elapsed = time.monotonic() - start
    # datasets alone retries for ~25 s here; the loader must give up in seconds
    assert elapsed < 15, f"took {elapsed:.1f} s"
    message = str(info.value)
    assert "someone/not-cached" in message and "unreachable" in message
    assert_names_remedies(message, loader)
    assert not loader.db_file_path().exists()


def test_unreachable_hub_is_asked_exactly_once(tmp_path, monkeypatch, closing_server):
    monkeypatch.setenv("HF_ENDPOINT", closing_server.url)
    with pytest.raises(DatasetUnavailableError, match="unreachable"):
        hub_loader(tmp_path).db_file()
    assert closing_server.connections == 1  # the probe; no retries, nothing from datasets


@pytest.mark.parametrize("variable", ["HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"])
def test_offline_variables_skip_the_network(tmp_path, monkeypatch, closing_server, variable):
    monkeypatch.setenv("HF_ENDPOINT", closing_server.url)
    monkeypatch.setenv(variable, "1")
    loader = hub_loader(tmp_path)
    with pytest.raises(DatasetUnavailableError) as info:
        loader.dataset("train")
    message = str(info.value)
    assert f"offline mode is on ({variable}=1)" in message and "not in the datasets cache" in message
    assert_names_remedies(message, loader)
    assert closing_server.connections == 0


def test_hf_datasets_offline_zero_overrides_hub_offline(tmp_path, monkeypatch, closing_server):
    # Same precedence as `datasets`: HF_DATASETS_OFFLINE, when set, decides.
    monkeypatch.setenv("HF_ENDPOINT", closing_server.url)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    with pytest.raises(DatasetUnavailableError, match="unreachable"):
        hub_loader(tmp_path).db_file()
    assert closing_server.connections == 1


def fake_load_dataset(calls):
    def load_dataset(path, **kwargs):
        calls.append(
            {
                "path": path,
                "kwargs": kwargs,
                "datasets_offline": datasets.config.HF_HUB_OFFLINE,
                "hub_offline": hub_constants.HF_HUB_OFFLINE,
            }
        )
        return datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": ["cached"], "label": [2]})})

    return load_dataset


def test_unreachable_hub_falls_back_to_datasets_cache_offline(tmp_path, monkeypatch, closing_server):
    monkeypatch.setenv("HF_ENDPOINT", closing_server.url)
    calls: list = []
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset(calls))
    before = (datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE)
    loader = hub_loader(tmp_path, "someone/cached").with_subset("default")
    train = loader.dataset("train")
    assert train[0] == {"text": "cached", "label": 2}
    assert len(calls) == 1 and calls[0]["datasets_offline"] and calls[0]["hub_offline"]
    assert calls[0]["path"] == "someone/cached" and calls[0]["kwargs"]["name"] == "default"
    assert calls[0]["kwargs"]["cache_dir"] == str(tmp_path / "hf-cache")
    assert before == (datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE)  # restored
    # the next run uses the SQLite file: no probe, no datasets
    monkeypatch.setattr(datasets, "load_dataset", None)
    assert (
        SqliteDataset(hub_loader(tmp_path, "someone/cached").with_subset("default").db_file(), "train")[0][
            "label"
        ]
        == 2
    )
    assert closing_server.connections == 1


def test_reachable_hub_loads_online(tmp_path, monkeypatch):
    hub = NotFoundHub()
    try:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        calls: list = []
        monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset(calls))
        db = hub_loader(tmp_path, "someone/online").with_revision("v1").db_file()
        assert hub.requests == ["/api/datasets/someone/online"]
        assert len(calls) == 1 and not calls[0]["datasets_offline"] and not calls[0]["hub_offline"]
        assert calls[0]["kwargs"]["revision"] == "v1"
        assert "someone--online" in db.name and "@v1" in db.name
    finally:
        hub.close()


def test_existing_sqlite_file_needs_no_hub(tmp_path, monkeypatch, closing_server):
    monkeypatch.setenv("HF_ENDPOINT", closing_server.url)
    loader = hub_loader(tmp_path, "fancyzhx/ag_news")
    path = loader.db_file_path()
    path.parent.mkdir(parents=True)
    import sqlite3

    with sqlite3.connect(path) as conn:  # e.g. copied from another machine, or made by Burn
        conn.execute("CREATE TABLE train (row_id INTEGER PRIMARY KEY, text TEXT, label INTEGER)")
        conn.execute("INSERT INTO train VALUES (1, 'copied', 1)")
    assert loader.dataset("train")[0] == {"text": "copied", "label": 1}
    assert closing_server.connections == 0


def test_default_cache_dir_follows_environment(tmp_path, monkeypatch):
    from ember.data import default_cache_dir

    monkeypatch.delenv("EMBER_DATASET_CACHE", raising=False)
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "ember"))
    assert default_cache_dir() == tmp_path / "ember" / "datasets"
    monkeypatch.setenv("EMBER_DATASET_CACHE", str(tmp_path / "sqlite"))
    assert default_cache_dir() == tmp_path / "sqlite"
    assert HuggingfaceDatasetLoader("a/b").db_file_path() == tmp_path / "sqlite" / "a--b.db"


# -- header-less CSV files (the classic AG News / DbPedia releases) -----------------------------

AG_TRAIN = (
    '"3","Wall St. Bears Claw Back","Reuters - Short-sellers, Wall Street\'s dwindling band"\n'
    '"4","Carlyle Looks Toward","Private investment firm Carlyle Group"\n'
    '"2","Oil and Economy","Soaring crude prices plus worries"\n'
)
AG_TEST = (
    '"1","Fears for T N pension","Unions representing workers at Turner"\n'
    '"4","The Race is On","SPACE.com - TORONTO, Canada"\n'
)
AG_COLUMNS = ["label", "title", "text"]


def headerless_csv_dir(tmp_path):
    folder = tmp_path / "ag_news_csv"
    folder.mkdir()
    (folder / "train.csv").write_text(AG_TRAIN)
    (folder / "test.csv").write_text(AG_TEST)
    (folder / "classes.txt").write_text("World\nSports\nBusiness\nSci/Tech\n")  # as in the release
    return folder


def local_loader(tmp_path, name):
    return (
        HuggingfaceDatasetLoader(name)
        .with_base_dir(tmp_path / "ember-cache")
        .with_huggingface_cache_dir(tmp_path / "hf-cache")
    )


def test_headerless_csv_directory_reads_with_column_names(tmp_path):
    folder = headerless_csv_dir(tmp_path)
    loader = local_loader(tmp_path, folder).with_column_names(AG_COLUMNS)
    assert sorted(loader.splits()) == ["test", "train"]
    train, test = loader.dataset("train"), loader.dataset("test")
    assert len(train) == 3 and len(test) == 2  # the first row is data, not a header
    assert train[0] == {
        "label": 3,
        "title": "Wall St. Bears Claw Back",
        "text": "Reuters - Short-sellers, Wall Street's dwindling band",
    }
    assert test[1]["label"] == 4 and test[1]["title"] == "The Race is On"
    # other names are another dataset: another SQLite file
    renamed = local_loader(tmp_path, folder).with_column_names(["y", "t", "x"])
    assert renamed.db_file_path() != loader.db_file_path()
    single = local_loader(tmp_path, folder / "test.csv").with_column_names(AG_COLUMNS)
    assert single.splits() == ["train"] and single.dataset("train")[0]["text"].startswith("Unions")


def test_headerless_csv_without_names_says_to_give_them(tmp_path):
    folder = headerless_csv_dir(tmp_path)
    (folder / "classes.txt").unlink()
    with pytest.raises(DatasetUnavailableError) as info:
        local_loader(tmp_path, folder).db_file()
    message = str(info.value)
    assert str(folder) in message and "from local files" in message and "CastError" in message
    assert ".with_column_names(['label', 'title', 'text'])" in message and "header row" in message


def test_column_names_must_match_the_fields_of_each_row(tmp_path):
    folder = headerless_csv_dir(tmp_path)
    two = local_loader(tmp_path, folder).with_column_names(["label", "text"])
    with pytest.raises(DatasetUnavailableError, match=r"train\.csv have 3 fields .* but 2 column"):
        two.db_file()
    four = local_loader(tmp_path, folder / "test.csv").with_column_names(AG_COLUMNS + ["extra"])
    with pytest.raises(DatasetUnavailableError, match=r"3 fields .* but 4 column names"):
        four.db_file()


def test_missing_data_files_and_bad_column_names_are_reported(tmp_path):
    missing = tmp_path / "nowhere" / "train.csv"
    loader = local_loader(tmp_path, "csv").with_data_files({"train": str(missing)})
    with pytest.raises(DatasetUnavailableError, match=r"not found: \[.*nowhere/train\.csv'\]"):
        loader.db_file()
    loader = HuggingfaceDatasetLoader("csv")
    with pytest.raises(TypeError, match="list of names"):
        loader.with_column_names("label,title,text")
    with pytest.raises(ValueError, match="non-empty string"):
        loader.with_column_names(["label", ""])
    with pytest.raises(ValueError, match=r"repeated names \['a'\]"):
        loader.with_column_names(["a", "b", "a"])
    json_file = tmp_path / "rows.jsonl"
    json_file.write_text('{"a": 1}\n')
    with pytest.raises(ValueError, match="applies to CSV files"):
        local_loader(tmp_path, json_file).with_column_names(["a"]).db_file()
