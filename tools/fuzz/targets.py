"""What the fuzzer attacks: for each file format, the seed files, how to mutate them, how
to load a mutated file, and the oracle that judges the result.

A target turns input number `i` into bytes deterministically (`make_input`), so a finding is
reproduced from `(target, seed, i)` alone. `judge` loads the file written from those bytes
and returns one outcome:

- `clean`: the loader raised the format's ember error, naming the file;
- `correct`: it loaded, and what it returned is exactly what the bytes declare (records:
  every declared tensor, with its declared dtype and shape and the file's own bytes; SQLite:
  exactly the rows that were written, since its files carry checksums);
- `silent`: it loaded something else (a silent wrong answer);
- `unclear`: it raised another exception, or one that does not name the file;
- `memory`: it ran out of the memory the runner allows.

The oracles parse the files themselves (`record_oracles`), independently of ember.
"""

from __future__ import annotations

import json
import math
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import cbor_model
from .mutators import INTERESTING_INTS, havoc, mutate_tree, sqlite_page_damage, truncate_at
from .record_oracles import (
    BURN_DTYPES,
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    align,
    bpk_problems,
    dtype_key,
    safetensors_problems,
)

__all__ = ["FORMATS", "OUTCOMES", "TARGETS", "Target", "input_rng", "make_target", "write_input"]

OUTCOMES = ("clean", "correct", "silent", "unclear", "memory")


def input_rng(target: str, seed: int, index: int) -> random.Random:
    """The random stream of one input: the same `(target, seed, index)`, the same input."""
    return random.Random(f"ember-fuzz/{target}/{seed}/{index}")


@dataclass
class Verdict:
    outcome: str
    detail: str = ""


class Target:
    """One file format under test (see the module docstring)."""

    name = ""
    suffix = ""

    def __init__(self) -> None:
        self.seeds: list[bytes] = self._build_seeds()

    def _build_seeds(self) -> list[bytes]:
        raise NotImplementedError

    def make_input(self, seed: int, index: int) -> tuple[int, bytes, str]:
        """Input `index`: (which seed file, the mutated bytes, what was done)."""
        rng = input_rng(self.name, seed, index)
        which = rng.randrange(len(self.seeds))
        data, note = self._mutate_safely(rng, self.seeds[which])
        if rng.random() < 0.15:  # sometimes stack a second mutation
            data, more = self._mutate_safely(rng, data)
            note = f"{note}; then {more}"
        return which, data, note

    def _mutate_safely(self, rng: random.Random, data: bytes) -> tuple[bytes, str]:
        # A structure-aware mutation assumes the structure it edits; on bytes damaged by an
        # earlier mutation it may not be there, and plain byte damage is used instead.
        try:
            return self._mutate(rng, data)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError):
            return havoc(rng, data)

    def _mutate(self, rng: random.Random, data: bytes) -> tuple[bytes, str]:
        raise NotImplementedError

    def judge(self, path: Path, which: int, data: bytes) -> Verdict:
        raise NotImplementedError


def _error_verdict(error: BaseException, path: Path, expected: type) -> Verdict:
    text = f"{type(error).__name__}: {error}"
    if isinstance(error, MemoryError):
        return Verdict("memory", text[:300])
    if isinstance(error, expected) and str(path) in str(error):
        return Verdict("clean")
    return Verdict("unclear", text[:300])


# -- burnpack (.bpk) ---------------------------------------------------------------------------

_BPK_VOCABULARY = (
    "tensors",
    "metadata",
    "scalars",
    "dtype",
    "shape",
    "data_offsets",
    "param_id",
    "Int",
    "UInt",
    "Float",
    "Bool",
    *FLOAT_DTYPES,
    "Flex32",
    *INTEGER_DTYPES,
    "Native",
    "QFloat",
    "a.weight",
    "a.bias",
    "emb",
)


