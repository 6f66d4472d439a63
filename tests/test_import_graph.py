"""The import graph of ``ember/``: layers point one way, no circle, no function-level import of
an ember module without a reason.

Every module of ``ember/`` is parsed (not imported) and each import statement read where it
stands: at module level (class bodies and ``if``/``try`` blocks included), under ``if
TYPE_CHECKING`` (type-only: no circle at run time, but still bound by the layers) or inside a
function. Relative imports are resolved against the importing module; ``from a import b`` is an
edge to ``a.b`` when that is a module, else to ``a``; ``importlib.import_module("literal")`` counts
as an import. An import of ``a.b.c`` does run the ``__init__`` of ``a`` and ``a.b`` too; those
implicit edges are left out (every submodule would otherwise import ``ember/__init__``).

Three checks: (a) the module-level imports form no circle; (b) no import, wherever it stands,
points to a layer above the importer's (the layers are declared in ``ember/_layers.py``); (c) a
function-level import of an ember module is listed in ``LATE_IMPORTS`` with its reason.
"""

from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass

from ember._layers import LAYERS, layer_of

# read as source, not imported: the checkout's package, beside tests/
PACKAGE_ROOT = pathlib.Path(__file__).resolve().parents[1] / "ember"

# The one list of function-level imports of ember modules, (importer, imported) -> why. "late:"
# entries load an optional or heavy dependency (Numba, CuPy, rich, the C++ extension) on first
# use, so that `import ember` needs none of them: they stay. "debt:" entries are to be removed
# (an upward one is exempt from the layer check only while it is listed here).
LATE = "late: "
DEBT = "debt: "
LATE_IMPORTS: dict[tuple[str, str], str] = {
    ("ember.cuda", "ember.kernels.cuda.runtime"): LATE
    + "CuPy's loader and the CUDA kernel package, on first call",
    ("ember.kernels.registry", "ember.kernels.cpu.backend"): LATE
    + "a backend loads on first use; this one, Numba",
    ("ember.kernels.registry", "ember.kernels.cuda.backend"): LATE
    + "a backend loads on first use; this one, CuPy",
    ("ember.kernels.registry", "ember.kernels.torch.backend"): LATE
    + "a backend loads on first use; this one, PyTorch",
    ("ember.kernels.registry", "ember.kernels.reference"): LATE
    + "a backend loads on first use (`import ember` loads none)",
    ("ember.kernels.registry", "ember.kernels.host_memory"): LATE
    + "the allocator tuning (ctypes.util, which imports subprocess), with the first host backend",
    ("ember.kernels.cpu.background_compile", "ember.kernels.cpu.jit"): LATE
    + "Numba, for a kernel-cache fingerprint only",
    ("ember.kernels.native_ops", "ember.kernels"): LATE
    + "the optional C++ extension (ember.kernels._native)",
    ("ember.tensor.tensor", "ember.tensor.backward"): LATE
    + "the autodiff engine and its VJP table, on the first backward(): not part of `import ember`",
    ("ember.train.renderer", "ember.train.renderer.tui"): LATE
    + "the dashboard imports rich, an optional dependency",
    ("ember.train.renderer.default", "ember.train.renderer.tui"): LATE
    + "the dashboard imports rich, an optional dependency",
}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    where: str  # "module", "type" (under TYPE_CHECKING) or "function"


