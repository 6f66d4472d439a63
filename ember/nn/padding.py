"""Padding choices of convolutions and pools (Burn's ``PaddingConfig1d``/``2d``/``3d``).

* ``Valid``: no padding.
* ``Same``: pad so that ``out = ceil(in / stride)``; an odd total puts the extra element at
  the end (bottom/right), as Burn and TensorFlow do.
* ``Explicit(...)``: given amounts — 1-D ``(left, right)``, 2-D ``(top, left, bottom, right)``
  (Burn's order), 3-D ``(depth, height, width)``, each on both sides (Burn's 3-D form).

Use them as ``PaddingConfig2d.Same``, ``PaddingConfig2d.Valid`` and
``PaddingConfig2d.Explicit(1, 1, 1, 1)``.
"""

from __future__ import annotations

from ember.record.config import Config

__all__ = ["PaddingConfig1d", "PaddingConfig2d", "PaddingConfig3d", "same_padding"]


def same_padding(kernel: int, stride: int, size: int, dilation: int = 1) -> tuple[int, int]:
    """(before, after) so that ``out = ceil(size / stride)``, using the dilated kernel extent."""
    extent = dilation * (kernel - 1) + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + extent - size, 0) if out > 0 else 0
    return total // 2, total - total // 2


def _check(name: str, values) -> None:
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name}: paddings must be non-negative ints, got {tuple(values)}")