class BurnpackTarget(Target):
    name = "bpk"
    suffix = ".bpk"

    def _build_seeds(self) -> list[bytes]:
        from ember.record import TensorRecord, UInt, to_bytes

        rng = np.random.default_rng(0)
        many = {
            "a.weight": rng.standard_normal((3, 4)).astype(np.float32),
            "a.bias": rng.standard_normal(4).astype(np.float32),
            "emb": rng.standard_normal((5, 2)).astype(np.float16),
            "bf": TensorRecord(rng.standard_normal((2, 3)).astype(np.float32), dtype="bfloat16"),
            "idx": np.arange(3, dtype=np.int64),
            "mask": np.array([[True, False], [False, True]]),
            "u": np.arange(7, dtype=np.uint8),
            "s": np.array(2.5, dtype=np.float64),
            "empty": np.zeros((0, 3), dtype=np.float32),
            "i16": np.arange(6, dtype=np.int16).reshape(2, 3),
        }
        ids = {"a.weight": 11, "a.bias": 12, "emb": 2**63}
        return [
            to_bytes(
                many,
                {"note": "seed", "k": "v"},
                {"step": 3, "lr": 0.125, "flag": True, "rank": UInt(2)},
                param_ids=ids,
            ),
            to_bytes({"w": rng.standard_normal((40, 40)).astype(np.float32)}),
            to_bytes({}, {"only": "metadata"}, {"n": -4}),
        ]

    @staticmethod
    def _split(data: bytes) -> tuple[int, bytes, bytes]:
        size = int.from_bytes(data[6:10], "little")
        return size, data[10 : 10 + size], data[align(10 + size) :]

    def _mutate(self, rng: random.Random, data: bytes) -> tuple[bytes, str]:
        roll = rng.random()
        if len(data) < 10:
            return havoc(rng, data + bytes(10))
        size, blob, section = self._split(data)
        if roll < 0.35:
            return self._mutate_metadata(rng, data, blob, section)
        if roll < 0.45:  # header fields
            field = rng.randrange(3)
            out = bytearray(data)
            if field == 0:
                out[0:4] = rng.choice((b"NRUC", b"\x00\x00\x00\x00", bytes(reversed(out[0:4]))))
            elif field == 1:
                out[4:6] = rng.choice((0, 2, 0xFFFF, rng.randrange(65536))).to_bytes(2, "little")
            else:
                value = rng.choice(
                    (
                        size + 1,
                        size - 1,
                        0,
                        len(data),
                        len(data) - 9,
                        size + 256,
                        2**32 - 1,
                        100 * 1024 * 1024 + 1,
                        rng.randrange(2**32),
                    )
                )
                out[6:10] = (value % 2**32).to_bytes(4, "little")
            return bytes(out), f"header field {('magic', 'version', 'metadata size')[field]}"
        if roll < 0.6:
            mutated, note = havoc(rng, data, 10, 10 + size)
            return mutated, f"metadata bytes: {note}"
        if roll < 0.7 and len(data) > align(10 + size):
            mutated, note = havoc(rng, data, align(10 + size), len(data))
            return mutated, f"data bytes: {note}"
        if roll < 0.85:
            points = [0, 4, 6, 10, 10 + size, align(10 + size), len(data)]
            return truncate_at(rng, data, points)
        if roll < 0.9:
            return data + bytes(rng.randrange(1, 600)), "extend with zeros"
        return havoc(rng, data)

    def _mutate_metadata(
        self, rng: random.Random, data: bytes, blob: bytes, section: bytes
    ) -> tuple[bytes, str]:
        tree = cbor_model.decode(blob)
        kind = rng.random()
        tensors = tree.get("tensors", {})
        names = list(tensors)
        if kind < 0.25 and names:  # meaningful descriptor edits
            name = rng.choice(names)
            desc = tensors[name]
            action = rng.randrange(6)
            if action == 0:  # a dtype of the same width: must load, reporting the new dtype
                width = {
                    1: ["I8", "U8"],
                    2: ["F16", "BF16", "I16", "U16"],
                    4: ["F32", "I32", "U32", "Flex32"],
                    8: ["F64", "I64", "U64"],
                }
                current = np.dtype(BURN_DTYPES.get(dtype_key(desc["dtype"]), "u1")).itemsize
                desc["dtype"] = rng.choice(width.get(current, ["U8"]) + [{"Bool": "U8"}, {"Bool": "Native"}])
            elif action == 1:  # a shape with the same element count
                count = math.prod(desc["shape"])
                desc["shape"] = rng.choice(
                    ([count], [1, count], [count, 1], list(reversed(desc["shape"])), [], [0, count])
                )
            elif action == 2 and len(names) > 1:  # overlap another tensor
                other = tensors[rng.choice([n for n in names if n != name])]
                desc["data_offsets"] = list(other["data_offsets"])
                desc["shape"], desc["dtype"] = list(other["shape"]), other["dtype"]
            elif action == 3:
                shift = rng.choice((1, -1, 4, 256, -256, 2**32))
                desc["data_offsets"] = [o + shift for o in desc["data_offsets"]]
            elif action == 4:
                desc["shape"] = desc["shape"] + [rng.choice((0, 1, 2**32, 2**63, 2**64 - 1))]
            else:
                desc["param_id"] = rng.choice(INTERESTING_INTS + ("7", None))
            note = f"edit descriptor of {name!r} (edit {action})"
            encoded = cbor_model.encode(tree)
        elif kind < 0.4:  # encodings no writer emits
            encoded, note = _odd_encoding(rng, tree)
        else:
            tree, note = mutate_tree(rng, tree, _BPK_VOCABULARY + tuple(names))
            encoded = cbor_model.encode(tree)
        header_size = len(encoded) if rng.random() < 0.85 else len(blob)
        start = align(10 + len(encoded))
        padding = bytes(max(0, start - 10 - len(encoded)))
        if rng.random() < 0.1:  # data left where it was
            padding = bytes(max(0, align(10 + len(blob)) - 10 - len(encoded)))
        out = data[:4] + data[4:6] + header_size.to_bytes(4, "little") + encoded + padding + section
        return out, f"metadata: {note}"

    def judge(self, path: Path, which: int, data: bytes) -> Verdict:
        from ember.record import RecordError, load

        try:
            record = load(path)
        except Exception as error:  # classified below
            return _error_verdict(error, path, RecordError)
        try:
            problems = bpk_problems(record, data)
        finally:
            record.close()
        return Verdict("silent", "; ".join(problems)[:500]) if problems else Verdict("correct")


