"""NumPy helpers of the cuda kernel tests: tolerances and the dropout hash transcription."""

from __future__ import annotations

import numpy as np

DTYPES = (np.float32, np.float16, np.float64)

# (rtol, atol) of a kernel result against a float64 NumPy reference computed from the same
# (rounded) inputs: float32 tight, float16 loose (half-precision storage of the result).
_TOL = {
    np.dtype(np.float64): (1e-9, 1e-11),
    np.dtype(np.float32): (1e-4, 1e-5),
    np.dtype(np.float16): (1e-2, 1e-2),
}


def assert_close(got, want, dtype, scale: float = 1.0, what: str = "") -> None:
    """Compare a kernel result with a float64 reference at the tolerance of ``dtype``.

    Args:
        got: kernel output (host array).
        want: reference (host array).
        dtype: the op's input dtype, which sets the tolerance.
        scale: multiplies the absolute tolerance (for results with large magnitudes).
        what: label for the failure message.
    """
    rtol, atol = _TOL[np.dtype(dtype)]
    got = np.asarray(got)
    assert got.shape == np.shape(want), f"{what}: shape {got.shape} != {np.shape(want)}"
    np.testing.assert_allclose(
        got.astype(np.float64), np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol * scale, err_msg=what
    )


def rounded(a, dtype):
    """``a`` rounded to ``dtype`` (what the kernel sees) and back to float64 (for references)."""
    r = np.asarray(a).astype(dtype)
    return r, r.astype(np.float64)


def keep_mask(n: int, p: float, seed: int) -> np.ndarray:
    """Dropout keep-mask of the contract's counter hash, transcribed independently.

    For flat index i: z = seed + (i+1)*0x9E3779B97F4A7C15; z = (z ^ z>>30)*0xBF58476D1CE4E5B9;
    z = (z ^ z>>27)*0x94D049BB133111EB; z ^= z>>31; keep = (z>>40) * 2^-24 >= p (mod 2^64).
    """
    u64 = np.uint64
    i = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = u64(seed % (1 << 64)) + (i + u64(1)) * u64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> u64(30))) * u64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> u64(27))) * u64(0x94D049BB133111EB)
        z = z ^ (z >> u64(31))
    u = (z >> u64(40)).astype(np.float64) * 2.0**-24
    return u >= p
