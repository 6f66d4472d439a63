"""SQLite store: writer/reader round trips, `datasets` conversion (in-memory, parquet, CSV),
reuse of the converted file, and reads from worker processes."""

from __future__ import annotations

import os
import pickle
import sqlite3
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # worker processes import the helpers by name

from ember_data_helpers import ListBatcher

from ember.data import (
    DataLoaderBuilder,
    DatasetCorruptError,
    HuggingfaceDatasetLoader,
    SqliteDataset,
    SqliteDatasetWriter,
    huggingface_to_sqlite,
)

ROWS = [
    {"text": "hello", "label": 1, "score": 0.5, "flag": True, "blob": b"\x00\x01", "tags": [1, 2]},
    {"text": "wörld", "label": 0, "score": -2.0, "flag": False, "blob": b"", "tags": []},
    {"text": None, "label": 3, "score": None, "flag": None, "blob": None, "tags": None},
]


def write_rows(path, rows=ROWS, split="train"):
    with SqliteDatasetWriter(path) as writer:
        writer.write_split(split, rows)
    return path


# -- writer / reader -----------------------------------------------------------------------------


def test_round_trip_keeps_python_types(tmp_path):
    db = write_rows(tmp_path / "d.db")
    ds = SqliteDataset(db, "train")
    assert len(ds) == 3 and ds.columns == list(ROWS[0])
    assert [ds[i] for i in range(3)] == ROWS
    assert isinstance(ds[0]["flag"], bool) and isinstance(ds[0]["blob"], bytes)
    assert ds.get_many([2, 0, 2]) == [ROWS[2], ROWS[0], ROWS[2]]
    assert list(ds) == ROWS


def test_out_of_range_and_negative_indices(tmp_path):
    ds = SqliteDataset(write_rows(tmp_path / "d.db"), "train")
    assert ds[-1] == ROWS[-1]
    with pytest.raises(IndexError, match="out of range for a dataset of 3"):
        ds[3]
    with pytest.raises(IndexError):
        ds.get_many([0, -4])


def test_column_selection(tmp_path):
    ds = SqliteDataset(write_rows(tmp_path / "d.db"), "train", columns=["label", "text"])
    assert ds[0] == {"label": 1, "text": "hello"}
    with pytest.raises(ValueError, match=r"no column\(s\) \['nope'\]"):
        SqliteDataset(tmp_path / "d.db", "train", columns=["nope"])


def test_several_splits_and_errors(tmp_path):
    db = tmp_path / "d.db"
    with SqliteDatasetWriter(db) as writer:
        writer.write_split("train", [{"x": 1}, {"x": 2}])
        writer.write_split("test", [{"x": 3}])
        writer.create_split("empty", {"x": "int"})
    assert SqliteDataset.splits(db) == ["train", "test", "empty"]
    assert [r["x"] for r in SqliteDataset(db, "test")] == [3]
    assert len(SqliteDataset(db, "empty")) == 0
    with pytest.raises(ValueError, match=r"no split 'valid'; available splits: \['train', 'test', 'empty'\]"):
        SqliteDataset(db, "valid")
    with pytest.raises(FileNotFoundError):
        SqliteDataset(tmp_path / "missing.db", "train")
    not_db = tmp_path / "notes.txt"
    not_db.write_text("not a database " * 100)
    with pytest.raises(ValueError, match="not an SQLite database"):
        SqliteDataset(not_db, "train")


def test_rows_use_burn_row_ids_from_one(tmp_path):
    db = write_rows(tmp_path / "d.db")
    with sqlite3.connect(db) as conn:
        ids = [r[0] for r in conn.execute('SELECT row_id FROM "train" ORDER BY row_id')]
    assert ids == [1, 2, 3]