def _odd_encoding(rng: random.Random, tree: dict) -> tuple[bytes, str]:
    """Metadata re-encoded in ways no writer emits but a reader may meet."""
    tensors = tree.get("tensors", {})
    names = list(tensors)
    action = rng.randrange(7)
    if action == 0 and names:  # a tensor name twice
        name = rng.choice(names)
        pairs = tuple(tensors.items()) + ((name, tensors[name]),)
        top = dict(tree)
        top["tensors"] = cbor_model.Pairs(pairs)
        return cbor_model.encode(top), f"tensor {name!r} listed twice"
    if action == 1 and names:  # a descriptor field twice
        name = rng.choice(names)
        desc = tensors[name]
        field = rng.choice(list(desc))
        other = rng.choice(([0], "F64", [0, 0], 3))
        tensors = dict(tensors)
        tensors[name] = cbor_model.Pairs(tuple(desc.items()) + ((field, other),))
        top = dict(tree)
        top["tensors"] = tensors
        return cbor_model.encode(top), f"field {field!r} of {name!r} twice"
    if action == 2:  # indefinite lengths everywhere
        return _indefinite(tree), "indefinite-length encoding"
    if action == 3:  # integers on wider arguments, or tags around values

        def widen(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: widen(v) for k, v in value.items()}
            if isinstance(value, list):
                return [widen(v) for v in value]
            if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**32:
                return cbor_model.Wide(value, 8)
            if isinstance(value, str) and rng.random() < 0.3:
                return cbor_model.Tagged(rng.choice((0, 1, 24, 55799)), value)
            return value

        return cbor_model.encode(widen(tree)), "wide integers and tags"
    if action == 4:  # a non-text key
        top = cbor_model.Pairs(tuple(tree.items()) + ((rng.choice((1, b"k", None)), 0),))
        return cbor_model.encode(top), "a non-text top-level key"
    if action == 5:  # a container that claims more items than follow
        claim = rng.choice((0x9A, 0xBA, 0x7A, 0x5A)).to_bytes(1, "big") + rng.choice(
            INTERESTING_INTS[:20]
        ).to_bytes(4, "big")
        return b"\xa2" + cbor_model.encode("tensors") + b"\xa0" + cbor_model.encode(
            "junk"
        ) + claim, "a huge declared length"
    depth = rng.choice((200, 1000, 10000))  # deep nesting
    return b"\xa2" + cbor_model.encode("tensors") + b"\xa0" + cbor_model.encode(
        "junk"
    ) + b"\x81" * depth + b"\x00", f"nesting {depth} deep"


