"""Launch geometry of ember's CUDA kernels (pure Python, testable without a GPU).

Every block size here stays within the ``__launch_bounds__`` of the kernel it serves, and
the shapes match the contract stated above each kernel in ``kernels/*.cu``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "ELEMENTWISE_THREADS",
    "OPTIM_CHUNK",
    "OPTIM_THREADS",
    "RowLaunch",
    "attention_dpad",
    "attention_fits",
    "attention_launch",
    "column_launch",
    "elementwise_launch",
    "row_fits",
    "row_launch",
]

ELEMENTWISE_THREADS = 256
MAX_ELEMENTWISE_BLOCKS = 65535  # grid-stride loops cover the rest
ROW_WARP_THREADS = 128  # 4 rows per block in warp-per-row mode
ROW_WARP_MAX_COLS = 1024  # wider rows get a whole block each
ROW_BLOCK_MAX_THREADS = 512  # = __launch_bounds__ of the row kernels
COLUMN_BLOCK = (32, 8)  # norm_param_grad
COLUMN_TARGET_BLOCKS = 1024
ATTENTION_THREADS = 128  # = ATT_THREADS in attention.cu
ATTENTION_MAX_DH = 128
OPTIM_THREADS = 256
OPTIM_CHUNK = 4096  # elements per block in the multi-tensor updates
MAX_GRID_Y = 65535
INT32_MAX = 2**31 - 1  # row lengths and counts are passed to the kernels as int32


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def elementwise_launch(n: int) -> tuple[tuple[int], tuple[int]]:
    """(grid, block) of a 1-D grid-stride kernel over ``n >= 1`` elements.

    Args:
        n: number of elements.
    """
    blocks = max(1, min(_cdiv(n, ELEMENTWISE_THREADS), MAX_ELEMENTWISE_BLOCKS))
    return (blocks,), (ELEMENTWISE_THREADS,)


@dataclass(frozen=True)
class RowLaunch:
    """How a row kernel (softmax, norms, cross-entropy) is launched."""

    warp: bool  #: one warp per row (True) or one block per row (False)
    grid: tuple[int]
    block: tuple[int]

    @property
    def warp_arg(self) -> str:
        """The WARP template argument."""
        return "true" if self.warp else "false"


def row_launch(rows: int, cols: int) -> RowLaunch:
    """Launch of a row kernel over ``rows >= 1`` rows of ``cols >= 1`` elements.

    Rows up to 1024 wide get one warp each (4 rows per 128-thread block); wider rows get one
    block each, of 256 threads up to 4096 columns and 512 beyond.

    Args:
        rows: number of rows.
        cols: row length.
    """
    if cols <= ROW_WARP_MAX_COLS:
        per_block = ROW_WARP_THREADS // 32
        return RowLaunch(True, (_cdiv(rows, per_block),), (ROW_WARP_THREADS,))
    threads = 256 if cols <= 4096 else ROW_BLOCK_MAX_THREADS
    return RowLaunch(False, (rows,), (threads,))


def row_fits(rows: int, cols: int) -> bool:
    """Whether a row kernel can take ``rows`` rows of ``cols >= 1`` elements: both fit the
    kernels' int32 arguments and the grid. The cuda backend runs the composed op otherwise.

    Args:
        rows: number of rows.
        cols: row length.
    """
    return 1 <= cols <= INT32_MAX and rows <= INT32_MAX


def rows_fit(x: Any, allow_empty: bool = False) -> bool:
    """Whether a row kernel (reducing the last axis) takes the array ``x``; an empty last
    axis only when the kernel's wrapper handles it (``allow_empty``).

    Args:
        x: the array whose rows the kernel reduces.
        allow_empty: accept a last axis of length 0.
    """
    rows = 1
    for s in x.shape[:-1]:
        rows *= int(s)
    cols = int(x.shape[-1]) if x.ndim else 1
    return row_fits(rows, cols) or (allow_empty and cols == 0)


def column_launch(rows: int, cols: int) -> tuple[tuple[int, int], tuple[int, int], int, int]:
    """Launch of a column-partial kernel (block (32, 8), grid (column tiles, row chunks)).

    Rows are split into chunks so that about COLUMN_TARGET_BLOCKS blocks run; each chunk has
    at least 32 rows unless there are fewer rows in total.

    Args:
        rows: number of rows (>= 1).
        cols: number of columns (>= 1).

    Returns:
        ``(grid, block, chunks, rows_per_chunk)`` with every chunk non-empty.
    """
    tiles = _cdiv(cols, COLUMN_BLOCK[0])
    chunks = max(1, min(_cdiv(rows, 32), _cdiv(COLUMN_TARGET_BLOCKS, tiles), MAX_GRID_Y))
    rows_per_chunk = _cdiv(rows, chunks)
    chunks = _cdiv(rows, rows_per_chunk)
    return (tiles, chunks), COLUMN_BLOCK, chunks, rows_per_chunk


def attention_dpad(dh: int) -> int:
    """Dh rounded up to the kernel specialisation (32, 64 or 128).

    Args:
        dh: head dimension, 1 <= dh <= 128.
    """
    for d in (32, 64, 128):
        if dh <= d:
            return d
    raise ValueError(f"head dimension {dh} exceeds {ATTENTION_MAX_DH}")


def attention_fits(bh: int, sq: int, sk: int, dh: int) -> bool:
    """Whether the fused attention kernels take ``bh`` heads of ``sq`` queries and ``sk >= 1``
    keys of dimension ``1 <= dh <= 128`` (query and key rows in one grid column). The cuda
    backend runs the composed attention otherwise.

    Args:
        bh: batch * heads.
        sq: query rows.
        sk: key rows.
        dh: head dimension.
    """
    if not (1 <= dh <= ATTENTION_MAX_DH and sk >= 1 and bh <= INT32_MAX):
        return False
    rows_per_block = ATTENTION_THREADS // (attention_dpad(dh) // 32)
    return _cdiv(max(sq, sk), rows_per_block) <= MAX_GRID_Y


def attention_launch(bh: int, rows: int, dpad: int) -> tuple[tuple[int, int], tuple[int]]:
    """(grid, block) of the attention kernels: grid (B*H, row blocks).

    Args:
        bh: batch * heads.
        rows: query rows (forward, dq) or key rows (dk/dv).
        dpad: padded head dimension.
    """
    rows_per_block = ATTENTION_THREADS // (dpad // 32)
    blocks = _cdiv(rows, rows_per_block)
    if blocks > MAX_GRID_Y:
        raise ValueError(f"attention: {rows} rows need {blocks} blocks > {MAX_GRID_Y}")
    return (bh, blocks), (ATTENTION_THREADS,)


def optim_chunks(sizes: list[int]) -> tuple[list[int], list[int]]:
    """Chunk table of a multi-tensor update: (tensor index, start element) per block.

    Args:
        sizes: element count of each tensor (empty tensors get no chunk).
    """
    tensor, start = [], []
    for t, n in enumerate(sizes):
        for s in range(0, n, OPTIM_CHUNK):
            tensor.append(t)
            start.append(s)
    return tensor, start
