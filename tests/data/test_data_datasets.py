"""Dataset protocol, InMemDataset (list, JSON lines, CSV) and index checking."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ember.data import Dataset, InMemDataset, check_index, fetch_many


class Squares(Dataset[int]):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def get(self, index: int) -> int:
        index = check_index("Squares", index, self.n)
        return index * index


def test_protocol_derives_getitem_iteration_and_get_many():
    ds = Squares(5)
    assert len(ds) == 5
    assert ds[3] == 9 and ds.get(4) == 16
    assert ds[-1] == 16
    assert list(ds) == [0, 1, 4, 9, 16]
    assert ds.get_many([4, 0, 4]) == [16, 0, 16]
    assert not ds.is_empty() and Squares(0).is_empty()


@pytest.mark.parametrize("bad", [5, 6, -6, 10**12])
def test_out_of_range_raises_index_error(bad):
    ds = Squares(5)
    with pytest.raises(IndexError, match=f"index {bad} is out of range for a dataset of 5"):
        ds[bad]
    with pytest.raises(IndexError):
        ds.get_many([0, bad])


def test_empty_dataset_index_error_says_empty():
    with pytest.raises(IndexError, match="empty"):
        InMemDataset([])[0]


@pytest.mark.parametrize("bad", [1.0, "1", True, None])
def test_non_integer_index_raises_type_error(bad):
    with pytest.raises(TypeError, match="index must be an integer"):
        InMemDataset([1, 2, 3])[bad]


def test_numpy_integer_indices_work():
    ds = InMemDataset(["a", "b", "c"])
    assert ds[np.int64(2)] == "c" and ds[np.int32(-3)] == "a"


def test_in_mem_from_list_copies_and_iterates():
    source = [{"x": 1}, {"x": 2}]
    ds = InMemDataset(source)
    source.append({"x": 3})
    assert len(ds) == 2 and [item["x"] for item in ds] == [1, 2]
    assert ds.items() == [{"x": 1}, {"x": 2}]
    with pytest.raises(IndexError):
        ds[2]


def test_in_mem_from_dataset_materialises():
    assert InMemDataset.from_dataset(Squares(4)).items() == [0, 1, 4, 9]


def test_in_mem_from_json_rows(tmp_path):
    path = tmp_path / "rows.jsonl"
    rows = [{"text": "héllo", "label": 1, "tags": [1, 2]}, {"text": "b", "label": 0, "tags": []}]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n", encoding="utf-8")
    ds = InMemDataset.from_json_rows(path)
    assert len(ds) == 2 and ds[0] == rows[0] and ds[1] == rows[1]


def test_in_mem_from_json_rows_reports_bad_line(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"rows.jsonl:2 is not valid JSON"):
        InMemDataset.from_json_rows(path)


def test_in_mem_from_csv_with_types(tmp_path):
    path = tmp_path / "news.csv"
    path.write_text('text,label\n"Hello, world",2\nplain,0\n', encoding="utf-8")
    ds = InMemDataset.from_csv(path, column_types={"label": int})
    assert ds[0] == {"text": "Hello, world", "label": 2}
    assert ds[1] == {"text": "plain", "label": 0}


def test_in_mem_from_csv_without_header_and_tab_delimiter(tmp_path):
    path = tmp_path / "news.tsv"
    path.write_text("a\t1\nb\t2\n", encoding="utf-8")
    ds = InMemDataset.from_csv(
        path, fieldnames=["text", "label"], delimiter="\t", column_types={"label": int}
    )
    assert ds.items() == [{"text": "a", "label": 1}, {"text": "b", "label": 2}]


def test_in_mem_from_csv_errors(tmp_path):
    path = tmp_path / "news.csv"
    path.write_text("text,label\nok,1\nbad,x\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 3, column 'label': cannot convert 'x'"):
        InMemDataset.from_csv(path, column_types={"label": int})
    with pytest.raises(ValueError, match=r"no column\(s\) \['score'\]"):
        InMemDataset.from_csv(path, column_types={"score": float})
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("text,label\na,1,extra\n", encoding="utf-8")
    with pytest.raises(ValueError, match="different number of fields"):
        InMemDataset.from_csv(ragged)


def test_fetch_many_works_on_plain_sequences():
    assert fetch_many([10, 20, 30], [2, 0]) == [30, 10]
    assert fetch_many(np.arange(5), [4]) == [4]