def _indefinite(value: Any) -> bytes:
    def convert(item: Any) -> Any:
        if isinstance(item, dict):
            return cbor_model.Indefinite(cbor_model.Pairs(tuple((k, convert(v)) for k, v in item.items())))
        if isinstance(item, list):
            return cbor_model.Indefinite([convert(v) for v in item])
        if isinstance(item, str):
            return cbor_model.Indefinite(item)
        return item

    return cbor_model.encode(convert(value))


# -- safetensors --------------------------------------------------------------------------------

_ST_VOCABULARY = (
    "__metadata__",
    "dtype",
    "shape",
    "data_offsets",
    *FLOAT_DTYPES,
    *INTEGER_DTYPES,
    "BOOL",
    "F8_E4M3",
    "C64",
    "a",
    "b",
)


class SafetensorsTarget(Target):
    name = "safetensors"
    suffix = ".safetensors"

    def _build_seeds(self) -> list[bytes]:
        from ember.record import TensorRecord, safetensors_to_bytes

        rng = np.random.default_rng(1)
        many = {
            "a": rng.standard_normal((3, 4)).astype(np.float32),
            "b": rng.standard_normal(5).astype(np.float16),
            "c": TensorRecord(rng.standard_normal((2, 2)).astype(np.float32), dtype="bfloat16"),
            "d": np.arange(2, dtype=np.int64),
            "e": np.arange(4, dtype=np.uint8),
            "f": np.array([True, False, True]),
            "g": np.array(1.5, dtype=np.float64),
            "h": np.zeros((0, 2), dtype=np.float32),
            "i": np.arange(6, dtype=np.int32).reshape(2, 3),
        }
        plain = {k: v for k, v in many.items() if k != "c"}  # no bfloat16: the fast path
        return [
            safetensors_to_bytes(many, {"format": "np", "k": "v"}),
            safetensors_to_bytes(plain),
            safetensors_to_bytes({"w": rng.standard_normal((32, 32)).astype(np.float32)}),
        ]

    def _mutate(self, rng: random.Random, data: bytes) -> tuple[bytes, str]:
        if len(data) < 8:
            return havoc(rng, data + bytes(8))
        size = int.from_bytes(data[:8], "little")
        text, section = data[8 : 8 + size], data[8 + size :]
        roll = rng.random()
        if roll < 0.4:
            try:
                header = json.loads(text)
            except ValueError:
                return havoc(rng, data)
            kind = rng.random()
            if kind < 0.3 and isinstance(header, dict):
                encoded, note = _odd_json(rng, header)
            else:
                header, note = mutate_tree(rng, header, _ST_VOCABULARY + tuple(header))
                encoded = json.dumps(header, separators=(",", ":")).encode()
            if rng.random() < 0.7:  # the writer pads the header with spaces to 8 bytes
                encoded += b" " * (-len(encoded) % 8)
            declared = len(encoded) if rng.random() < 0.9 else size
            return declared.to_bytes(8, "little") + encoded + section, f"header: {note}"
        if roll < 0.5:
            value = rng.choice(
                (
                    size + 1,
                    size - 1,
                    size + 8,
                    0,
                    len(data),
                    2**64 - 1,
                    2**63,
                    100_000_001,
                    rng.randrange(2**32),
                )
            )
            return value.to_bytes(8, "little") + data[8:], f"header length {value}"
        if roll < 0.65:
            mutated, note = havoc(rng, data, 8, 8 + size)
            return mutated, f"header bytes: {note}"
        if roll < 0.75 and section:
            mutated, note = havoc(rng, data, 8 + size, len(data))
            return mutated, f"data bytes: {note}"
        if roll < 0.9:
            return truncate_at(rng, data, [0, 8, 8 + size, len(data)])
        return havoc(rng, data)

    def judge(self, path: Path, which: int, data: bytes) -> Verdict:
        from ember.record import RecordError, load_safetensors

        try:
            record = load_safetensors(path)
        except Exception as error:  # classified below
            return _error_verdict(error, path, RecordError)
        problems = safetensors_problems(record, data)
        return Verdict("silent", "; ".join(problems)[:500]) if problems else Verdict("correct")


