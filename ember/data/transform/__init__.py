"""Dataset transforms: wrappers that sample, reorder, cut, map, chain or window datasets."""

from .composed import ComposedDataset
from .mapper import MapperDataset
from .partial import PartialDataset
from .sampler import SamplerDataset
from .shuffled import ShuffledDataset
from .windows import WindowsDataset

__all__ = [
    "ComposedDataset",
    "MapperDataset",
    "PartialDataset",
    "SamplerDataset",
    "ShuffledDataset",
    "WindowsDataset",
]
