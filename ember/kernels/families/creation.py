"""Creation and transfer op family: new arrays, random draws, and moves to and from the host.

``shape`` is a tuple of ints, ``dtype`` an :class:`ember.core.dtypes.DType`.
"""

from __future__ import annotations

from ember.kernels.families.declare import primitive


class CreationOps:
    """Arrays from nothing, from the host, or from the backend's random generator."""

    @primitive
    def empty(self, shape, dtype):
        """An array of ``shape`` and ``dtype`` whose values are unspecified."""

    @primitive
    def full(self, shape, value, dtype):
        """An array of ``shape`` filled with ``value``."""

    @primitive
    def arange(self, start, stop, step, dtype):
        """``start, start + step, ...`` up to (not including) ``stop``."""

    @primitive
    def linspace(self, start, stop, num, dtype):
        """``num`` evenly spaced values from ``start`` to ``stop`` inclusive."""

    @primitive
    def eye(self, n, m, dtype):
        """The ``[n, m]`` identity matrix."""

    @primitive
    def from_host(self, array):
        """This backend's array holding a NumPy array's values (the array itself where it can)."""

    @primitive
    def to_host(self, x):
        """A NumPy array holding ``x``'s values."""

    @primitive
    def seed(self, seed):
        """Reseed this backend's generator (``None``: fresh entropy)."""

    @primitive
    def next_seed(self):
        """A fresh 63-bit seed from this backend's generator (dropout masks use it)."""

    @primitive
    def uniform(self, shape, dtype, low=0.0, high=1.0):
        """Draws from U[low, high)."""

    @primitive
    def normal(self, shape, dtype, mean=0.0, std=1.0):
        """Draws from N(mean, std²)."""

    @primitive
    def bernoulli(self, shape, p):
        """A bool array, each element True with probability ``p``."""

    @primitive
    def randint(self, shape, low, high, dtype):
        """Integers drawn uniformly from [low, high)."""
