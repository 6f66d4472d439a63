"""The guide's data (Burn book, "Data"): items, the batcher, and two sources of digits.

* ``mnist``: MNIST (60 000 train / 10 000 test images, 28×28, intensities 0..255) from the
  Hugging Face Hub through ``ember.data.HuggingfaceDatasetLoader("ylecun/mnist")``; it needs
  ``datasets`` and Pillow, and the network the first time (later runs read the SQLite cache).
* ``digits``: scikit-learn's bundled handwritten digits (1 797 images, 8×8, intensities
  0..16; real data from the UCI repository shipped inside scikit-learn, so it works offline),
  split once and for all into 1 437 train / 360 test images, stratified by class with a fixed
  random state.

Both give :class:`MnistItem` (raw intensities and a label); :class:`MnistBatcher` normalises
them as the book does: ``((pixel / max_value) - mean) / std``, with the book's
``mean = 0.1307, std = 0.3081`` for MNIST (from the PyTorch MNIST example) and, for the
digits, the same statistics measured on their train split (:data:`DIGITS_MEAN`, :data:`DIGITS_STD`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

import ember  # before NumPy (ember's OpenBLAS setting, see the README)
from ember.data import (
    DataLoaderBuilder,
    HuggingfaceDatasetLoader,
    InMemDataset,
    MapperDataset,
    PartialDataset,
)

__all__ = [
    "DIGITS_MEAN",
    "DIGITS_STD",
    "MNIST_MEAN",
    "MNIST_STD",
    "SOURCES",
    "MnistBatch",
    "MnistBatcher",
    "MnistItem",
    "digits_datasets",
    "load_datasets",
    "load_loaders",
    "mnist_datasets",
]

SOURCES = ("digits", "mnist")
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081  # the book's values (PyTorch's MNIST example)
DIGITS_MEAN, DIGITS_STD = 0.3059, 0.3763  # measured on the digits' train split below, scaled to [0, 1]
DIGITS_TEST_FRACTION = 0.2
DIGITS_SPLIT_SEED = 42


@dataclass(frozen=True)
class MnistItem:
    """One image and its label (Burn's ``MnistItem``).

    Args:
        image: float32 ``[height, width]`` raw intensities (0..255 for MNIST, 0..16 for digits).
        label: the digit, 0..9.
    """

    image: np.ndarray
    label: int


@dataclass
class MnistBatch:
    """A batch of images and targets (Burn's ``MnistBatch``).

    Args:
        images: float32 ``[batch_size, height, width]``, normalised.
        targets: int64 ``[batch_size]``.
    """

    images: ember.Tensor
    targets: ember.Tensor


@dataclass(frozen=True)
class MnistBatcher:
    """Stacks :class:`MnistItem` s into an :class:`MnistBatch`, normalising the images.

    The defaults are MNIST's; :meth:`for_source` gives the batcher of a source.

    Args:
        max_value: the largest raw intensity (255 for MNIST, 16 for the digits).
        mean: mean of the intensities scaled to [0, 1].
        std: their standard deviation.
    """

    max_value: float = 255.0
    mean: float = MNIST_MEAN
    std: float = MNIST_STD

    @classmethod
    def for_source(cls, source: str) -> "MnistBatcher":
        """The batcher of ``"mnist"`` or ``"digits"``.

        Args:
            source: one of :data:`SOURCES`.
        """
        if source == "mnist":
            return cls(255.0, MNIST_MEAN, MNIST_STD)
        if source == "digits":
            return cls(16.0, DIGITS_MEAN, DIGITS_STD)
        raise ValueError(f"MnistBatcher.for_source: unknown source {source!r}; expected one of {SOURCES}")

    def batch(self, items: list[MnistItem], device) -> MnistBatch:
        """Build one batch on ``device``.

        Args:
            items: the batch's items (all images of one size).
            device: where the tensors are created.
        """
        images = np.stack([np.asarray(item.image, dtype=np.float32) for item in items])
        images = ((images / np.float32(self.max_value)) - np.float32(self.mean)) / np.float32(self.std)
        targets = np.array([item.label for item in items], dtype=np.int64)
        return MnistBatch(
            ember.from_numpy(images.astype(np.float32), device=device),
            ember.from_numpy(targets, device=device),
        )


# ---- scikit-learn's digits ---------------------------------------------------------------------
def digits_datasets() -> tuple[InMemDataset, InMemDataset]:
    """The 8×8 digits as ``(train, test)`` datasets of :class:`MnistItem` (1 437 / 360).

    Raises:
        ImportError: when scikit-learn is not installed (``pip install scikit-learn``).
    """
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as exc:
        raise ImportError(
            "the 'digits' source needs scikit-learn (pip install scikit-learn); "
            f"it could not be imported: {exc}"
        ) from None
    digits = load_digits()
    images = digits.images.astype(np.float32)  # [1797, 8, 8], 0..16
    labels = digits.target.astype(np.int64)
    train_idx, test_idx = train_test_split(
        np.arange(len(labels)),
        test_size=DIGITS_TEST_FRACTION,
        random_state=DIGITS_SPLIT_SEED,
        stratify=labels,
    )

    def items(indices):
        return InMemDataset([MnistItem(images[i], int(labels[i])) for i in indices])

    return items(train_idx), items(test_idx)


# ---- MNIST from the Hugging Face Hub -----------------------------------------------------------
def mnist_row_to_item(row: dict) -> MnistItem:
    """Decode one row of the ``ylecun/mnist`` SQLite cache (PNG bytes + label).

    Module level, so that data-loader workers can unpickle it.

    Args:
        row: ``{"image_bytes": bytes, "image_path": ..., "label": int}``.
    """
    try:
        from PIL import Image
    except ImportError as exc:
        raise ImportError(
            f"the 'mnist' source needs Pillow to decode its PNG images (pip install pillow): {exc}"
        ) from None
    data = row.get("image_bytes")
    if data is None and isinstance(row.get("image"), dict):
        data = row["image"].get("bytes")
    if data is None:
        raise ValueError(f"mnist_row_to_item: expected an 'image_bytes' column, got columns {sorted(row)}")
    image = np.asarray(Image.open(io.BytesIO(data)).convert("L"), dtype=np.float32)
    return MnistItem(image, int(row["label"]))


def mnist_datasets() -> tuple[MapperDataset, MapperDataset]:
    """MNIST's ``(train, test)`` splits from the Hub (converted to SQLite on first use).

    Raises:
        ember.data.DatasetUnavailableError: when the Hub cannot be reached and nothing is
            cached (the message says what to do).
    """
    loader = HuggingfaceDatasetLoader("ylecun/mnist")
    return (
        MapperDataset(loader.dataset("train"), mnist_row_to_item),
        MapperDataset(loader.dataset("test"), mnist_row_to_item),
    )


def load_datasets(source: str):
    """``(train, test)`` datasets of :class:`MnistItem` for ``source``.

    Args:
        source: ``"digits"`` (offline, scikit-learn) or ``"mnist"`` (Hugging Face Hub).
    """
    if source == "digits":
        return digits_datasets()
    if source == "mnist":
        return mnist_datasets()
    raise ValueError(f"load_datasets: unknown source {source!r}; expected one of {SOURCES}")


def load_loaders(source: str, config, device, limit: int | None = None):
    """``(train, test)`` data loaders of ``source``, as the book builds them: ``config.batch_size``
    items a batch, both shuffled by ``config.seed``, ``config.num_workers`` workers, batches on
    ``device``; the train split cut to its first ``limit`` items (None: all)."""
    train_set, test_set = load_datasets(source)
    if limit is not None:
        train_set = PartialDataset(train_set, 0, min(limit, len(train_set)))
    batcher = MnistBatcher.for_source(source)

    def loader(dataset):
        return (
            DataLoaderBuilder(batcher)
            .batch_size(config.batch_size)
            .shuffle(config.seed)
            .num_workers(config.num_workers)
            .set_device(device)
            .build(dataset)
        )

    return loader(train_set), loader(test_set)
