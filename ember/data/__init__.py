"""ember's data pipeline (mirrors Burn's burn-dataset and data loader).

- datasets: `Dataset` (protocol base), `InMemDataset`, `SqliteDataset`;
- storage: `SqliteDatasetWriter`, `HuggingfaceDatasetLoader`, `huggingface_to_sqlite`,
  `DatasetCorruptError` (a damaged SQLite file);
- transforms: `SamplerDataset`, `ShuffledDataset`, `PartialDataset`, `MapperDataset`,
  `ComposedDataset`, `WindowsDataset`;
- batching: `Batcher` (protocol), `DataLoaderBuilder`, `DataLoader`, `Progress`.

`datasets` (Hugging Face) is optional and imported only when a conversion runs.
"""

from .batcher import Batcher
from .dataloader import DataLoader, DataLoaderBuilder, DataLoaderIterator, default_start_method
from .dataset import Dataset, check_index, fetch_many, set_epoch
from .huggingface import (
    DatasetUnavailableError,
    HuggingfaceDatasetLoader,
    default_cache_dir,
    huggingface_to_sqlite,
)
from .in_memory import InMemDataset
from .progress import Progress
from .sqlite import DatasetCorruptError, SqliteDataset
from .sqlite_writer import SqliteDatasetWriter
from .transform import (
    ComposedDataset,
    MapperDataset,
    PartialDataset,
    SamplerDataset,
    ShuffledDataset,
    WindowsDataset,
)
from .worker import DataLoaderWorkerError, RemoteTraceback

__all__ = [
    "Batcher",
    "ComposedDataset",
    "DataLoader",
    "DataLoaderBuilder",
    "DataLoaderIterator",
    "DataLoaderWorkerError",
    "Dataset",
    "DatasetCorruptError",
    "DatasetUnavailableError",
    "HuggingfaceDatasetLoader",
    "InMemDataset",
    "MapperDataset",
    "PartialDataset",
    "Progress",
    "RemoteTraceback",
    "SamplerDataset",
    "ShuffledDataset",
    "SqliteDataset",
    "SqliteDatasetWriter",
    "WindowsDataset",
    "check_index",
    "default_cache_dir",
    "default_start_method",
    "fetch_many",
    "huggingface_to_sqlite",
    "set_epoch",
]
