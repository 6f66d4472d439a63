"""Text-classification datasets of the example: AG News and DbPedia (Burn's ``src/data/dataset.rs``).

Every dataset yields :class:`TextClassificationItem` ``(text, label)`` with 0-based labels and
knows its classes through the class methods ``num_classes()`` and ``class_name(label)`` (so a
training script generic over the dataset class can ask before loading anything). Each dataset
loads from four sources, chosen by :meth:`TextClassificationDataset.from_source`:

``hub``
    the Hugging Face Hub (``fancyzhx/ag_news``, ``fancyzhx/dbpedia_14``) through
    :class:`ember.data.HuggingfaceDatasetLoader`: converted once into an SQLite file in ember's
    dataset cache, then read lazily row by row (offline it fails at once, saying what to do).
``local``
    a directory with the classic header-less CSV files ``train.csv`` / ``test.csv`` (rows
    ``class,title,text``, classes 1-based), or the Hub's parquet files
    (``<split>-*.parquet`` / ``<split>.parquet`` anywhere below it; ag_news columns
    ``text,label``, dbpedia_14 columns ``label,title,content``, labels 0-based).
``sample``
    the DbPedia rows shipped in ``data/dbpedia_sample/`` (4,000 train, 1,000 held-out ``test``).
    There is no AG News sample: its licence does not allow redistributing rows.
``synthetic``
    a small generated corpus with class-specific words, deterministic, for tests.

Texts: AG News is ``title + " " + description`` as the Hub's ``text`` column, with the original
files' backslash newline escapes replaced by spaces (for every source, so all sources agree);
DbPedia is ``"Title: {title} - Content: {content}"`` (title and content stripped).

Import scheme of the example: ``examples/`` on ``sys.path``, then
``from text_classification.dataset import AgNewsDataset`` (the example's scripts add
``examples/`` themselves, so they also run from their own directory).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ember.data import Dataset, HuggingfaceDatasetLoader, check_index
from text_classification.synthetic import synthetic_rows

SAMPLE_DIR = Path(__file__).resolve().parent / "data" / "dbpedia_sample"
SOURCES = ("hub", "local", "sample", "synthetic")
SPLITS = ("train", "test")


@dataclass(frozen=True)
class TextClassificationItem:
    """One example: the text and its 0-based class.

    Args:
        text: the input text.
        label: class index in ``[0, num_classes)``.
    """

    text: str
    label: int


# ---------------------------------------------------------------------------------- row storage
class _MemoryRows:
    """Texts and labels held in two lists."""

    def __init__(self, texts: list[str], labels: list[int]):
        self.texts = texts
        self.labels = labels

    def __len__(self) -> int:
        return len(self.texts)

    def get(self, index: int) -> TextClassificationItem:
        return TextClassificationItem(self.texts[index], self.labels[index])

    def get_many(self, indices: Sequence[int]) -> list[TextClassificationItem]:
        return [TextClassificationItem(self.texts[i], self.labels[i]) for i in indices]


class _SqliteRows:
    """Rows of an :class:`ember.data.SqliteDataset` turned into items by ``convert`` (a
    module-level function, so the rows pickle into data-loader workers)."""

    def __init__(self, dataset, convert: Callable[[dict], TextClassificationItem]):
        self.dataset = dataset
        self.convert = convert

    def __len__(self) -> int:
        return len(self.dataset)

    def get(self, index: int) -> TextClassificationItem:
        return self.convert(self.dataset.get(index))

    def get_many(self, indices: Sequence[int]) -> list[TextClassificationItem]:
        return [self.convert(row) for row in self.dataset.get_many(indices)]


# ---------------------------------------------------------------------------------- base class
class TextClassificationDataset(Dataset[TextClassificationItem]):
    """Base of the example's datasets (Burn's ``TextClassificationDataset`` trait).

    Subclasses set ``CLASS_NAMES``, ``HUB_NAME``, ``NAME`` and implement the row converters
    ``_hub_item`` / ``_csv_item`` / ``_parquet_items``.

    Args:
        rows: the storage (built by the class methods, not by users).
        source: a description of where the rows come from.
        split: the split name.
    """

    CLASS_NAMES: ClassVar[tuple[str, ...]] = ()
    HUB_NAME: ClassVar[str] = ""
    NAME: ClassVar[str] = ""
    HUB_COLUMNS: ClassVar[tuple[str, ...]] = ()
    PARQUET_COLUMNS: ClassVar[tuple[str, ...]] = ()
    SYNTHETIC_SIZES: ClassVar[dict[str, int]] = {"train": 512, "test": 128}

    def __init__(self, rows, source: str = "", split: str = ""):
        self._rows = rows
        self.source = source
        self.split = split

    # ---- the trait ------------------------------------------------------------------------
    @classmethod
    def num_classes(cls) -> int:
        """Number of classes."""
        return len(cls.CLASS_NAMES)

    @classmethod
    def class_name(cls, label: int) -> str:
        """The name of class ``label`` (0-based).

        Args:
            label: class index in ``[0, num_classes)``.
        """
        index = int(label)
        if not 0 <= index < len(cls.CLASS_NAMES):
            raise IndexError(
                f"{cls.__name__}.class_name: label {label} is outside 0..{len(cls.CLASS_NAMES) - 1}"
            )
        return cls.CLASS_NAMES[index]

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, index: int) -> TextClassificationItem:
        return self._rows.get(check_index(type(self).__name__, index, len(self._rows)))

    def get_many(self, indices: Sequence[int]) -> list[TextClassificationItem]:
        n, name = len(self._rows), type(self).__name__
        return self._rows.get_many([check_index(name, i, n) for i in indices])

    def labels(self) -> list[int]:
        """Every item's label, in order (reads the whole split)."""
        if isinstance(self._rows, _MemoryRows):
            return list(self._rows.labels)
        return [item.label for item in self]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(split={self.split!r}, len={len(self)}, source={self.source!r})"

    # ---- sources --------------------------------------------------------------------------
    @classmethod
    def from_source(
        cls, source: str, split: str, data_dir: str | os.PathLike | None = None, **kwargs: Any
    ) -> "TextClassificationDataset":
        """Load ``split`` from ``source`` (what the scripts' ``--source`` / ``--data-dir`` select).

        Args:
            source: ``"hub"``, ``"local"``, ``"sample"`` or ``"synthetic"``.
            split: ``"train"`` or ``"test"``.
            data_dir: the directory of ``local`` files (required there, refused elsewhere).
            **kwargs: passed to the source's class method (``hub``: ``cache_dir``,
                ``hf_cache_dir``; ``synthetic``: ``n``, ``seed``).
        """
        if source not in SOURCES:
            raise ValueError(
                f"{cls.__name__}: unknown source {source!r}; expected one of {', '.join(SOURCES)}"
            )
        if source == "local":
            if data_dir is None:
                raise ValueError(
                    f"{cls.__name__}: source 'local' needs a data directory (--data-dir DIR) holding "
                    f"{cls._expected_files(split)}"
                )
            return cls.local(data_dir, split, **kwargs)
        if data_dir is not None:
            raise ValueError(
                f"{cls.__name__}: a data directory ({data_dir}) is only used with source 'local', "
                f"not {source!r}"
            )
        return getattr(cls, source)(split, **kwargs)

    @classmethod
    def hub(
        cls,
        split: str = "train",
        cache_dir: str | os.PathLike | None = None,
        hf_cache_dir: str | os.PathLike | None = None,
    ) -> "TextClassificationDataset":
        """``split`` of the Hub dataset ``HUB_NAME`` through ``HuggingfaceDatasetLoader`` (SQLite cache).

        Args:
            split: ``"train"`` or ``"test"``.
            cache_dir: ember's SQLite cache directory (default ``EMBER_DATASET_CACHE`` / ``~/.cache/ember/datasets``).
            hf_cache_dir: the ``datasets`` cache (default its own, under ``HF_HOME``).

        Raises:
            ember.data.DatasetUnavailableError: offline with nothing cached (the message says what to do).
        """
        cls._check_split(split)
        loader = HuggingfaceDatasetLoader(cls.HUB_NAME)
        if cache_dir is not None:
            loader = loader.with_base_dir(cache_dir)
        if hf_cache_dir is not None:
            loader = loader.with_huggingface_cache_dir(hf_cache_dir)
        rows = loader.dataset(split)
        missing = [c for c in cls.HUB_COLUMNS if c not in rows.columns]
        if missing:
            raise ValueError(
                f"{cls.__name__}.hub: split {split!r} of {cls.HUB_NAME} ({rows.db_file}) lacks the "
                f"columns {missing}; it has {rows.columns}"
            )
        return cls(_SqliteRows(rows, cls._hub_item), source=f"hub:{cls.HUB_NAME}", split=split)

    @classmethod
    def train(cls) -> "TextClassificationDataset":
        """The Hub's train split (Burn's ``train()``)."""
        return cls.hub("train")

    @classmethod
    def test(cls) -> "TextClassificationDataset":
        """The Hub's test split (Burn's ``test()``)."""
        return cls.hub("test")

    @classmethod
    def local(cls, data_dir: str | os.PathLike, split: str = "train") -> "TextClassificationDataset":
        """``split`` from a local directory: ``<split>.csv`` (classic header-less CSV, classes
        1-based) if present, else the Hub's parquet files for ``split`` below the directory.

        Args:
            data_dir: the directory.
            split: ``"train"`` or ``"test"``.
        """
        cls._check_split(split)
        directory = Path(data_dir).expanduser()
        if not directory.is_dir():
            what = "is a file, not a directory" if directory.exists() else "does not exist"
            raise FileNotFoundError(
                f"{cls.__name__}.local: data directory {directory} {what}; expected a directory "
                f"holding {cls._expected_files(split)}"
            )
        csv_file = directory / f"{split}.csv"
        if csv_file.is_file():
            texts, labels = cls._read_csv(csv_file)
            return cls(_MemoryRows(texts, labels), source=f"local:{csv_file}", split=split)
        parquet = sorted({*directory.rglob(f"{split}-*.parquet"), *directory.rglob(f"{split}.parquet")})
        if parquet:
            texts, labels = cls._read_parquet(parquet)
            return cls(
                _MemoryRows(texts, labels),
                source=f"local:{directory} ({len(parquet)} parquet files)",
                split=split,
            )
        raise FileNotFoundError(
            f"{cls.__name__}.local: no {split!r} data in {directory}; expected {cls._expected_files(split)}"
        )

    @classmethod
    def sample(cls, split: str = "train") -> "TextClassificationDataset":
        """The sample shipped with the example (DbPedia only)."""
        raise NotImplementedError(f"{cls.__name__} has no shipped sample")

    @classmethod
    def synthetic(
        cls, split: str = "train", n: int | None = None, seed: int = 0
    ) -> "TextClassificationDataset":
        """A generated corpus, for tests: each text mixes filler words with words of its class.

        Deterministic for a given (split, n, seed); labels are balanced and shuffled. The words
        are common English words, all in the bert-base-cased vocabulary.

        Args:
            split: ``"train"`` or ``"test"`` (different draws).
            n: number of items (default 512 for train, 128 for test).
            seed: base seed.
        """
        cls._check_split(split)
        n = cls.SYNTHETIC_SIZES[split] if n is None else int(n)
        if n < 1:
            raise ValueError(f"{cls.__name__}.synthetic: n must be >= 1, got {n}")
        texts, labels = synthetic_rows(cls.__name__, split, n, seed, cls.num_classes())
        return cls(_MemoryRows(texts, labels), source=f"synthetic(seed={seed})", split=split)

    # ---- helpers ---------------------------------------------------------------------------
    @classmethod
    def _check_split(cls, split: str) -> None:
        if split not in SPLITS:
            raise ValueError(f"{cls.__name__}: unknown split {split!r}; expected one of {', '.join(SPLITS)}")

    @classmethod
    def _expected_files(cls, split: str) -> str:
        return (
            f"{split}.csv (header-less rows class,title,text with classes 1..{cls.num_classes()}) or the Hub's "
            f"parquet files for {cls.HUB_NAME} ({split}-*.parquet or {split}.parquet, columns "
            f"{','.join(cls.PARQUET_COLUMNS)})"
        )

    @classmethod
    def _read_csv(cls, path: Path) -> tuple[list[str], list[int]]:
        texts, labels = [], []
        c = cls.num_classes()
        with open(path, newline="", encoding="utf-8") as handle:
            for line, row in enumerate(csv.reader(handle), start=1):
                if not row:
                    continue
                if len(row) != 3:
                    raise ValueError(
                        f"{cls.__name__}: {path}:{line}: expected 3 fields class,title,text, got "
                        f"{len(row)}: {row!r:.120}"
                    )
                try:
                    label = int(row[0])
                except ValueError:
                    raise ValueError(
                        f"{cls.__name__}: {path}:{line}: the class {row[0]!r} is not an integer (the "
                        "files have no header; classes are 1-based)"
                    ) from None
                if not 1 <= label <= c:
                    raise ValueError(f"{cls.__name__}: {path}:{line}: class {label} is outside 1..{c}")
                texts.append(cls._text(row[1], row[2]))
                labels.append(label - 1)
        if not texts:
            raise ValueError(f"{cls.__name__}: {path} holds no rows")
        return texts, labels

    @classmethod
    def _read_parquet(cls, files: list[Path]) -> tuple[list[str], list[int]]:
        columns: dict[str, list] = {name: [] for name in cls.PARQUET_COLUMNS}
        for file in files:
            table = _read_parquet_columns(file)
            missing = [name for name in columns if name not in table]
            if missing:
                raise ValueError(
                    f"{cls.__name__}: {file} lacks the columns {missing} (it has {sorted(table)}); "
                    f"expected the Hub's {cls.HUB_NAME} columns {', '.join(cls.PARQUET_COLUMNS)}"
                )
            for name in columns:
                columns[name].extend(table[name])
        texts, labels = cls._parquet_items(columns)
        c = cls.num_classes()
        bad = next((label for label in labels if not 0 <= label < c), None)
        if bad is not None:
            raise ValueError(f"{cls.__name__}: parquet label {bad} is outside 0..{c - 1}")
        return texts, labels

    # Implemented by subclasses.
    @staticmethod
    def _text(title: str, body: str) -> str:
        raise NotImplementedError

    @staticmethod
    def _hub_item(row: dict) -> TextClassificationItem:
        raise NotImplementedError

    @classmethod
    def _parquet_items(cls, columns: dict[str, list]) -> tuple[list[str], list[int]]:
        raise NotImplementedError