def _odd_json(rng: random.Random, header: dict) -> tuple[bytes, str]:
    names = [k for k in header if k != "__metadata__"]
    action = rng.randrange(5)
    body = [json.dumps(k) + ":" + json.dumps(v) for k, v in header.items()]
    if action == 0 and names:
        name = rng.choice(names)
        other = dict(header[name])
        other["shape"] = [0] if rng.random() < 0.5 else other["shape"]
        body.append(json.dumps(name) + ":" + json.dumps(other))
        return ("{" + ",".join(body) + "}").encode(), f"tensor {name!r} twice"
    if action == 1 and names:
        name = rng.choice(names)
        literal = rng.choice(("1.0", "1e0", "-0", "NaN", "1e400", "18446744073709551616", "01", "true"))
        text = json.dumps(header[name]).replace("[", f"[{literal},", 1)
        return (
            "{" + ",".join(body[:-1] + [json.dumps(name) + ":" + text]) + "}"
        ).encode(), f"literal {literal} in {name!r}"
    if action == 2:
        return ("\ufeff" + json.dumps(header)).encode(), "a byte-order mark"
    if action == 3:
        meta = rng.choice(({"k": 1}, {"k": None}, {"k": ["v"]}, ["k"], "v", {1: "v"}))
        header = dict(header)
        header["__metadata__"] = meta
        return json.dumps(header).encode(), f"__metadata__ = {meta!r}"
    raw = json.dumps(header).encode()
    spot = rng.randrange(len(raw))
    return raw[:spot] + rng.choice((b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80")) + raw[spot:], "invalid UTF-8"


# -- SQLite dataset store -----------------------------------------------------------------------

_SPLITS = ("train", "test")


class SqliteTarget(Target):
    name = "sqlite"
    suffix = ".db"

    def _build_seeds(self) -> list[bytes]:
        import tempfile

        from ember.data import SqliteDataset, SqliteDatasetWriter

        rng = random.Random(2)
        rows = {
            split: [
                {
                    "text": f"{split} {i} " + "ab" * rng.randrange(0, 80) + ("z" * 5000 if i == 7 else ""),
                    "label": rng.randrange(-3, 10**12),
                    "score": rng.choice((0.5, -2.25, float("inf"), 1e300, None, float(i))),
                    "flag": rng.choice((True, False, None)),
                    "blob": bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))),
                    "tags": [i, {"k": split}] if i % 3 else None,
                }
                for i in range(count)
            ]
            for split, count in (("train", 60), ("test", 30))
        }
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "seed.db"
            with SqliteDatasetWriter(path) as writer:
                for split in _SPLITS:
                    writer.write_split(
                        split,
                        rows[split],
                        columns={
                            "text": "text",
                            "label": "int",
                            "score": "float",
                            "flag": "bool",
                            "blob": "blob",
                            "tags": "json",
                        },
                    )
            for split in _SPLITS:
                dataset = SqliteDataset(path, split)
                assert dataset.get_many(range(len(dataset))) == rows[split], "the seed does not round-trip"
                dataset.close()
            data = path.read_bytes()
        self.rows = rows
        return [data]

    def _mutate(self, rng: random.Random, data: bytes) -> tuple[bytes, str]:
        if rng.random() < 0.85:
            return sqlite_page_damage(rng, data)
        return havoc(rng, data)

    def judge(self, path: Path, which: int, data: bytes) -> Verdict:
        from ember.data import DatasetCorruptError, SqliteDataset

        verdicts = []
        try:
            splits = SqliteDataset.splits(path)
            if sorted(splits) != sorted(_SPLITS):
                verdicts.append(Verdict("silent", f"splits() gave {splits}"))
        except Exception as error:
            verdicts.append(_error_verdict(error, path, DatasetCorruptError))
        for split in _SPLITS:
            verdicts.append(self._read_split(path, split, DatasetCorruptError, SqliteDataset))
        for outcome in ("silent", "memory", "unclear", "clean"):
            for verdict in verdicts:
                if verdict.outcome == outcome:
                    return verdict
        return Verdict("correct")

    def _read_split(self, path: Path, split: str, error_type: type, dataset_type: type) -> Verdict:
        expected = self.rows[split]
        dataset = None
        try:
            dataset = dataset_type(path, split)
            if len(dataset) != len(expected):
                return Verdict("silent", f"{split}: {len(dataset)} items, {len(expected)} written")
            items = dataset.get_many(range(len(dataset)))
            if items != expected:
                wrong = next(i for i, (a, b) in enumerate(zip(items, expected)) if a != b)
                return Verdict("silent", f"{split}: item {wrong} is {items[wrong]!r:.80}")
            for index in (0, len(expected) // 2, len(expected) - 1):  # get(): its own query
                if dataset[index] != expected[index]:
                    return Verdict("silent", f"{split}: get({index}) is {dataset[index]!r:.80}")
            return Verdict("correct")
        except Exception as error:  # classified below
            verdict = _error_verdict(error, path, error_type)
            if verdict.outcome == "clean" and repr(split) not in str(error):
                return Verdict("unclear", f"the error does not name the split: {error}"[:300])
            return verdict
        finally:
            if dataset is not None:
                dataset.close()


class CanaryTarget(Target):
    """The harness's own check, not a file format: input `i` does, by `i % 7`, each thing
    the runner must tell apart (a clean error, a correct load, a wrong answer, an unclear
    error, a crash, a hang, a 256 MB memory blow-up: run it with a smaller memory constant),
    so a run over it proves they are counted."""

    name = "canary"
    suffix = ".bin"
    BEHAVIOURS = ("clean", "correct", "silent", "unclear", "crash", "hang", "memory")

    def _build_seeds(self) -> list[bytes]:
        return [b"canary"]

    def _mutate(self, rng: random.Random, data: bytes) -> tuple[bytes, str]:
        return data, "none"

    def make_input(self, seed: int, index: int) -> tuple[int, bytes, str]:
        return 0, self.BEHAVIOURS[index % 7].encode(), self.BEHAVIOURS[index % 7]

    def judge(self, path: Path, which: int, data: bytes) -> Verdict:
        import signal
        import time

        from ember.record import RecordError

        behaviour = path.read_bytes().decode()
        if behaviour == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if behaviour == "hang":
            time.sleep(3600)
        if behaviour == "memory":
            # zero-filled, so every page is touched: RSS grows; far above any earlier transient peak
            # of the child (imports, compilation), which would otherwise hide the rise
            hog = bytearray(256 << 20)
            hog[-1] = 1
            return Verdict("correct")
        try:
            if behaviour == "clean":
                raise RecordError(f"{path}: refused")
            if behaviour == "unclear":
                raise KeyError("no file named")
        except Exception as error:
            return _error_verdict(error, path, RecordError)
        return Verdict("silent" if behaviour == "silent" else "correct", behaviour)


TARGETS = {
    "bpk": BurnpackTarget,
    "safetensors": SafetensorsTarget,
    "sqlite": SqliteTarget,
    "canary": CanaryTarget,
}
FORMATS = ("bpk", "safetensors", "sqlite")  # what `--target all` runs


def make_target(name: str) -> Target:
    """Build the target called `name` (one of `TARGETS`)."""
    try:
        return TARGETS[name]()
    except KeyError:
        raise ValueError(f"unknown fuzz target {name!r}; expected one of {sorted(TARGETS)}") from None


def write_input(path: Path, data: bytes) -> None:
    """Replace `path` with `data` (a new file: a previous input may still be mapped)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    with open(path, "wb") as handle:
        handle.write(data)
