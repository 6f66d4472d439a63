"""Writes the op table's Tensor methods and top-level functions as Python source.

    python ember/tensor/op_codegen.py          # rewrite op_methods.py and op_functions.py
    python ember/tensor/op_codegen.py --check  # exit 1 when they differ from the table

The two files are generated, not built at import, so that ``help()``, ``inspect.getsource``,
IDEs and type checkers read real definitions with real signatures and docstrings; they are
checked in, and ``tests/tensor/test_op_table.py`` fails when they are stale.

Each generated method or function calls its op's function directly (nothing in between),
after converting the operands that may be tensor-likes (an ``nn.Param``): the parameters
annotated with a Tensor type or not annotated. A method or function forwarding to a function
of ``ember.tensor.ops`` has that function's parameters and docstring.

This script reads the op table (``ember/core/op_table.py``) and the op modules' source without
importing ember, so it runs even when a generated file is missing or broken
(``python -m ember.tensor.op_codegen`` works too while ember imports).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

_HERE = Path(__file__).resolve().parent
METHODS_FILE = _HERE / "op_methods.py"
FUNCTIONS_FILE = _HERE / "op_functions.py"
_HEADER = (
    "# Generated from ember/core/op_table.py by ember/tensor/op_codegen.py: do not edit.\n"
    "# Regenerate with: python ember/tensor/op_codegen.py\n"
)
_WIDTH = 120
# The tensor-like helpers of tensor.py that the conversions call.
_HELPERS = ("_PLAIN_TYPES", "_converted", "_holds_tensor_like")
# Names an annotation may use: the generated modules define (or import) only these.
_ANNOTATION_NAMES = frozenset({"Tensor", "int", "float", "bool", "str", "tuple", "list", "dict"})


def _load_table():
    spec = importlib.util.spec_from_file_location("_ember_op_table", _HERE.parent / "core" / "op_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


table = _load_table()


class Param(NamedTuple):
    """A parameter of an op function, as written in its source."""

    name: str
    kind: str  # "positional", "*" (varargs), "keyword" (keyword-only) or "**"
    annotation: str | None
    default: str | None

    def source(self, name: str | None = None) -> str:
        text = {"*": "*", "**": "**"}.get(self.kind, "") + (name or self.name)
        if self.annotation is not None:
            text += f": {self.annotation}"
        if self.default is not None:
            text += f" = {self.default}" if self.annotation is not None else f"={self.default}"
        return text

    def argument(self, name: str | None = None) -> str:
        name = name or self.name
        return {"*": f"*{name}", "**": f"**{name}", "keyword": f"{name}={name}"}.get(self.kind, name)

    def may_be_tensor_like(self) -> bool:
        """Whether the argument may be a tensor-like: annotated with a Tensor type, or not at
        all (shapes and dims given as ``*args`` never are)."""
        return self.kind in ("positional", "keyword") and (
            self.annotation is None or "Tensor" in self.annotation
        )


class Signature(NamedTuple):
    params: tuple
    returns: str | None
    doc: str | None


class Form(NamedTuple):
    """One generated ``def``: ``name(params) -> returns``, converting ``conversions``, then
    ``return callee(args)``; ``aliases`` name the same function (``__sub__ = sub``)."""

    name: str
    params: tuple
    returns: str | None
    doc: str
    conversions: tuple
    callee: str
    args: tuple
    aliases: tuple = ()


# ---- reading the op functions' source --------------------------------------------------------
_TREES: dict = {}


def _tree(module: str) -> ast.Module:
    if module not in _TREES:
        path = _HERE / (module.replace(".", "/") + ".py")
        _TREES[module] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return _TREES[module]


def _annotation(node, where: str) -> str | None:
    if node is None:
        return None
    text = ast.unparse(node)
    unknown = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - _ANNOTATION_NAMES
    if unknown:
        raise ValueError(
            f"op_codegen: the annotation {text!r} of {where} uses {sorted(unknown)}, which the "
            f"generated modules do not define; use only {sorted(_ANNOTATION_NAMES)}"
        )
    return text


def signature(function: str) -> Signature:
    """The parameters, return annotation and docstring of ``function`` (``ops.reduction.sum``)."""
    module, name = function.rsplit(".", 1)
    for node in _tree(module).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            break
    else:
        raise ValueError(
            f"op_codegen: ember/tensor/{module.replace('.', '/')}.py defines no function {name!r} "
            f"(named by the op table)"
        )
    a = node.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + [ast.unparse(d) for d in a.defaults]
    params = [
        Param(p.arg, "positional", _annotation(p.annotation, f"{function}({p.arg})"), d)
        for p, d in zip(positional, defaults, strict=True)
    ]
    if a.vararg is not None:
        params.append(Param(a.vararg.arg, "*", _annotation(a.vararg.annotation, function), None))
    for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        params.append(
            Param(
                p.arg,
                "keyword",
                _annotation(p.annotation, f"{function}({p.arg})"),
                None if d is None else ast.unparse(d),
            )
        )
    if a.kwarg is not None:
        params.append(Param(a.kwarg.arg, "**", _annotation(a.kwarg.annotation, function), None))
    return Signature(
        tuple(params), _annotation(node.returns, f"{function} (return)"), ast.get_docstring(node)
    )


# ---- what each op generates ------------------------------------------------------------------
def _alias(op) -> str:
    """The name the generated code calls the op's function by."""
    if op.kind == table.UNARY:
        return "_unary"
    if op.kind == table.BINARY:
        return "_binary"
    if op.kind == table.POINTWISE:
        return "_pointwise"
    return "_" + op.function.rsplit(".", 1)[1]


