"""Shared test utilities (importable as ``helpers`` because tests/conftest.py puts tests/ on sys.path)."""