def module_names(root: pathlib.Path, package: str = "ember") -> dict[str, pathlib.Path]:
    """Dotted name -> file, for every module under ``root`` (the folder of ``package``)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST):
    """(node, where) for each import statement or import_module call in ``tree``."""

    def visit(node, where):
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = "function"
            elif isinstance(child, ast.If) and where == "module" and _is_type_checking(child.test):
                yield from visit(ast.Module(body=child.body), "type")
                yield from visit(ast.Module(body=child.orelse), where)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom) or (
                isinstance(child, ast.Call)
                and child.args
                and isinstance(child.args[0], ast.Constant)
                and isinstance(child.args[0].value, str)
                and getattr(child.func, "attr", getattr(child.func, "id", None))
                in ("import_module", "__import__")
            ):
                yield child, inner
            yield from visit(child, inner)

    yield from visit(tree, "module")


def _known(name: str, modules) -> str | None:
    """``name`` when it is a module of ``ember/`` (a source file), else None: a third-party
    module, the C++ extension, or a file not written yet (which fails at run time anyway)."""
    return name if name in modules else None


def imports_of(name: str, path: pathlib.Path, modules) -> list[Import]:
    """The imports of ember modules made by module ``name`` (one per statement and target)."""
    found = {}
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node, where in _statements(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            targets = [
                f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names
            ]
        else:
            targets = [node.args[0].value]
        for target in targets:
            resolved = _known(target, modules)
            if resolved is not None and resolved != name:
                found.setdefault((resolved, node.lineno), Import(name, resolved, node.lineno, where))
    return list(found.values())


def import_graph(root: pathlib.Path = PACKAGE_ROOT) -> list[Import]:
    modules = module_names(root)
    return [imp for name, path in modules.items() for imp in imports_of(name, path, modules)]


def cycles(imports: list[Import]) -> list[list[str]]:
    """One circle per strongly connected group of the module-level imports, as a path a -> ... -> a."""
    edges: dict[str, set[str]] = {}
    for imp in imports:
        if imp.where == "module":
            edges.setdefault(imp.importer, set()).add(imp.imported)
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def connect(node):  # Tarjan's algorithm; the graph is a few hundred modules deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            connect(node)
    found = []
    for group in groups:  # the shortest circle through the group's first module, by breadth-first search
        start = min(group)
        paths, seen = [[start]], {start}
        while paths:
            path = paths.pop(0)
            nxt_all = sorted(n for n in edges.get(path[-1], ()) if n in group)
            if start in nxt_all:
                found.append([*path, start])
                break
            for nxt in nxt_all:
                if nxt not in seen:
                    seen.add(nxt)
                    paths.append([*path, nxt])
    return sorted(found)


def upward(imports: list[Import], allowed=LATE_IMPORTS) -> list[str]:
    problems = []
    for imp in imports:
        mine, theirs = layer_of(imp.importer), layer_of(imp.imported)
        listed = imp.where == "function" and allowed.get((imp.importer, imp.imported), "").startswith(DEBT)
        if mine is not None and theirs is not None and theirs[0] > mine[0] and not listed:
            problems.append(
                f"{imp.importer}:{imp.line} ({mine[1]}) imports {imp.imported} ({theirs[1]}), a layer above it"
            )
    return problems


def unlisted_late_imports(imports: list[Import], allowed=LATE_IMPORTS) -> list[str]:
    return [
        f"{imp.importer}:{imp.line} imports {imp.imported} inside a function"
        for imp in imports
        if imp.where == "function" and (imp.importer, imp.imported) not in allowed
    ]


def test_every_module_has_a_layer():
    imports = import_graph()
    names = module_names(PACKAGE_ROOT)
    assert "ember.tensor.tensor" in names and len(imports) > 500
    orphans = sorted(name for name in names if layer_of(name) is None)
    assert not orphans, f"modules in no layer of ember/_layers.py: {orphans}"


def test_no_import_circle():
    found = cycles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_upward_import():
    problems = upward(import_graph())
    assert not problems, "imports against ember/_layers.py:\n" + "\n".join(problems)


def test_function_level_imports_of_ember_have_a_reason():
    imports = import_graph()
    problems = unlisted_late_imports(imports)
    assert not problems, (
        "import these at module level, or list them in LATE_IMPORTS with the reason:\n" + "\n".join(problems)
    )
    made = {(imp.importer, imp.imported) for imp in imports if imp.where == "function"}
    stale = sorted(set(LATE_IMPORTS) - made)
    assert not stale, f"LATE_IMPORTS lists imports no longer made: {stale}"


def _says_late(lines: list[str], line: int) -> bool:
    """Whether the import at ``line`` (1-based) says it is late, on its line or in the comment
    lines right above it."""
    if "late" in lines[line - 1].lower():
        return True
    above = line - 2
    while above >= 0 and lines[above].strip().startswith("#"):
        if "late" in lines[above].lower():
            return True
        above -= 1
    return False


def test_late_imports_say_so_where_they_stand():
    files = module_names(PACKAGE_ROOT)
    silent = [
        f"{imp.importer}:{imp.line} imports {imp.imported}"
        for imp in import_graph()
        if imp.where == "function"
        and LATE_IMPORTS.get((imp.importer, imp.imported), "").startswith(LATE)
        and not _says_late(files[imp.importer].read_text(encoding="utf-8").splitlines(), imp.line)
    ]
    assert not silent, "a late import needs a comment saying so (`# late: <the dependency>`):\n" + "\n".join(
        silent
    )


def test_the_checks_find_what_they_look_for(tmp_path):
    root = tmp_path / "ember"
    for folder in ("core", "kernels/cpu", "tensor", "nn"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("from ember.tensor import a\n")
    (root / "core" / "table.py").write_text("X = 1\n")
    (root / "kernels" / "cpu" / "k.py").write_text(
        "from ...core import table\nfrom ember.tensor.a import T\n"  # relative down; absolute up
    )
    (root / "tensor" / "a.py").write_text(
        "from . import b\nimport importlib\ndef f():\n    import ember.nn.m\n"
    )
    (root / "tensor" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ember.nn import m\n"
        "from ember.tensor import c\n"
    )
    (root / "tensor" / "c.py").write_text("import ember.tensor.a\n")  # a -> b -> c -> a
    (root / "nn" / "m.py").write_text(
        "import numpy\nclass M:\n    def f(self):\n        import ember.kernels.cpu.k\n"
        "        return importlib.import_module('ember.tensor.b')\n"
    )
    imports = import_graph(root)
    assert {(i.importer, i.imported, i.where) for i in imports} == {
        ("ember", "ember.tensor.a", "module"),
        ("ember.kernels.cpu.k", "ember.core.table", "module"),
        ("ember.kernels.cpu.k", "ember.tensor.a", "module"),
        ("ember.tensor.a", "ember.tensor.b", "module"),
        ("ember.tensor.a", "ember.nn.m", "function"),
        ("ember.tensor.b", "ember.nn.m", "type"),
        ("ember.tensor.b", "ember.tensor.c", "module"),
        ("ember.tensor.c", "ember.tensor.a", "module"),
        ("ember.nn.m", "ember.kernels.cpu.k", "function"),
        ("ember.nn.m", "ember.tensor.b", "function"),
    }
    assert cycles(imports) == [["ember.tensor.a", "ember.tensor.b", "ember.tensor.c", "ember.tensor.a"]]
    assert [p.split(" (")[0] for p in upward(imports)] == [
        "ember.kernels.cpu.k:2",
        "ember.tensor.a:4",
        "ember.tensor.b:3",
    ]
    # a listed debt exempts a function-level import from the layer check, never a module-level one
    listed = {
        ("ember.tensor.a", "ember.nn.m"): DEBT + "why",
        ("ember.kernels.cpu.k", "ember.tensor.a"): DEBT + "why",
    }
    assert [p.split(" (")[0] for p in upward(imports, listed)] == [
        "ember.kernels.cpu.k:2",
        "ember.tensor.b:3",
    ]
    assert unlisted_late_imports(imports, allowed={("ember.nn.m", "ember.tensor.b"): "why", **listed}) == [
        "ember.nn.m:4 imports ember.kernels.cpu.k inside a function"
    ]
    assert [name for name, _ in LAYERS][:3] == ["core", "kernels", "tensor"]
    lines = [
        "def f():",
        "    # late: numba",
        "    # (long story)",
        "    import numba",
        "    import json  # late: x",
        "    import os",
    ]
    assert [_says_late(lines, n) for n in (4, 5, 6)] == [True, True, False]