def _elementwise_doc(op) -> str:
    doc = f"{op.doc}\n\nResult dtype: {table.DTYPE_RULES[op.dtype]}."
    return doc + (" No gradient." if op.grad == table.NONE else "")


def _forwarding(op, name: str, as_method: bool, reflected: bool) -> Form:
    """A def with ``op.function``'s parameters (``self`` for the first one of a method) calling it."""
    sig = signature(op.function)
    if not sig.doc:
        raise ValueError(
            f"op_codegen: {op.function} (op {op.name!r}) has no docstring; its generated "
            f"{'method' if as_method else 'function'} {name!r} would show none"
        )
    if reflected:  # self is the second operand: ``x.__rmatmul__(other)`` is ``matmul(other, x)``
        if len(sig.params) != 2 or any(p.kind != "positional" or p.default for p in sig.params):
            raise ValueError(
                f"op_codegen: the reflected method {name!r} needs {op.function} to take two operands"
            )
        return Form(name, ("self", "other"), sig.returns, sig.doc, ("other",), _alias(op), ("other", "self"))
    sources, args, conversions = [], [], []
    for i, p in enumerate(sig.params):
        is_self = as_method and i == 0
        if p.kind == "keyword" and not any(q.kind in ("*", "keyword") for q in sig.params[:i]):
            sources.append("*")
        sources.append("self" if is_self else p.source())
        args.append(p.argument("self" if is_self else None))
        if not is_self and p.may_be_tensor_like():
            conversions.append(p.name)
    return Form(name, tuple(sources), sig.returns, sig.doc, tuple(conversions), _alias(op), tuple(args))


def _elementwise(op, name: str, as_method: bool, reflected: bool) -> Form:
    """A def computing a unary or binary op with ``unary(name, x)`` / ``binary(name, a, b)``."""
    doc, op_name = _elementwise_doc(op), f'"{op.name}"'
    if op.kind == table.UNARY:
        if as_method:
            return Form(name, ("self",), "Tensor", doc, (), "_unary", (op_name, "self"))
        return Form(name, ("x: Tensor",), "Tensor", doc, ("x",), "_unary", (op_name, "x"))
    if as_method:
        args = ("other", "self") if reflected else ("self", "other")
        return Form(name, ("self", "other"), "Tensor", doc, ("other",), "_binary", (op_name,) + args)
    return Form(name, ("a", "b"), "Tensor", doc, ("a", "b"), "_binary", (op_name, "a", "b"))


def _pointwise(op, name: str, as_method: bool) -> Form:
    """A def computing a fused element-wise op with ``pointwise(name, *operands)``; the
    operands are the row's ``saves``."""
    operands = op.saves
    args = (f'"{op.name}"',) + (("self",) + operands[1:] if as_method else operands)
    params = ("self",) + operands[1:] if as_method else tuple(f"{o}: Tensor" for o in operands)
    converted = operands[1:] if as_method else operands
    return Form(name, params, "Tensor", _elementwise_doc(op), converted, "_pointwise", args)


