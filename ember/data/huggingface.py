"""`HuggingfaceDatasetLoader`: load a dataset with the `datasets` library, once, into an
SQLite file (Burn's `HuggingfaceDatasetLoader`).

The first call loads every split through `datasets` (from the Hub, from its local cache, or
from local parquet/CSV/JSON files) and writes them into one SQLite file, a table per split,
under the ember dataset cache. Later calls find that file and use it without importing
`datasets` or touching the network.

CSV files without a header row (the classic AG News and DbPedia releases: `class,title,text`)
are read with the column names given to `with_column_names`. Errors of `datasets` (files
whose columns differ, a missing file, rows with another number of fields than names) come
back as `DatasetUnavailableError`, naming the dataset and what to do.

`datasets` is an optional dependency (`pip install 'ember[text]'`), imported only here and
only when a conversion is needed.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ember import config

from .hub import hub_endpoint, hub_mode, offline_variable, probe_hub
from .sqlite import SqliteDataset
from .sqlite_writer import SqliteDatasetWriter

__all__ = [
    "DatasetUnavailableError",
    "HuggingfaceDatasetLoader",
    "default_cache_dir",
    "huggingface_to_sqlite",
]

logger = logging.getLogger("ember.data")

_CACHE_ENV = "EMBER_DATASET_CACHE"
_ARROW_BATCH_ROWS = 8192
# `datasets` features whose decoding needs extra libraries (Pillow, soundfile, ...); their
# encoded bytes are stored instead, as Burn's importer does.
_MEDIA_FEATURES = {"Image", "Audio", "Video", "Pdf", "Nifti"}
# Builders of `datasets` for local files, by file extension.
_BUILDERS = {
    ".parquet": "parquet",
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".txt": "text",
    ".arrow": "arrow",
}


class DatasetUnavailableError(RuntimeError):
    """A dataset could not be loaded (Hub unreachable or offline and nothing cached, the Hub /
    `datasets` refused it, or its files could not be read). The message says what to do."""


def default_cache_dir() -> Path:
    """Where converted SQLite files go: `[data] dataset_cache` of ember.toml
    (`$EMBER_DATASET_CACHE`), else `<cache_dir>/datasets` (`[compile] cache_dir`,
    `$EMBER_CACHE_DIR`, default `~/.cache/ember`); the environment is read on each call."""
    configured = config.get("data.dataset_cache")
    return configured if configured is not None else config.get("compile.cache_dir") / "datasets"


def _import_datasets() -> Any:
    try:
        import datasets  # optional dependency, heavy import
    except ImportError as error:
        raise ImportError(
            "ember.data: loading Hugging Face datasets needs the `datasets` package; install it "
            "with: pip install 'ember[text]'  (or: pip install datasets)"
        ) from error
    return datasets


def _sanitize(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "dataset"


# -- datasets -> SQLite --------------------------------------------------------------------------


def _is_json_text(arrow_type: Any) -> bool:
    # Arrow's canonical JSON extension type (the `Json` feature): JSON documents as text.
    return getattr(arrow_type, "extension_name", None) == "arrow.json"


def _column_kind(arrow_type: Any) -> str:
    import pyarrow as pa  # comes with `datasets`

    types = pa.types
    if _is_json_text(arrow_type):
        return "json"
    storage = getattr(arrow_type, "storage_type", None)  # other extension types
    if storage is not None:
        return _column_kind(storage)
    if types.is_dictionary(arrow_type):
        return _column_kind(arrow_type.value_type)
    if types.is_boolean(arrow_type):
        return "bool"
    if types.is_integer(arrow_type):
        return "int"
    if types.is_floating(arrow_type) or types.is_decimal(arrow_type):
        return "float"
    if types.is_string(arrow_type) or types.is_large_string(arrow_type):
        return "text"
    if (
        types.is_binary(arrow_type)
        or types.is_large_binary(arrow_type)
        or types.is_fixed_size_binary(arrow_type)
    ):
        return "blob"
    if types.is_nested(arrow_type):  # lists, structs, maps
        return "json"
    return "text"  # dates, times, durations, null: stored as their text form


def _prepare_split(dataset: Any) -> Any:
    """Make a split tabular, as Burn's importer does: media columns keep their raw bytes
    (decoding off), struct columns are flattened, and dots in names become underscores."""
    for name, feature in dataset.features.items():
        if type(feature).__name__ in _MEDIA_FEATURES and getattr(feature, "decode", False):
            dataset = dataset.cast_column(name, dataclasses.replace(feature, decode=False))
    dataset = dataset.flatten()
    renames = {name: name.replace(".", "_") for name in dataset.column_names if "." in name}
    if renames:
        dataset = dataset.rename_columns(renames)
    return dataset


def _write_split(writer: SqliteDatasetWriter, split: str, dataset: Any) -> int:
    dataset = _prepare_split(dataset)
    schema = dataset.features.arrow_schema
    names = list(dataset.column_names)
    types = [schema.field(name).type for name in names]
    writer.create_split(split, {name: _column_kind(kind) for name, kind in zip(names, types)})
    json_text = [_is_json_text(kind) for kind in types]
    written = 0
    for table in dataset.with_format("arrow").iter(batch_size=_ARROW_BATCH_ROWS):
        columns = [table.column(name).to_pylist() for name in names]
        for position, is_json in enumerate(json_text):
            if is_json:  # parse, so the store's JSON encoding is not applied twice
                columns[position] = [
                    None if value is None else json.loads(value) for value in columns[position]
                ]
        written += writer.append_rows(split, zip(*columns))
    return written


def huggingface_to_sqlite(
    dataset: Any,
    db_file: str | os.PathLike[str],
    *,
    split: str = "train",
    overwrite: bool = False,
    source: str = "",
) -> Path:
    """Write a `datasets.Dataset` or `datasets.DatasetDict` into an SQLite dataset file.

    Each split becomes a table readable with `SqliteDataset(db_file, split)`. Image and audio
    columns keep their encoded bytes (`<name>_bytes`, `<name>_path`), struct columns are
    flattened into `<name>_<field>` columns, class labels stay integers, and sequences are
    stored as JSON lists.

    Args:
        dataset: a `Dataset` (written as `split`) or a `DatasetDict` (every split written).
        db_file: the file to create (written atomically).
        split: split name for a single `Dataset`.
        overwrite: replace an existing file.
        source: free text recorded in the file (where the data came from).

    Returns:
        The path of the written file.

    Raises:
        TypeError: for streaming (`IterableDataset`) or other unsupported objects.
    """
    datasets = _import_datasets()
    if isinstance(dataset, datasets.DatasetDict):
        splits = dict(dataset)
    elif isinstance(dataset, datasets.Dataset):
        splits = {split: dataset}
    else:
        raise TypeError(
            f"huggingface_to_sqlite: expected datasets.Dataset or datasets.DatasetDict, got "
            f"{type(dataset).__name__} (streaming datasets must be materialised first)"
        )
    with SqliteDatasetWriter(db_file, overwrite=overwrite, source=source) as writer:
        for name, split_dataset in splits.items():
            _write_split(writer, name, split_dataset)
    return Path(db_file)


# -- the loader ----------------------------------------------------------------------------------


class HuggingfaceDatasetLoader:
    """Load a dataset through `datasets` into a cached SQLite file and read its splits.

    `name` is either a Hub dataset id (`"fancyzhx/ag_news"`), a local path (a directory of
    data files, or one parquet/CSV/JSON(L)/text file, which becomes the `"train"` split), or a
    `datasets` builder name such as `"csv"` combined with `with_data_files(...)`.

    Offline behaviour: `HF_DATASETS_OFFLINE` / `HF_HUB_OFFLINE`, as set when the load runs,
    make it use only local caches. Otherwise the Hub is asked once with a short timeout
    (`with_hub_timeout`); if it does not answer, the loader falls back to the `datasets` cache
    in offline mode, and without a cached copy fails at once with `DatasetUnavailableError`
    saying what to do. `HF_ENDPOINT` and `HF_HOME` are read by `datasets` when it is first
    imported.

    Args:
        name: Hub dataset id, local path, or builder name.
        subset: the dataset configuration ("subset" on the Hub), if it has several.

    Example:
        >>> train = HuggingfaceDatasetLoader("fancyzhx/ag_news").dataset("train")
        >>> train[0]["text"], train[0]["label"]
    """

    def __init__(self, name: str, subset: str | None = None) -> None:
        if not isinstance(name, (str, os.PathLike)) or not os.fspath(name):
            raise ValueError(f"HuggingfaceDatasetLoader: name must be a non-empty string, got {name!r}")
        self._name = os.fspath(name)
        self._subset = subset
        self._base_dir: Path | None = None
        self._hf_cache_dir: str | None = None
        self._token: str | None = None
        self._data_files: Any = None
        self._revision: str | None = None
        self._hub_timeout = 5.0
        self._column_names: list[str] | None = None

    # -- configuration (each returns the loader, Burn-style) ----------------------------------

    def with_subset(self, subset: str) -> "HuggingfaceDatasetLoader":
        """Choose the dataset configuration ("subset").

        Args:
            subset: the configuration name listed on the dataset page.
        """
        self._subset = subset
        return self

    def with_base_dir(self, base_dir: str | os.PathLike[str]) -> "HuggingfaceDatasetLoader":
        """Directory of the SQLite files (default: `default_cache_dir()`).

        Args:
            base_dir: the directory (created when needed).
        """
        self._base_dir = Path(base_dir).expanduser()
        return self

    def with_huggingface_cache_dir(self, cache_dir: str | os.PathLike[str]) -> "HuggingfaceDatasetLoader":
        """The `datasets` download/cache directory (default: its own, under `HF_HOME`).

        Args:
            cache_dir: the directory passed as `cache_dir` to `datasets.load_dataset`.
        """
        self._hf_cache_dir = os.fspath(Path(cache_dir).expanduser())
        return self

    def with_huggingface_token(self, token: str) -> "HuggingfaceDatasetLoader":
        """Access token for private or gated datasets.

        Args:
            token: a Hugging Face token.
        """
        self._token = token
        return self

    def with_data_files(
        self, data_files: str | Sequence[str] | Mapping[str, Any]
    ) -> "HuggingfaceDatasetLoader":
        """Data files to load, as `datasets.load_dataset(data_files=...)` takes them: a path,
        a list of paths, or `{split: path(s)}`.

        Args:
            data_files: the files; local files are fingerprinted so edits trigger a re-import.
        """
        self._data_files = data_files
        return self

    def with_column_names(self, names: Sequence[str]) -> "HuggingfaceDatasetLoader":
        """Read CSV files that have no header row (the classic AG News and DbPedia releases,
        `class,title,text`) into these columns; every row, the first included, is data.

        The names go to the CSV builder of `datasets` as `column_names`. Each row must have
        exactly one field per name (checked on local files before loading).

        Args:
            names: one distinct, non-empty name per field, e.g. `["label", "title", "text"]`.
        """
        if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
            raise TypeError(
                f"HuggingfaceDatasetLoader.with_column_names: expected a list of names, got {names!r}"
            )
        names = list(names)
        if not names or any(not isinstance(n, str) or not n for n in names):
            raise ValueError(
                "HuggingfaceDatasetLoader.with_column_names: expected one non-empty string per "
                f"column, got {names!r}"
            )
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(
                f"HuggingfaceDatasetLoader.with_column_names: repeated names {repeated} in {names!r}"
            )
        self._column_names = names
        return self

    def with_revision(self, revision: str) -> "HuggingfaceDatasetLoader":
        """A Hub revision (branch, tag or commit) to load.

        Args:
            revision: the revision name.
        """
        self._revision = revision
        return self

    def with_hub_timeout(self, seconds: float) -> "HuggingfaceDatasetLoader":
        """How long the reachability check may wait for the Hub (default 5 s).

        Args:
            seconds: > 0.
        """
        if not seconds > 0:
            raise ValueError(f"HuggingfaceDatasetLoader.with_hub_timeout: must be > 0, got {seconds!r}")
        self._hub_timeout = float(seconds)
        return self

    # -- paths ---------------------------------------------------------------------------------

    def _local_path(self) -> Path | None:
        path = Path(self._name).expanduser()
        return path if path.exists() else None

    def base_dir(self) -> Path:
        """The directory holding the SQLite files."""
        return self._base_dir if self._base_dir is not None else default_cache_dir()

    def db_file_path(self) -> Path:
        """Where the SQLite file for this configuration lives (it may not exist yet)."""
        local = self._local_path()
        if local is not None:
            stem = f"local-{_sanitize(local.resolve().name)}"
            parts = [str(local.resolve()), *self._fingerprint_paths([local])]
        else:
            stem = _sanitize(self._name.replace("/", "--"))
            parts = []
        if self._subset:
            stem += f"-{_sanitize(self._subset)}"
        if self._revision:
            stem += f"@{_sanitize(self._revision)}"
        if self._data_files is not None:
            parts.append(repr(self._data_files))
            parts.extend(self._fingerprint_paths(Path(p) for p in _flatten_files(self._data_files)))
        if self._column_names is not None:
            parts.append("column_names=" + json.dumps(self._column_names))
        if parts:
            stem += "-" + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]
        return self.base_dir() / f"{stem}.db"

    @staticmethod
    def _fingerprint_paths(paths: Any) -> list[str]:
        # Path, size and modification time of every local file involved, so that changed
        # local data gets a new SQLite file instead of a stale one.
        entries = []
        for path in paths:
            path = Path(path).expanduser()
            if path.is_dir():
                files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
            elif path.is_file():
                files = [path]
            else:
                continue
            for file in files:
                stat = file.stat()
                entries.append(f"{file.resolve()}|{stat.st_size}|{stat.st_mtime_ns}")
        return entries

    # -- loading -------------------------------------------------------------------------------

    def db_file(self) -> Path:
        """The SQLite file with every split, converted now if it does not exist yet.

        Raises:
            DatasetUnavailableError: when the dataset cannot be obtained (see the class doc).
            ImportError: when a conversion is needed and `datasets` is not installed.
        """
        path = self.db_file_path()
        if path.exists():
            try:
                SqliteDataset.splits(path)
                return path
            except Exception as error:  # any unreadable file is rebuilt
                logger.warning("ember.data: %s is unreadable (%s); importing again", path, error)
        path.parent.mkdir(parents=True, exist_ok=True)
        loaded = self._load()
        huggingface_to_sqlite(loaded, path, overwrite=True, source=self._describe())
        logger.info("ember.data: wrote %s", path)
        return path

    def dataset(self, split: str, columns: Sequence[str] | None = None) -> SqliteDataset:
        """One split, read lazily from the SQLite file (converted first if needed).

        Args:
            split: e.g. `"train"`, `"test"`, `"validation"`.
            columns: the columns to read; `None` for all.
        """
        return SqliteDataset(self.db_file(), split, columns)

    def splits(self) -> list[str]:
        """The split names available (converting first if needed)."""
        return SqliteDataset.splits(self.db_file())

    def _describe(self) -> str:
        text = self._name + (f" ({self._subset})" if self._subset else "")
        return text + (f" @ {self._revision}" if self._revision else "")

    def _load_arguments(self) -> tuple[str, dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "name": self._subset,
            "cache_dir": self._hf_cache_dir,
            "token": self._token,
            "revision": self._revision,
            "data_files": self._data_files,
            "column_names": self._column_names,
        }
        path = self._name
        local = self._local_path()
        if local is not None and local.is_file():
            builder = _BUILDERS.get(local.suffix.lower())
            if builder is None:
                raise ValueError(
                    f"HuggingfaceDatasetLoader: cannot tell the format of {local} from its "
                    f"extension; expected one of {sorted(_BUILDERS)}, or pass a directory"
                )
            if self._column_names is not None and builder != "csv":
                raise ValueError(
                    f"HuggingfaceDatasetLoader: with_column_names applies to CSV files, but "
                    f"{local} is read as {builder}"
                )
            path, kwargs["data_files"] = builder, {"train": str(local.resolve())}
        elif local is not None and self._column_names is not None and self._data_files is None:
            # `datasets` ignores column_names for a directory: name its CSV files per split
            path, kwargs["data_files"] = "csv", _csv_splits(local.resolve())
        elif local is not None:
            path = str(local.resolve())
        return path, {key: value for key, value in kwargs.items() if value is not None}

    def _load(self) -> Any:
        datasets = _import_datasets()
        path, kwargs = self._load_arguments()
        named_files = _flatten_files(kwargs.get("data_files"))
        local_files = [Path(p).expanduser() for p in named_files]
        missing = [
            p for p in named_files if not _is_remote_or_pattern(p) and not Path(p).expanduser().exists()
        ]
        if path in _BUILDERS.values() and missing:
            raise DatasetUnavailableError(
                f"HuggingfaceDatasetLoader: cannot load {self._describe()!r}: data files not "
                f"found: {missing}; check the paths given to .with_data_files(...) (relative "
                f"ones are read from the current directory, {os.getcwd()})"
            )
        is_local = self._local_path() is not None or (
            path in _BUILDERS.values() and bool(local_files) and all(p.exists() for p in local_files)
        )
        if is_local:
            self._check_field_counts(local_files)
            # Local files: offline mode on, so nothing reaches out to the network.
            return self._load_once(datasets, path, kwargs, offline=True, explain=self._local_message)
        variable = offline_variable()
        if variable is not None:
            reason = f"offline mode is on ({variable}={os.environ[variable]})"
        else:
            endpoint = hub_endpoint()
            problem = probe_hub(endpoint, self._name, self._hub_timeout)
            if problem is None:
                return self._load_once(datasets, path, kwargs, offline=False, explain=self._hub_message)
            reason = f"the Hugging Face Hub at {endpoint} is unreachable: {problem}"
            logger.warning("ember.data: %s; trying the local datasets cache", reason)

        def not_cached(error: BaseException) -> str:
            advice = _advice(error)
            return self._message(
                f"{reason}, and the dataset is not in the datasets cache "
                f"({self._hf_cache_dir or datasets.config.HF_DATASETS_CACHE}): "
                f"{type(error).__name__}: {error}" + (f"\n{advice}" if advice else "")
            )

        return self._load_once(datasets, path, kwargs, offline=True, explain=not_cached)

    def _load_once(
        self,
        datasets: Any,
        path: str,
        kwargs: dict[str, Any],
        *,
        offline: bool,
        explain: Callable[[BaseException], str],
    ) -> Any:
        """One `datasets.load_dataset` call with the Hub on or off; what it raises comes back as
        a `DatasetUnavailableError` whose message `explain` writes (with what to do)."""
        try:
            with hub_mode(offline=offline):
                return self._checked_columns(datasets.load_dataset(path, **kwargs))
        except DatasetUnavailableError:
            raise
        except Exception as error:
            raise DatasetUnavailableError(explain(error)) from error

    def _hub_message(self, error: BaseException) -> str:
        """The message for a load from the reachable Hub that failed: the error, its cause and
        any advice on the data files."""
        advice = _advice(error)
        return self._message(f"{_failure(error)}\n{advice}" if advice else _failure(error))

    def _check_field_counts(self, files: list[Path]) -> None:
        """Before `datasets` runs: each local CSV file's first row has one field per column
        name (pandas would otherwise make extra fields an index, or fill missing ones)."""
        if self._column_names is None:
            return
        expected = len(self._column_names)
        for file in files:
            if file.suffix.lower() != ".csv" or not file.is_file():
                continue
            with open(file, newline="", encoding="utf-8", errors="replace") as handle:
                first = next((row for row in csv.reader(handle) if row), None)
            if first is not None and len(first) != expected:
                shown = [field if len(field) <= 30 else field[:27] + "..." for field in first]
                raise DatasetUnavailableError(
                    f"HuggingfaceDatasetLoader: cannot load {self._describe()!r}: the rows of "
                    f"{file} have {len(first)} fields (first row: {shown}) but {expected} column "
                    f"names were given ({self._column_names}); pass one name per field to "
                    f".with_column_names([...])"
                )

    def _checked_columns(self, loaded: Any) -> Any:
        """The loaded dataset, once every split has exactly the given column names."""
        if self._column_names is None:
            return loaded
        splits = dict(loaded) if isinstance(loaded, Mapping) else {"train": loaded}
        for split, dataset in splits.items():
            columns = list(getattr(dataset, "column_names", None) or [])
            if columns != self._column_names:
                raise DatasetUnavailableError(
                    f"HuggingfaceDatasetLoader: cannot load {self._describe()!r}: split "
                    f"{split!r} was read with columns {columns}, not the column names given "
                    f"({self._column_names}); its rows have another number of fields, so pass "
                    f"one name per field to .with_column_names([...])"
                )
        return loaded

    def _local_message(self, error: BaseException) -> str:
        advice = _advice(error) or (
            "Check that the files are valid parquet, CSV or JSON(L) files (extension, encoding, "
            "delimiter), all with the same columns; a CSV file without a header row needs "
            ".with_column_names([...])."
        )
        return (
            f"HuggingfaceDatasetLoader: cannot load {self._describe()!r} from local files: "
            f"{_failure(error)}\nTo fix this: {advice}"
        )

    def _message(self, problem: str) -> str:
        path = self.db_file_path()
        return (
            f"HuggingfaceDatasetLoader: cannot load {self._describe()!r}: {problem}\n"
            "To fix this, do one of:\n"
            "  - load local files instead: HuggingfaceDatasetLoader('/path/to/dir_or_file') with "
            "parquet, CSV or JSON files, or HuggingfaceDatasetLoader('csv').with_data_files("
            "{'train': 'train.csv'});\n"
            f"  - copy an SQLite file converted earlier to {path} (ember's dataset cache "
            f"directory is {path.parent}; change it with .with_base_dir(...) or "
            f"${_CACHE_ENV});\n"
            "  - use a Hugging Face cache that holds the dataset: .with_huggingface_cache_dir(...) "
            "or HF_HOME, with HF_DATASETS_OFFLINE=1 or HF_HUB_OFFLINE=1 to skip the Hub;\n"
            "  - or restore access to the Hub (check the network, proxy settings, HF_ENDPOINT) "
            "and unset HF_DATASETS_OFFLINE / HF_HUB_OFFLINE."
        )


def _flatten_files(data_files: Any) -> list[str]:
    if isinstance(data_files, (str, os.PathLike)):
        return [os.fspath(data_files)]
    if isinstance(data_files, Mapping):
        return [path for value in data_files.values() for path in _flatten_files(value)]
    if isinstance(data_files, (list, tuple)):
        return [path for value in data_files for path in _flatten_files(value)]
    return []


def _is_remote_or_pattern(path: str) -> bool:
    return "://" in path or any(char in path for char in "*?[")


def _csv_splits(directory: Path) -> dict[str, list[str]]:
    """The CSV files of a directory by split, split names found as `datasets` finds them
    (`train*.csv`, `test*.csv`, ...; all of them form `train` when none is named)."""
    from datasets.data_files import DataFilesDict, get_data_patterns

    patterns = get_data_patterns(str(directory))
    resolved = DataFilesDict.from_patterns(patterns, base_path=str(directory))
    splits = {
        str(split): [f for f in files if str(f).lower().endswith(".csv")] for split, files in resolved.items()
    }
    splits = {split: files for split, files in splits.items() if files}
    if not splits:
        raise DatasetUnavailableError(
            f"HuggingfaceDatasetLoader: with_column_names reads CSV files, and {directory} holds none (*.csv)"
        )
    return splits


def _causes(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def _failure(error: BaseException) -> str:
    """`datasets`' error and its cause (its own message is often only "An error occurred")."""
    text = f"`datasets` failed: {type(error).__name__}: {error}"
    cause = error.__cause__ or error.__context__
    if cause is not None:
        detail = " ".join(str(cause).split())
        detail = detail if len(detail) <= 400 else detail[:400] + "..."
        text += f" ({type(cause).__name__}: {detail})"
    return text


def _advice(error: BaseException) -> str:
    """What to do about the errors `datasets` raises for data files, or "" for others."""
    names = {type(e).__name__ for e in _causes(error)}
    if any("CastError" in name for name in names):
        return (
            "The data files do not all have the same columns. A CSV file without a header row "
            "(such as the classic AG News and DbPedia releases: class,title,text) has its first "
            "row read as column names, so each file gets different ones: name the columns with "
            ".with_column_names(['label', 'title', 'text']). Otherwise give every file of a split "
            "the same header."
        )
    if any(isinstance(e, FileNotFoundError) for e in _causes(error)):
        return (
            "A data file was not found: check the path given to HuggingfaceDatasetLoader(...) "
            "and to .with_data_files(...)."
        )
    return ""
