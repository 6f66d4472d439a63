"""Number formatting as Burn writes it: Rust's ``f64`` Display/Debug and the TUI's ``format_float``.

Metric ``.log`` files hold numbers as Rust's ``{}`` (Display) prints an ``f64``: the shortest
digits that round-trip, never an exponent, no ``.0`` on integers (``100``, ``0.5``,
``0.0000001``, ``1000000000000000000000``, ``NaN``, ``inf``, ``-inf``, ``-0``). Python's
``repr`` gives the shortest round-trip digits, with one difference: when the double lies
exactly halfway between two shortest candidates (``112171935477118.125`` → ``…118.12`` or
``…118.13``), Python takes the even digit and Rust the larger magnitude (rust-lang/rust
#130936), so that case is corrected.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np

__all__ = ["format_f32", "format_f64", "format_f64_debug", "format_float"]


def _special(x: float) -> str | None:
    """Rust's spelling of NaN and the infinities, or None for a finite number."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return None


def _shortest(x: float) -> Decimal:
    """The shortest round-trip decimal of a finite non-zero ``x``, ties broken as Rust does."""
    digits = Decimal(repr(x)).normalize()
    exact, near = Fraction(x), Fraction(digits)
    if near == exact or abs(near) > abs(exact):
        return digits  # exact, or already the larger-magnitude candidate
    # one unit in the last place, away from zero: the other candidate of the same length
    farther = digits + Decimal((0, (1,), digits.as_tuple().exponent)).copy_sign(digits)
    if Fraction(farther) - exact == exact - near and float(farther) == x:
        return farther
    return digits


def _positional(x: float) -> str:
    """Lay out the shortest digits of ``x`` without exponent or ``.0``."""
    text = format(_shortest(x), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def format_f64(x: float) -> str:
    """``x`` as Rust's ``f64`` Display (``format!("{}", x)``) prints it.

    Args:
        x: any real number (Python/NumPy float or int); converted to a 64-bit float.

    Returns:
        Shortest round-trip digits in positional notation: ``100``, ``0.1``, ``0.0000001``,
        ``1000000000000000000000``, ``NaN``, ``inf``, ``-inf``, ``-0``.
    """
    x = float(x)
    special = _special(x)
    if special is not None:
        return special
    if x == 0.0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    return _positional(x)


def format_f32(x: float) -> str:
    """``x`` rounded to ``f32`` and printed as Rust's ``f32`` Display (``0.3`` stays ``0.3``).

    Args:
        x: any real number; rounded to the nearest 32-bit float first.
    """
    with np.errstate(over="ignore"):  # beyond f32's range is inf, as Rust's `as f32`
        value = np.float32(x)
    special = _special(float(value))
    if special is not None:
        return special
    # NumPy's `unique=True` gives the shortest digits that round-trip *as float32*.
    text = np.format_float_positional(value, unique=True, trim="-")
    return "-0" if text in ("-0", "-0.") else text


def format_f64_debug(x: float) -> str:
    """``x`` as Rust's ``f64`` Debug (``{:?}``) prints it, as in Burn's metric names
    (``Threshold(0.5)``, ``Threshold(1.0)``).

    Rust switches to exponent notation when ``|x| < 1e-4`` (non-zero) or ``|x| >= 1e16``,
    and otherwise keeps at least one fractional digit.

    Args:
        x: any real number.
    """
    x = float(x)
    special = _special(x)
    if special is not None:
        return special
    magnitude = abs(x)
    if magnitude != 0.0 and (magnitude < 1e-4 or magnitude >= 1e16):
        sign, digits, exponent = _shortest(x).normalize().as_tuple()
        text = "".join(map(str, digits))
        power = exponent + len(text) - 1
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{'-' if sign else ''}{mantissa}e{power}"
    text = format_f64(x)
    return text if "." in text else text + ".0"


def format_float(x: float, precision: int = 2) -> str:
    """Burn's TUI number format (``metric/base.rs::format_float``).

    Scientific notation with ``precision`` decimals (Rust's ``{:.2e}``: ``5.00e-2``) when
    ``|x| <= 0.1^(precision-1)``, else fixed with ``precision`` decimals (``84.38``).
    Burn compares ``x`` itself, which turns every negative number scientific; ember compares
    ``|x|`` as the training contract specifies.

    Args:
        x: the value.
        precision: decimals after the point.
    """
    x = float(x)
    special = _special(x)
    if special is not None:
        return special
    threshold = 0.1 ** (precision - 1.0)
    if abs(x) <= threshold:
        mantissa, _, exponent = f"{x:.{precision}e}".partition("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{x:.{precision}f}"