def _form(op, name: str, as_method: bool, reflected: bool = False) -> Form:
    if op.kind in (table.UNARY, table.BINARY):
        return _elementwise(op, name, as_method, reflected)
    if op.kind == table.POINTWISE:
        return _pointwise(op, name, as_method)
    return _forwarding(op, name, as_method, reflected)


def method_forms() -> list:
    """The generated Tensor methods, in table order (the reflected operators last): one def
    for an op's first method, its other methods aliases of it."""
    forms = [
        _form(op, op.methods[0], True)._replace(aliases=op.methods[1:]) for op in table.OPS if op.methods
    ]
    forms += [_form(op, name, True, reflected=True) for op in table.OPS for name in op.reflected]
    _check_unique("method", forms)
    return forms


def function_forms() -> list:
    """The generated top-level functions, in table order."""
    forms = [
        _form(op, op.top_level[0], False)._replace(aliases=op.top_level[1:])
        for op in table.OPS
        if op.top_level
    ]
    _check_unique("top-level function", forms)
    return forms


def _names(forms: list) -> list:
    return [name for form in forms for name in (form.name,) + form.aliases]


def _check_unique(what: str, forms: list) -> None:
    seen = set()
    for name in _names(forms):
        if name in seen:
            raise ValueError(f"op_codegen: the op table declares the {what} {name!r} twice")
        seen.add(name)


def _bindings(forms: list) -> dict:
    """``alias -> (module, name)`` of every function the forms call, and of the helpers."""
    found = {}
    for op in table.OPS:
        target = (
            ("ops.elementwise", _alias(op)[1:])
            if op.kind in (table.UNARY, table.BINARY)
            else tuple(op.function.rsplit(".", 1))
        )
        alias = _alias(op)
        if found.setdefault(alias, target) != target:
            raise ValueError(f"op_codegen: {found[alias]} and {target} would both be called {alias}")
    used = {form.callee for form in forms}
    bound = {alias: target for alias, target in found.items() if alias in used}
    bound.update({helper: ("tensor", helper) for helper in _HELPERS})
    return bound


# ---- rendering ---------------------------------------------------------------------------------
def _docstring(doc: str, indent: str) -> str:
    quote = 'r"""' if "\\" in doc else '"""'
    lines = doc.splitlines()
    if len(lines) == 1:
        return f'{indent}{quote}{doc}"""\n'
    body = "\n".join((indent + line) if line else "" for line in lines[1:])
    return f'{indent}{quote}{lines[0]}\n{body}\n{indent}"""\n'


def _packed(items: list, indent: str) -> str:
    """``items`` each followed by a comma, as many on a line as fit."""
    lines, line = [], ""
    for item in items:
        piece = item + ","
        if line and len(indent) + len(line) + 1 + len(piece) > _WIDTH:
            lines.append(indent + line)
            line = ""
        line += (" " if line else "") + piece
    lines.append(indent + line)
    return "\n".join(lines) + "\n"


def _call(head: str, items: tuple, tail: str, indent: str) -> str:
    """``head(items)tail`` on one line, or one item a line when that is too long."""
    line = f"{indent}{head}({', '.join(items)}){tail}"
    if len(line) <= _WIDTH:
        return line + "\n"
    inner = indent + "    "
    return f"{indent}{head}(\n" + "".join(f"{inner}{item},\n" for item in items) + f"{indent}){tail}\n"


def _render(form: Form, indent: str) -> str:
    out = _call(f"def {form.name}", form.params, f" -> {form.returns}:" if form.returns else ":", indent)
    body = indent + "    "
    out += _docstring(form.doc, body)
    for name in form.conversions:
        out += f"{body}if type({name}) not in _PLAIN_TYPES and _holds_tensor_like({name}):\n"
        out += f"{body}    {name} = _converted({name})\n"
    out += _call(f"return {form.callee}", form.args, "", body)
    if form.aliases:
        out += "\n" + "".join(f"{indent}{alias} = {form.name}\n" for alias in form.aliases)
    return out


