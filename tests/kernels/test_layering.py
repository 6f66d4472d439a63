"""Layering: the kernels know only arrays, the tensor layer knows no modules or optimizers.

Every import statement of the checked packages is read from the source (the AST), wherever
it stands: at the top of a module, inside a function or method (the lazy imports that a
reading of the first lines misses), under ``if TYPE_CHECKING`` or ``try``; relative imports
are resolved against the importing module, and ``importlib.import_module`` /
``__import__`` calls with a literal name count too. A forbidden import fails the test with
its file, line and the rule it breaks.
"""

from __future__ import annotations

import ast
import pathlib

# read as source, not imported: the checkout's package, beside tests/
PACKAGE_ROOT = pathlib.Path(__file__).resolve().parents[2] / "ember"

# (package folder relative to the ember package, the packages it may not import, why)
RULES = (
    (
        "kernels",
        ("ember.nn", "ember.optim", "ember.train", "ember.data"),
        "kernels know only arrays: they may not import the layers built on them",
    ),
    ("tensor", ("ember.nn", "ember.optim"), "the tensor layer sits below modules and optimizers"),
)


def _module_name(root: pathlib.Path, path: pathlib.Path, package: str) -> list[str]:
    """The dotted module path of ``path`` (a file under ``root``) as a list of parts."""
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_names(source: str, module: list[str], is_package: bool) -> list[tuple[int, str]]:
    """Every module name ``source`` imports, with its line: ``from a import b`` gives both
    ``a`` and ``a.b`` (``b`` may be a submodule); relative imports are made absolute."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # a package's own __init__ is the anchor of `from . import x`
                anchor = module if is_package else module[:-1]
                base = anchor[: len(anchor) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module
            found.append((node.lineno, name))
            found += [(node.lineno, f"{name}.{alias.name}") for alias in node.names if alias.name != "*"]
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def _is_within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def violations(root: pathlib.Path, package: str = "ember", rules=RULES) -> list[str]:
    """The forbidden imports under ``root`` (the folder of ``package``), one line each."""
    problems = []
    for folder, banned, why in rules:
        for path in sorted((root / folder).rglob("*.py")):
            module = _module_name(root, path, package)
            reported = set()  # one line per statement, though `from a import b` gives a and a.b
            for line, name in imported_names(
                path.read_text(encoding="utf-8"), module, path.name == "__init__.py"
            ):
                hit = next((b for b in banned if _is_within(name, b)), None)
                if hit is not None and line not in reported:
                    reported.add(line)
                    problems.append(
                        f"{path.relative_to(root.parent)}:{line} imports {name} "
                        f"({package}/{folder} may not import {hit}: {why})"
                    )
    return problems


def test_kernels_and_tensor_import_nothing_above_them():
    root = PACKAGE_ROOT
    assert (root / "kernels" / "backend.py").is_file() and (root / "tensor").is_dir()
    problems = violations(root)
    assert not problems, "forbidden imports:\n" + "\n".join(problems)


def test_the_checker_finds_every_kind_of_forbidden_import(tmp_path):
    root = tmp_path / "ember"
    cpu = root / "kernels" / "cpu"
    cpu.mkdir(parents=True)
    (root / "tensor").mkdir()
    (root / "kernels" / "__init__.py").write_text("from . import cpu\n")  # allowed: its own child
    (cpu / "__init__.py").write_text("from .. import backend\n")
    (cpu / "top.py").write_text("import ember.optim.sgd\nfrom ember.tensor import dtypes\n")
    (cpu / "lazy.py").write_text("def f():\n    from ember.train import learner\n    return learner\n")
    (cpu / "relative.py").write_text("from ...data import loader\n")
    (cpu / "parent.py").write_text("from ember import nn\n")
    (cpu / "dynamic.py").write_text("import importlib\nm = importlib.import_module('ember.optim')\n")
    # names that only start like a banned package are allowed
    (cpu / "near.py").write_text("import ember.kernels.optimizer_ops\nimport ember.nnx\n")
    (root / "tensor" / "ops.py").write_text(
        "import ember.kernels.backend\nclass T:\n    def m(self):\n        import ember.nn.module\n"
    )
    problems = violations(root)
    found = {
        p.split(" imports ")[0].rsplit("/", 1)[-1]: p.split(" imports ")[1].split(" ")[0] for p in problems
    }
    assert found == {
        "top.py:1": "ember.optim.sgd",
        "lazy.py:2": "ember.train",
        "relative.py:1": "ember.data",
        "parent.py:1": "ember.nn",
        "dynamic.py:2": "ember.optim",
        "ops.py:4": "ember.nn.module",
    }, problems
    assert all("may not import" in p for p in problems)
