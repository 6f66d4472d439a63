"""Sliding blocks as columns and back (Burn's ``Unfold4d`` / ``Fold4d``, PyTorch's ``nn.Unfold`` /
``nn.Fold``).

``Unfold4d`` turns ``[B, C, H, W]`` into ``[B, C·kh·kw, L]``: one column per block position
(L of them, row-major), each holding the block's elements channel-major then kernel row and
column. ``Fold4d`` is its adjoint: it adds every column back into a ``[B, C, H, W]`` image,
summing where blocks overlap (so ``fold(unfold(x))`` is ``x`` times how many blocks cover each
pixel). Both are built on the shared im2col index (``ember.nn.unfold``), so gradients come from
the ops' own rules. Neither has parameters.
"""

from __future__ import annotations

from ember.nn.module import Module
from ember.nn.unfold import fold_windows, out_size, per_axis, unfold_windows
from ember.record.config import Config
from ember.tensor.ops._core import shape_str
from ember.tensor.tensor import Tensor

__all__ = ["Fold4d", "Fold4dConfig", "Unfold4d", "Unfold4dConfig"]


def _settings(op: str, kernel_size, stride, dilation, padding) -> tuple:
    """(kernel, stride, dilation, padding) as pairs; kernel, stride and dilation positive."""
    kernel = per_axis(op, "kernel_size", kernel_size, 2)
    stride = per_axis(op, "stride", stride, 2)
    dilation = per_axis(op, "dilation", dilation, 2)
    padding = per_axis(op, "padding", padding, 2)
    if min(kernel + stride + dilation) <= 0 or min(padding) < 0:
        raise ValueError(
            f"{op}: kernel_size, stride and dilation must be positive and padding non-negative, got "
            f"kernel_size={list(kernel)}, stride={list(stride)}, dilation={list(dilation)}, padding={list(padding)}"
        )
    return kernel, stride, dilation, padding


def _blocks(op: str, size: tuple, kernel, stride, dilation, padding) -> tuple:
    """Block positions per axis over a ``size`` image padded by ``padding`` on both sides."""
    blocks = tuple(out_size(size[d] + 2 * padding[d], kernel[d], stride[d], dilation[d]) for d in range(2))
    if min(blocks) <= 0:
        raise ValueError(
            f"{op}: the image {list(size)} padded by {list(padding)} is smaller than the dilated kernel "
            f"{list(kernel)} (dilation {list(dilation)})"
        )
    return blocks


class _Blocks(Module):
    """What Unfold4d and Fold4d share: the block geometry (kernel size, stride, dilation and
    padding, each a pair), the block positions it gives over an image, and its display."""

    def _set_blocks(self, op: str, kernel_size, stride, dilation, padding) -> None:
        self.kernel_size, self.stride, self.dilation, self.padding = _settings(
            op, kernel_size, stride, dilation, padding
        )

    def _block_counts(self, op: str, size: tuple) -> tuple:
        """Block positions per axis over an image of ``size``."""
        return _blocks(op, size, self.kernel_size, self.stride, self.dilation, self.padding)

    def extra_repr(self) -> dict:
        return {
            "kernel_size": list(self.kernel_size),
            "stride": list(self.stride),
            "dilation": list(self.dilation),
            "padding": list(self.padding),
        }


class Unfold4dConfig(Config):
    """Configuration of :class:`Unfold4d`.

    Args:
        kernel_size: ``(kh, kw)`` of the blocks; an int ``k`` means ``(k, k)``.
        stride: ``(sh, sw)`` between blocks ((1, 1)); an int means the same on both axes.
        dilation: ``(dh, dw)`` spacing of a block's elements ((1, 1)).
        padding: ``(ph, pw)`` zeros on both sides of each axis ((0, 0)).
    """

    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)

    def __post_init__(self):
        self.kernel_size, self.stride, self.dilation, self.padding = _settings(
            "Unfold4dConfig", self.kernel_size, self.stride, self.dilation, self.padding
        )

    def init(self, device=None, dtype=None) -> "Unfold4d":
        """Build the layer (it has no parameters)."""
        return Unfold4d(self.kernel_size, self.stride, self.dilation, self.padding)


