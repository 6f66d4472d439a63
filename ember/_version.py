"""ember's version: a leaf that imports nothing, so every layer can stamp what it writes."""

__version__ = "0.1.0"