def _read_parquet_columns(path: Path) -> dict[str, list]:
    """Columns of one parquet file as Python lists (pyarrow when present, else ``datasets``)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pq = None
    if pq is not None:
        return pq.read_table(path).to_pydict()
    try:
        import datasets
    except ImportError as error:
        raise ImportError(f"reading {path} needs pyarrow or datasets: pip install pyarrow") from error
    return datasets.Dataset.from_parquet(str(path)).to_dict()


def _clean_ag_news(text: str) -> str:
    # The original AG News files mark newlines with a backslash.
    return text.replace("\\", " ")


# ---------------------------------------------------------------------------------- AG News
def _ag_news_hub_item(row: dict) -> TextClassificationItem:
    return TextClassificationItem(_clean_ag_news(row["text"]), int(row["label"]))


class AgNewsDataset(TextClassificationDataset):
    """AG News (Hub ``fancyzhx/ag_news``): 4 classes World, Sports, Business, Technology."""

    CLASS_NAMES = ("World", "Sports", "Business", "Technology")
    HUB_NAME = "fancyzhx/ag_news"
    NAME = "ag_news"
    HUB_COLUMNS = ("text", "label")
    PARQUET_COLUMNS = ("text", "label")
    _hub_item = staticmethod(_ag_news_hub_item)

    @staticmethod
    def _text(title: str, body: str) -> str:
        return _clean_ag_news(f"{title} {body}")

    @classmethod
    def _parquet_items(cls, columns):
        return [_clean_ag_news(t) for t in columns["text"]], [int(v) for v in columns["label"]]

    @classmethod
    def sample(cls, split: str = "train") -> "AgNewsDataset":
        """Not available: AG News rows cannot be shipped (their licence is unclear)."""
        raise ValueError(
            "AgNewsDataset: there is no shipped AG News sample, because the licence of the AG News rows does not "
            "allow redistributing them. Use the Hub (--source hub, needs network or a cached copy), or point the "
            "example at the classic CSV files: --source local --data-dir DIR, where DIR holds train.csv and "
            'test.csv (header-less rows "class","title","description", classes 1-4) or the Hub\'s parquet '
            "files. The shipped sample is DbPedia's (db_pedia_* scripts, --source sample)."
        )


# ---------------------------------------------------------------------------------- DbPedia
def _dbpedia_text(title: str, content: str) -> str:
    return f"Title: {title.strip()} - Content: {content.strip()}"


def _dbpedia_hub_item(row: dict) -> TextClassificationItem:
    return TextClassificationItem(_dbpedia_text(row["title"], row["content"]), int(row["label"]))


class DbPediaDataset(TextClassificationDataset):
    """DbPedia-14 (Hub ``fancyzhx/dbpedia_14``): 14 ontology classes, text
    ``"Title: {title} - Content: {content}"``."""

    CLASS_NAMES = (
        "Company",
        "EducationalInstitution",
        "Artist",
        "Athlete",
        "OfficeHolder",
        "MeanOfTransportation",
        "Building",
        "NaturalPlace",
        "Village",
        "Animal",
        "Plant",
        "Album",
        "Film",
        "WrittenWork",
    )
    HUB_NAME = "fancyzhx/dbpedia_14"
    NAME = "dbpedia"
    HUB_COLUMNS = ("label", "title", "content")
    PARQUET_COLUMNS = ("label", "title", "content")
    _hub_item = staticmethod(_dbpedia_hub_item)

    @staticmethod
    def _text(title: str, body: str) -> str:
        return _dbpedia_text(title, body)

    @classmethod
    def _parquet_items(cls, columns):
        texts = [_dbpedia_text(t, c) for t, c in zip(columns["title"], columns["content"])]
        return texts, [int(v) for v in columns["label"]]

    @classmethod
    def sample(cls, split: str = "train") -> "DbPediaDataset":
        """The shipped sample: ``train`` 4,000 rows, ``test`` the 1,000 held-out rows (stratified
        by class, seed 0; see ``data/README.md``). CC BY-SA 3.0, attribution in that README.

        Args:
            split: ``"train"`` or ``"test"``.
        """
        cls._check_split(split)
        path = SAMPLE_DIR / f"{split}.csv"
        if not path.is_file():
            raise FileNotFoundError(
                f"DbPediaDataset.sample: {path} is missing; restore data/dbpedia_sample/ from "
                "the repository (see data/README.md for how it was made)"
            )
        texts, labels = cls._read_csv(path)
        return cls(_MemoryRows(texts, labels), source=f"sample:{path}", split=split)