class Unfold4d(_Blocks):
    """``[B, C, H, W] -> [B, C·kh·kw, L]``, the blocks as columns (see the module docstring).

    Args:
        kernel_size, stride, dilation, padding: as in the config.
    """

    def __init__(
        self,
        kernel_size: tuple[int, int],
        stride: tuple[int, int] = (1, 1),
        dilation: tuple[int, int] = (1, 1),
        padding: tuple[int, int] = (0, 0),
    ):
        self._set_blocks("Unfold4d", kernel_size, stride, dilation, padding)

    def forward(self, x: Tensor) -> Tensor:
        """The blocks of ``x [B, C, H, W]`` as columns.

        Args:
            x: the image batch.

        Returns:
            ``[B, C·kh·kw, L]``.

        Raises:
            ValueError: not a 4-D input, or an image smaller than the dilated kernel.
        """
        if not isinstance(x, Tensor) or x.ndim != 4:
            got = shape_str(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"Unfold4d: expected input [batch, channels, height, width], got {got}")
        b, c = x.shape[:2]
        blocks = self._block_counts("Unfold4d", tuple(x.shape[2:]))
        ph, pw = self.padding
        if ph or pw:
            x = x.pad((pw, pw, ph, ph), 0.0)
        cols = unfold_windows(x, self.kernel_size, self.stride, self.dilation, blocks)  # [B, C, K, L]
        return cols.reshape(b, c * self.kernel_size[0] * self.kernel_size[1], blocks[0] * blocks[1])


class Fold4dConfig(Config):
    """Configuration of :class:`Fold4d`.

    Args:
        output_size: ``(H, W)`` of the image to build; an int means a square.
        kernel_size: ``(kh, kw)`` of the blocks; an int ``k`` means ``(k, k)``.
        stride: ``(sh, sw)`` between blocks ((1, 1)); an int means the same on both axes.
        dilation: ``(dh, dw)`` spacing of a block's elements ((1, 1)).
        padding: ``(ph, pw)`` dropped from both sides of each axis ((0, 0)).
    """

    output_size: tuple[int, int]
    kernel_size: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)

    def __post_init__(self):
        self.output_size = per_axis("Fold4dConfig", "output_size", self.output_size, 2)
        self.kernel_size, self.stride, self.dilation, self.padding = _settings(
            "Fold4dConfig", self.kernel_size, self.stride, self.dilation, self.padding
        )

    def init(self, device=None, dtype=None) -> "Fold4d":
        """Build the layer (it has no parameters)."""
        return Fold4d(self.output_size, self.kernel_size, self.stride, self.dilation, self.padding)


class Fold4d(_Blocks):
    """``[B, C·kh·kw, L] -> [B, C, H, W]``, overlapping blocks summed (see the module docstring).

    Args:
        output_size, kernel_size, stride, dilation, padding: as in the config.
    """

    def __init__(
        self,
        output_size: tuple[int, int],
        kernel_size: tuple[int, int],
        stride: tuple[int, int] = (1, 1),
        dilation: tuple[int, int] = (1, 1),
        padding: tuple[int, int] = (0, 0),
    ):
        self.output_size = per_axis("Fold4d", "output_size", output_size, 2)
        if min(self.output_size) <= 0:
            raise ValueError(f"Fold4d: output_size must be positive, got {list(self.output_size)}")
        self._set_blocks("Fold4d", kernel_size, stride, dilation, padding)

    def forward(self, x: Tensor) -> Tensor:
        """Sum the columns of ``x`` into images.

        Args:
            x: ``[B, C·kh·kw, L]`` with L the number of block positions in the output.

        Returns:
            ``[B, C, H, W]``.

        Raises:
            ValueError: not a 3-D input, a second dim that is not a multiple of ``kh·kw``, or
                an L that does not match ``output_size``.
        """
        k = self.kernel_size[0] * self.kernel_size[1]
        blocks = self._block_counts("Fold4d", self.output_size)
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[1] % k or x.shape[2] != blocks[0] * blocks[1]:
            got = shape_str(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(
                f"Fold4d: expected input [batch, channels · {k}, {blocks[0] * blocks[1]}] (kernel "
                f"{list(self.kernel_size)}, {blocks[0]}x{blocks[1]} blocks in the output "
                f"{list(self.output_size)}), got {got}"
            )
        b, c = x.shape[0], x.shape[1] // k
        (ph, pw), (h, w) = self.padding, self.output_size
        padded = (h + 2 * ph, w + 2 * pw)
        image = fold_windows(
            x.reshape(b, c, k, blocks[0] * blocks[1]),
            padded,
            self.kernel_size,
            self.stride,
            self.dilation,
            blocks,
        )
        if ph:
            image = image.narrow(2, ph, h)
        if pw:
            image = image.narrow(3, pw, w)
        return image

    def extra_repr(self) -> dict:
        return {"output_size": list(self.output_size), **super().extra_repr()}