def _import_order(name: str) -> tuple:
    """isort's order by type: constants, then classes, then the rest."""
    bare = name.lstrip("_")
    return (0 if bare.isupper() else 1 if bare[:1].isupper() else 2, name)


def _imports(bound: dict, indent: str) -> str:
    """The imports of ``bound`` and Tensor as isort writes them: one statement per aliased
    name, the plain names of a module together."""
    lines = []
    plain: dict = {"tensor": {"Tensor"}}
    for alias, (module, name) in bound.items():
        if alias == name:
            plain.setdefault(module, set()).add(name)
        else:
            lines.append((module, 1, name, f"from ember.tensor.{module} import {name} as {alias}"))
    for module, names in plain.items():
        names = ", ".join(sorted(names, key=_import_order))
        lines.append((module, 0, "", f"from ember.tensor.{module} import {names}"))
    return "".join(f"{indent}{line}\n" for *_, line in sorted(lines))


_METHODS_DOC = '''"""The Tensor methods and operators of the op table's ops: :class:`OpMethods`, a base of
:class:`ember.Tensor`.

Each method calls its op's function directly. The op modules import ``Tensor``, which
inherits this class, so they load after it: ``ember/tensor/binding.py`` then calls
:func:`bind_ops`, which binds the names the methods call (imported here for type checkers only).
"""
'''

_FUNCTIONS_DOC = '''"""The top-level functions of the op table's ops (``ember.sum``, ``ember.exp``,
``ember.where``, ...), which :mod:`ember` re-exports. Each calls its op's function directly,
after converting tensor-like operands (an ``nn.Param``) to the tensors they stand for.
"""
'''


def render_methods() -> str:
    """The source of ``op_methods.py``."""
    forms = method_forms()
    bound = _bindings(forms)
    out = (
        _HEADER + _METHODS_DOC + "from __future__ import annotations\n\nfrom typing import TYPE_CHECKING\n\n"
    )
    out += "if TYPE_CHECKING:\n" + _imports(bound, "    ")
    out += "\n\nclass OpMethods:\n"
    out += '    """The methods of :class:`ember.Tensor` generated from :mod:`ember.core.op_table`."""\n'
    out += "\n    __slots__ = ()\n"
    for form in forms:
        out += "\n" + _render(form, "    ")
    # the modules, passed in by ember/tensor/binding.py: they import Tensor, so none is imported here
    modules = sorted({module.rpartition(".")[2] for module, _ in bound.values()})
    out += f"\n\ndef bind_ops(*, {', '.join(modules)}) -> None:\n"
    out += (
        '    """Bind the functions the methods call (``ember/tensor/binding.py`` passes their modules)."""\n'
    )
    out += "    globals().update(\n"
    for alias, (module, name) in sorted(bound.items(), key=lambda kv: kv[0].lstrip("_").lower()):
        out += f"        {alias}={module.rpartition('.')[2]}.{name},\n"
    return out + "    )\n"


def render_functions() -> str:
    """The source of ``op_functions.py``."""
    forms = function_forms()
    out = _HEADER + _FUNCTIONS_DOC + "from __future__ import annotations\n\n" + _imports(_bindings(forms), "")
    out += "\n__all__ = [\n" + _packed([f'"{name}"' for name in sorted(_names(forms))], "    ") + "]\n"
    for form in forms:
        out += "\n\n" + _render(form, "")
    return out


def outputs() -> dict:
    """``path -> source`` of every generated file."""
    return {METHODS_FILE: render_methods(), FUNCTIONS_FILE: render_functions()}


# ---- writing -----------------------------------------------------------------------------------
def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python ember/tensor/op_codegen.py",
        description="Write the op table's Tensor methods and top-level functions.",
    )
    parser.add_argument("--check", action="store_true", help="only report the generated files that are stale")
    args = parser.parse_args(argv)
    stale = {
        path: text
        for path, text in outputs().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    }
    for path, text in stale.items():
        if args.check:
            print(f"{path} is stale: run python ember/tensor/op_codegen.py", file=sys.stderr)
        else:
            _write_atomic(path, text)
            print(f"wrote {path}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
