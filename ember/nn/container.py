"""Structural modules: ``Identity`` and ``Sequential``."""

from __future__ import annotations

from collections.abc import Iterator

from ember.nn.module import Module

__all__ = ["Identity", "Sequential"]


class Identity(Module):
    """Returns its input unchanged."""

    def forward(self, x):
        return x


class Sequential(Module):
    """Calls its modules in order, each on the previous one's output.

    Parameters are named by position: ``Sequential(Linear, Relu, Linear)`` has
    ``layers.0.weight``, ``layers.2.weight``...

    Args:
        *modules: the modules (or a single list of them).
    """

    def __init__(self, *modules: Module):
        if len(modules) == 1 and isinstance(modules[0], (list, tuple)):
            modules = tuple(modules[0])
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: item {i} is a {type(m).__name__}, expected a Module")
        self.layers = list(modules)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def append(self, module: Module) -> "Sequential":
        if not isinstance(module, Module):
            raise TypeError(f"Sequential.append: expected a Module, got {type(module).__name__}")
        self.layers.append(module)
        return self

    def __len__(self) -> int:
        return len(self.layers)

    def __getitem__(self, index: int) -> Module:
        return self.layers[index]

    def __iter__(self) -> Iterator[Module]:
        return iter(self.layers)