def test_reads_files_without_ember_metadata_and_with_gaps(tmp_path):
    db = tmp_path / "burn.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE train (row_id INTEGER PRIMARY KEY, text TEXT, label INTEGER)")
        conn.executemany("INSERT INTO train VALUES (?, ?, ?)", [(1, "a", 0), (2, "b", 1), (5, "c", 2)])
    ds = SqliteDataset(db, "train")
    assert [ds[i] for i in range(3)] == [
        {"text": "a", "label": 0},
        {"text": "b", "label": 1},
        {"text": "c", "label": 2},
    ]


def test_writer_is_atomic_and_validates(tmp_path):
    db = tmp_path / "d.db"
    with (
        pytest.raises(TypeError, match=r"split 'train', row 1, column 'label' \(kind 'int'\)"),
        SqliteDatasetWriter(db) as writer,
    ):
        writer.write_split("train", [{"label": 1}, {"label": "x"}])
    assert list(tmp_path.iterdir()) == []  # nothing left behind
    write_rows(db)
    with pytest.raises(FileExistsError):
        SqliteDatasetWriter(db)
    with SqliteDatasetWriter(db, overwrite=True) as writer:
        with pytest.raises(ValueError, match="reserved for the row index"):
            writer.create_split("train", {"row_id": "int"})
        with pytest.raises(ValueError, match="reserved"):
            writer.create_split("__ember_columns__", {"x": "int"})
        with pytest.raises(ValueError, match="unknown kind"):
            writer.create_split("train", {"x": "complex"})
        with pytest.raises(ValueError, match="expected"):
            writer.write_split("train", [{"x": 1}, {"y": 2}])


def test_dataset_pickles_without_connection(tmp_path):
    ds = SqliteDataset(write_rows(tmp_path / "d.db"), "train")
    ds[0]  # opens the connection
    clone = pickle.loads(pickle.dumps(ds))
    assert clone._conn is None and clone[1] == ROWS[1]


def test_workers_read_the_same_rows(tmp_path):
    rows = [{"text": f"row {i}", "label": i % 3} for i in range(40)]
    ds = SqliteDataset(write_rows(tmp_path / "d.db", rows), "train")
    batches = {}
    for workers in (0, 2):
        loader = DataLoaderBuilder(ListBatcher()).batch_size(6).shuffle(1).num_workers(workers).build(ds)
        batches[workers] = [batch["items"] for batch in loader]
    assert batches[0] == batches[2]
    assert sorted(item["text"] for batch in batches[2] for item in batch) == sorted(r["text"] for r in rows)


# -- integrity: checksums, damaged files, clear errors -----------------------------------------

PAGE = 4096


def two_split_file(tmp_path, rows=120):
    """A file with two splits holding the same row ids (so a page of one can pass for the other)."""
    db = tmp_path / "two.db"
    train = [
        {"text": f"train row {i} " + "t" * (i % 50), "label": i % 5, "tags": [i, i + 1]} for i in range(rows)
    ]
    test = [
        {"text": f"test row {i} " + "s" * (i % 50), "label": i % 5, "tags": [i, i + 1]} for i in range(rows)
    ]
    with SqliteDatasetWriter(db) as writer:
        writer.write_split("train", train)
        writer.write_split("test", test)
    return db, {"train": train, "test": test}


def read_or_raise(db, split):
    """All items of a split (in one query, and a few one by one), or the error raised."""
    try:
        ds = SqliteDataset(db, split)
        items = ds.get_many(list(range(len(ds))))
        for index in range(0, len(ds), 17):
            assert ds[index] == items[index]
        ds.close()
        return items
    except DatasetCorruptError as error:
        assert str(db) in str(error) and repr(split) in str(error)
        return error


