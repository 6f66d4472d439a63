"""Structure-aware fuzzer for ember's file readers: burnpack (`.bpk`), safetensors and the
SQLite dataset store.

Each input is a seed file damaged in a way that knows its format (header fields, CBOR or
JSON metadata, offsets, dtypes, shapes, truncation; for SQLite, whole pages copied, swapped
or zeroed, b-tree page headers and cells, database-header fields), loaded in a child process
(so crashes and hangs are caught, with a per-input timeout and bounded memory), and judged
against the file's own declaration (`targets`). Long runs: `python -m tools.fuzz --inputs
1000000 --target all`; `tests/reliability/test_fuzz.py` runs a CI-sized campaign.
"""

from .runner import Finding, Tally, run
from .table import format_table
from .targets import FORMATS, TARGETS

__all__ = ["FORMATS", "TARGETS", "Finding", "Tally", "format_table", "run"]