class PaddingConfig1d(Config, frozen=True):
    """Padding of a 1-D convolution or pool (see the module docstring)."""

    def pairs(self, length: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
        """(left, right) padding for an input of ``length``."""
        raise NotImplementedError


class PaddingConfig2d(Config, frozen=True):
    """Padding of a 2-D convolution or pool (see the module docstring)."""

    def pairs(self, height: int, width: int, kernel, stride, dilation=(1, 1)):
        """((top, bottom), (left, right)) padding for an input of ``height`` × ``width``."""
        raise NotImplementedError


class PaddingConfig3d(Config, frozen=True):
    """Padding of a 3-D convolution (see the module docstring). ``Same`` pads an odd total
    one more at the end, where Burn refuses it (even kernels)."""

    def pairs(self, depth: int, height: int, width: int, kernel, stride, dilation=(1, 1, 1)):
        """((front, back), (top, bottom), (left, right)) padding for a ``depth × height × width`` input."""
        raise NotImplementedError


class _Valid1d(PaddingConfig1d):
    def pairs(self, length, kernel, stride, dilation=1):
        return 0, 0


class _Same1d(PaddingConfig1d):
    def pairs(self, length, kernel, stride, dilation=1):
        return same_padding(kernel, stride, length, dilation)


class _Explicit1d(PaddingConfig1d):
    left: int
    right: int | None = None

    def __post_init__(self):
        if self.right is None:
            object.__setattr__(self, "right", self.left)  # frozen dataclass
        _check("PaddingConfig1d.Explicit", (self.left, self.right))

    def pairs(self, length, kernel, stride, dilation=1):
        return self.left, self.right


class _Valid2d(PaddingConfig2d):
    def pairs(self, height, width, kernel, stride, dilation=(1, 1)):
        return (0, 0), (0, 0)


class _Same2d(PaddingConfig2d):
    def pairs(self, height, width, kernel, stride, dilation=(1, 1)):
        return (
            same_padding(kernel[0], stride[0], height, dilation[0]),
            same_padding(kernel[1], stride[1], width, dilation[1]),
        )


class _Explicit2d(PaddingConfig2d):
    top: int
    left: int
    bottom: int | None = None
    right: int | None = None

    def __post_init__(self):
        object.__setattr__(
            self, "bottom", self.top if self.bottom is None else self.bottom
        )  # frozen dataclass
        object.__setattr__(self, "right", self.left if self.right is None else self.right)
        _check("PaddingConfig2d.Explicit", (self.top, self.left, self.bottom, self.right))

    def pairs(self, height, width, kernel, stride, dilation=(1, 1)):
        return (self.top, self.bottom), (self.left, self.right)


class _Valid3d(PaddingConfig3d):
    def pairs(self, depth, height, width, kernel, stride, dilation=(1, 1, 1)):
        return (0, 0), (0, 0), (0, 0)


class _Same3d(PaddingConfig3d):
    def pairs(self, depth, height, width, kernel, stride, dilation=(1, 1, 1)):
        return tuple(
            same_padding(kernel[d], stride[d], size, dilation[d])
            for d, size in enumerate((depth, height, width))
        )


class _Explicit3d(PaddingConfig3d):
    depth: int
    height: int
    width: int

    def __post_init__(self):
        _check("PaddingConfig3d.Explicit", (self.depth, self.height, self.width))

    def pairs(self, depth, height, width, kernel, stride, dilation=(1, 1, 1)):
        return (self.depth, self.depth), (self.height, self.height), (self.width, self.width)


# The variants carry Burn's names, which is also how configs write them in JSON.
for _cls, _name in (
    (_Valid1d, "Valid"),
    (_Same1d, "Same"),
    (_Explicit1d, "Explicit"),
    (_Valid2d, "Valid"),
    (_Same2d, "Same"),
    (_Explicit2d, "Explicit"),
    (_Valid3d, "Valid"),
    (_Same3d, "Same"),
    (_Explicit3d, "Explicit"),
):
    _cls.__name__ = _name
    _cls.__qualname__ = f"{_cls.__mro__[1].__name__}.{_name}"

PaddingConfig1d.Valid = _Valid1d()
PaddingConfig1d.Same = _Same1d()
PaddingConfig1d.Explicit = _Explicit1d
PaddingConfig2d.Valid = _Valid2d()
PaddingConfig2d.Same = _Same2d()
PaddingConfig2d.Explicit = _Explicit2d
PaddingConfig3d.Valid = _Valid3d()
PaddingConfig3d.Same = _Same3d()
PaddingConfig3d.Explicit = _Explicit3d


# How each padding kind accepts shorthand: its Explicit class, the sides an int fills, the
# sequence lengths it takes, and those forms in words (for the error).
_SHORTHANDS = {
    PaddingConfig1d: (_Explicit1d, 2, (2,), "an int or (left, right)"),
    PaddingConfig2d: (_Explicit2d, 4, (2, 4), "an int, (h, w) or (top, left, bottom, right)"),
    PaddingConfig3d: (_Explicit3d, 3, (3,), "an int or (depth, height, width)"),
}


def _as_padding(value, kind: type):
    """``value`` as a padding of ``kind``: itself, 'same' / 'valid', or an Explicit shorthand."""
    if isinstance(value, kind):
        return value
    explicit, sides, lengths, forms = _SHORTHANDS[kind]
    if isinstance(value, int) and not isinstance(value, bool):
        return explicit(*[value] * sides)
    if isinstance(value, (tuple, list)) and len(value) in lengths:
        return explicit(*value)
    if isinstance(value, str) and value.lower() in ("same", "valid"):
        return kind.Same if value.lower() == "same" else kind.Valid
    raise TypeError(f"padding: expected a {kind.__name__}, 'same', 'valid', {forms}, got {value!r}")


def padding_1d(value) -> PaddingConfig1d:
    """Accept a PaddingConfig1d, an int (both sides) or a (left, right) pair."""
    return _as_padding(value, PaddingConfig1d)


def padding_2d(value) -> PaddingConfig2d:
    """Accept a PaddingConfig2d, an int, (h, w) (symmetric) or (top, left, bottom, right)."""
    return _as_padding(value, PaddingConfig2d)


def padding_3d(value) -> PaddingConfig3d:
    """Accept a PaddingConfig3d, an int (every side) or (depth, height, width) (both sides each)."""
    return _as_padding(value, PaddingConfig3d)