def test_files_ember_writes_are_verified_and_old_or_burn_files_are_not(tmp_path):
    db, rows = two_split_file(tmp_path)
    ds = SqliteDataset(db, "train")
    assert ds.verified and "verified=True" in repr(ds)
    assert [ds[i] for i in range(len(ds))] == rows["train"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x454D4244
    # format 1 (before checksums): same layout without the checksum column and split table
    old = tmp_path / "v1.db"
    with sqlite3.connect(old) as conn:
        conn.execute('CREATE TABLE "train" (row_id INTEGER PRIMARY KEY, "tags" TEXT)')
        conn.execute("CREATE TABLE __ember_columns__ (split TEXT, position INTEGER, name TEXT, kind TEXT)")
        conn.execute("CREATE TABLE __ember_info__ (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute("INSERT INTO __ember_columns__ VALUES ('train', 0, 'tags', 'json')")
        conn.execute("INSERT INTO __ember_info__ VALUES ('version', '1')")
        conn.execute("INSERT INTO train VALUES (1, '[1, 2]')")
    legacy = SqliteDataset(old, "train")
    assert not legacy.verified and legacy[0] == {"tags": [1, 2]}


def test_copying_any_page_over_another_never_gives_wrong_rows(tmp_path):
    # The probe: one 4 KiB page copied over another loaded wrong rows or a wrong
    # length, silently, in 710 of 930 trials. Now every trial reads right or raises.
    db, rows = two_split_file(tmp_path, rows=40)
    original = db.read_bytes()
    pages = len(original) // PAGE
    assert pages >= 8
    damaged = tmp_path / "damaged.db"
    outcomes = {"right": 0, "error": 0}
    for source in range(pages):
        for target in range(pages):
            if (
                source == target
                or original[source * PAGE : (source + 1) * PAGE]
                == original[target * PAGE : (target + 1) * PAGE]
            ):
                continue
            data = bytearray(original)
            data[target * PAGE : (target + 1) * PAGE] = original[source * PAGE : (source + 1) * PAGE]
            damaged.write_bytes(bytes(data))
            for split in ("train", "test"):
                result = read_or_raise(damaged, split)
                if isinstance(result, DatasetCorruptError):
                    outcomes["error"] += 1
                else:
                    assert result == rows[split], f"page {source} over page {target}: wrong {split} rows"
                    outcomes["right"] += 1
    assert outcomes["error"] > 0  # the damage was noticed, not just harmless


def test_a_changed_value_or_a_changed_count_is_caught_with_the_file_and_split_named(tmp_path):
    db, _ = two_split_file(tmp_path, rows=10)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE train SET text = 'tampered' WHERE row_id = 4")
    ds = SqliteDataset(db, "train")  # the count and checksum column are intact: opens
    assert ds[2]["text"] == "train row 2 tt"
    with pytest.raises(DatasetCorruptError, match=r"split 'train': item 3 \(row_id 4\) is damaged") as info:
        ds[3]
    assert info.value.path == str(db) and info.value.split == "train"
    with pytest.raises(DatasetCorruptError, match="is damaged"):
        ds.get_many([0, 3])
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM test WHERE row_id = 10")
    with pytest.raises(
        DatasetCorruptError, match=r"split 'test': the table holds 9 rows .* the file records 10 rows"
    ):
        SqliteDataset(db, "test")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE __ember_splits__ SET rows = 9 WHERE split = 'test'")
    with pytest.raises(DatasetCorruptError, match="entry is damaged"):
        SqliteDataset(db, "test")


def test_erasing_the_markers_cannot_turn_a_checked_file_into_an_unchecked_one(tmp_path):
    db, _ = two_split_file(tmp_path, rows=5)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA application_id = 0")
        conn.execute("DROP TABLE __ember_splits__")
    with pytest.raises(DatasetCorruptError, match="has no __ember_splits__ table"):
        SqliteDataset(db, "train")


def test_a_schema_page_that_hides_tables_is_caught_by_splits_too(tmp_path):
    # Found by the fuzzer: page 1's cell count lowered, so SQLite no longer saw the last
    # schema entries (`test`, `__ember_splits__` and its index), and splits() listed
    # ['train'] without a word.
    db, _ = two_split_file(tmp_path, rows=5)
    data = bytearray(db.read_bytes())
    assert data[100] == 0x0D  # page 1 is a table b-tree leaf: its cell count is at 103..104
    cells = int.from_bytes(data[103:105], "big")
    data[103:105] = (cells - 3).to_bytes(2, "big")  # hide test, __ember_splits__ and its index
    db.write_bytes(bytes(data))
    with pytest.raises(DatasetCorruptError, match="has no __ember_splits__ table"):
        SqliteDataset.splits(db)
    with pytest.raises(DatasetCorruptError, match="split 'train'.*has no __ember_splits__ table"):
        SqliteDataset(db, "train")


@pytest.mark.parametrize("size", [0, 1, 99])
def test_a_truncated_file_is_not_taken_for_an_empty_database(tmp_path, size):
    # Found by the fuzzer: SQLite reads a 0- or 1-byte file as an empty database, so a
    # dataset truncated that far listed no splits instead of failing.
    db, _ = two_split_file(tmp_path, rows=3)
    db.write_bytes(db.read_bytes()[:size])
    with pytest.raises(DatasetCorruptError, match=rf"two.db: is not an SQLite database \({size} bytes"):
        SqliteDataset.splits(db)
    with pytest.raises(DatasetCorruptError, match=r"two.db, split 'train': is not an SQLite database"):
        SqliteDataset(db, "train")


def test_reading_never_creates_files_beside_the_dataset(tmp_path):
    # Found by the fuzzer's leftovers: a header damaged to claim WAL mode made the read-only
    # open create -wal and -shm files. Files ember writes are opened as immutable.
    db, rows = two_split_file(tmp_path, rows=3)
    data = bytearray(db.read_bytes())
    data[18:20] = b"\x02\x02"  # file format write/read versions: WAL
    db.write_bytes(bytes(data))
    assert read_or_raise(db, "train") == rows["train"]
    assert SqliteDataset.splits(db) == ["train", "test"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two.db"]


def test_raw_sqlite_json_and_text_errors_become_dataset_errors(tmp_path):
    not_db = tmp_path / "junk.db"
    not_db.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    with pytest.raises(DatasetCorruptError, match=r"junk.db, split 'train': is not an SQLite database"):
        SqliteDataset(not_db, "train")
    with pytest.raises(DatasetCorruptError, match="junk.db"):
        SqliteDataset.splits(not_db)
    # An unverified (format 1) file with JSON that does not parse and text that is not UTF-8.
    old = tmp_path / "v1.db"
    with sqlite3.connect(old) as conn:
        conn.execute('CREATE TABLE "train" (row_id INTEGER PRIMARY KEY, "tags" TEXT, "text" TEXT)')
        conn.execute("CREATE TABLE __ember_columns__ (split TEXT, position INTEGER, name TEXT, kind TEXT)")
        conn.executemany(
            "INSERT INTO __ember_columns__ VALUES ('train', ?, ?, ?)",
            [(0, "tags", "json"), (1, "text", "text")],
        )
        conn.execute("INSERT INTO train VALUES (1, '[1, 2', 'fine')")
        conn.execute("INSERT INTO train VALUES (2, '[]', CAST(X'80FF' AS TEXT))")
    ds = SqliteDataset(old, "train")
    with pytest.raises(
        DatasetCorruptError, match=r"split 'train': item 0 \(row_id 1\), column 'tags': cannot decode"
    ):
        ds[0]
    with pytest.raises(
        DatasetCorruptError, match=r"v1.db, split 'train': reading item 1 \(row_id 2\) failed"
    ):
        ds[1]


def test_dataset_errors_cross_from_workers_as_themselves(tmp_path):
    db, _ = two_split_file(tmp_path, rows=6)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE train SET label = 99 WHERE row_id = 5")
    error = pickle.loads(pickle.dumps(DatasetCorruptError(db, "train", "detail")))
    assert isinstance(error, ValueError) and (error.path, error.split, error.detail) == (
        str(db),
        "train",
        "detail",
    )
    loader = DataLoaderBuilder(ListBatcher()).batch_size(2).num_workers(1).build(SqliteDataset(db, "train"))
    with pytest.raises(DatasetCorruptError, match=r"item 4 \(row_id 5\) is damaged"):
        list(loader)


def test_checksums_match_what_sqlite_stores_for_awkward_values(tmp_path):
    rows = [
        {"f": float("nan"), "z": -0.0, "i": -(2**63), "t": "a\x00b", "b": b"\x00", "j": {"k": [1.5, None]}},
        {"f": float("inf"), "z": 2.0**62, "i": 2**63 - 1, "t": "", "b": b"", "j": []},
        {"f": None, "z": None, "i": None, "t": None, "b": None, "j": None},
    ]
    db = write_rows(tmp_path / "odd.db", rows)
    ds = SqliteDataset(db, "train")
    items = [ds[i] for i in range(3)]
    assert items[0]["f"] is None  # SQLite stores NaN as NULL
    assert items[0]["z"] == 0.0 and items[1]["i"] == 2**63 - 1 and items[0]["t"] == "a\x00b"
    assert items[1:] == rows[1:] and ds.get_many([0, 1, 2]) == items
    with pytest.raises(TypeError, match=r"row 0, column 'i' \(kind 'int'\).*64-bit"):
        write_rows(tmp_path / "big.db", [{"i": 2**63}])
    with pytest.raises(TypeError, match=r"row 0, column 't' \(kind 'text'\)"):
        write_rows(tmp_path / "surrogate.db", [{"t": "\ud800"}])
    with pytest.raises(ValueError, match="reserved"):
        write_rows(tmp_path / "reserved.db", [{"__ember_checksum__": 1}])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["odd.db"]  # failed writes left nothing


# -- Hugging Face `datasets` -> SQLite -----------------------------------------------------------


datasets = pytest.importorskip("datasets")


def test_round_trip_from_in_memory_datasets_object(tmp_path):
    features = datasets.Features(
        {
            "text": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["World", "Sports", "Business", "Sci/Tech"]),
            "score": datasets.Value("float32"),
            "flag": datasets.Value("bool"),
            "ids": datasets.Sequence(datasets.Value("int32")),
            "meta": {"source": datasets.Value("string"), "year": datasets.Value("int64")},
            "raw": datasets.Value("binary"),
        }
    )
    train = datasets.Dataset.from_dict(
        {
            "text": ["a b", "c", "ünïcode"],
            "label": [0, 3, 1],
            "score": [0.25, 1.5, -3.0],
            "flag": [True, False, True],
            "ids": [[1, 2, 3], [], [7]],
            "meta": [
                {"source": "x", "year": 2004},
                {"source": "y", "year": 2005},
                {"source": None, "year": None},
            ],
            "raw": [b"\x00\xff", b"", b"z"],
        },
        features=features,
    )
    test = datasets.Dataset.from_dict({k: v[:1] for k, v in train.to_dict().items()}, features=features)
    db = huggingface_to_sqlite(datasets.DatasetDict({"train": train, "test": test}), tmp_path / "hf.db")
    assert SqliteDataset.splits(db) == ["train", "test"]
    ds = SqliteDataset(db, "train")
    assert ds.columns == ["text", "label", "score", "flag", "ids", "meta_source", "meta_year", "raw"]
    for index in range(len(train)):
        expected = train[index]
        item = ds[index]
        assert item["text"] == expected["text"] and item["label"] == expected["label"]
        assert item["score"] == pytest.approx(expected["score"])
        assert item["flag"] is expected["flag"] and item["ids"] == expected["ids"]
        assert item["meta_source"] == expected["meta"]["source"]
        assert item["meta_year"] == expected["meta"]["year"]
        assert item["raw"] == expected["raw"]
    assert len(SqliteDataset(db, "test")) == 1


def test_single_split_and_shuffled_selection_round_trip(tmp_path):
    base = datasets.Dataset.from_dict({"x": list(range(20))})
    picked = base.shuffle(seed=0).select(range(5))  # an indices mapping over the arrow table
    db = huggingface_to_sqlite(picked, tmp_path / "one.db", split="valid")
    assert [row["x"] for row in SqliteDataset(db, "valid")] == picked["x"]
    with pytest.raises(TypeError, match="expected datasets.Dataset"):
        huggingface_to_sqlite({"train": [1]}, tmp_path / "bad.db")


def test_media_columns_keep_raw_bytes_and_json_columns_round_trip(tmp_path):
    images = datasets.Dataset.from_dict({"img": [{"bytes": b"\x89PNG..", "path": "a.png"}], "label": [1]})
    images = images.cast_column("img", datasets.Image())  # decoding would need Pillow
    db = huggingface_to_sqlite(images, tmp_path / "img.db")
    assert SqliteDataset(db, "train")[0] == {"img_bytes": b"\x89PNG..", "img_path": "a.png", "label": 1}
    if hasattr(datasets, "Json"):
        docs = datasets.Dataset.from_dict(
            {"doc": [{"a": [1, 2]}, [3, "x"], None]}, features=datasets.Features({"doc": datasets.Json()})
        )
        rows = list(SqliteDataset(huggingface_to_sqlite(docs, tmp_path / "json.db"), "train"))
        assert rows == [{"doc": {"a": [1, 2]}}, {"doc": [3, "x"]}, {"doc": None}]


def write_parquet_splits(directory):
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir()
    pq.write_table(pa.table({"text": ["a", "b", "c"], "label": [0, 1, 2]}), directory / "train.parquet")
    pq.write_table(pa.table({"text": ["d"], "label": [3]}), directory / "test.parquet")
    return directory


def loader_for(name, tmp_path):
    return (
        HuggingfaceDatasetLoader(str(name))
        .with_base_dir(tmp_path / "ember-cache")
        .with_huggingface_cache_dir(tmp_path / "hf-cache")
    )


def test_loader_converts_local_parquet_directory(tmp_path):
    data = write_parquet_splits(tmp_path / "news")
    loader = loader_for(data, tmp_path)
    train = loader.dataset("train")
    assert [row["text"] for row in train] == ["a", "b", "c"]
    assert [row["label"] for row in loader.dataset("test")] == [3]
    assert sorted(loader.splits()) == ["test", "train"]
    assert loader.db_file().parent == tmp_path / "ember-cache"


def test_loader_converts_local_csv_file_and_data_files(tmp_path):
    train_csv = tmp_path / "train.csv"
    test_csv = tmp_path / "test.csv"
    train_csv.write_text("text,label\nx,1\ny,2\n")
    test_csv.write_text("text,label\nz,0\n")
    single = loader_for(train_csv, tmp_path)
    assert [(r["text"], r["label"]) for r in single.dataset("train")] == [("x", 1), ("y", 2)]
    both = loader_for("csv", tmp_path).with_data_files({"train": str(train_csv), "test": str(test_csv)})
    assert [r["text"] for r in both.dataset("test")] == ["z"]
    assert single.db_file() != both.db_file()


def test_loader_reuses_sqlite_file_without_datasets_or_network(tmp_path, monkeypatch):
    data = write_parquet_splits(tmp_path / "news")
    first = loader_for(data, tmp_path).db_file()
    stamp = first.stat().st_mtime_ns

    def forbidden(*args, **kwargs):
        raise AssertionError("datasets.load_dataset must not run when the SQLite file exists")

    monkeypatch.setattr(datasets, "load_dataset", forbidden)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    again = loader_for(data, tmp_path)
    assert again.db_file() == first and first.stat().st_mtime_ns == stamp
    assert len(again.dataset("train")) == 3


def test_loader_reimports_when_local_files_change(tmp_path):
    data = write_parquet_splits(tmp_path / "news")
    before = loader_for(data, tmp_path).db_file()
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["new"] * 4, "label": [9] * 4}), data / "train.parquet")
    after = loader_for(data, tmp_path)
    assert after.db_file() != before
    assert [r["text"] for r in after.dataset("train")] == ["new"] * 4


def test_loader_unknown_split_lists_available(tmp_path):
    loader = loader_for(write_parquet_splits(tmp_path / "news"), tmp_path)
    with pytest.raises(ValueError, match="available splits"):
        loader.dataset("validation")
