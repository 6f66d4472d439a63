"""The README's catalogue lists every layer, loss and optimizer ember exports, and every line runs.

The section ``## Catalogue of layers, losses and optimizers`` holds one ```python block (the
set-up the lines share) and tables ``| name | one-line example |``. Each example is one Python
expression; a trailing comment that starts with a shape (``# [2, 8, 14]``) or a number
(``# 0.001``) is checked against the value the expression returns.

What must have a row is read from ``ember.nn`` / ``ember.optim`` when the test runs: every
exported module class, every class whose name ends in ``Config`` (or ``Lora``: the adapter
settings), every optimizer and scheduler. A name counts as listed when the row names it, its
config, or the class its config builds (``Conv1d`` covers ``Conv1dConfig``); aliases such as
``Silu`` for ``SiLU`` count through the class they name.
"""

from __future__ import annotations

import inspect
import io
import math
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

import ember
from ember import nn, optim
from ember.optim import lr_scheduler

README = Path(__file__).resolve().parents[1] / "README.md"
HEADING = "## Catalogue of layers, losses and optimizers"

# Exported classes that need no row, each with why; a name here that ember stops exporting fails.
NOT_LAYERS = {
    "Module": "the base class of every layer, shown in the Modules section",
    "GateController": "a gate inside Lstm / Gru / Rnn, built by their configs",
    "TransformerEncoderLayer": "one layer of TransformerEncoder, built by its config",
    "TransformerDecoderLayer": "one layer of TransformerDecoder, built by its config",
    "LoraAdapter": "made by apply_lora, never built directly",
    "QLoraAdapter": "made by apply_qlora, never built directly",
    "QuantizedStorage": "made by apply_qlora for the quantized parameters",
    "PaddingConfig1d": "the padding option of the 1-D conv and pool configs",
    "PaddingConfig2d": "the padding option of the 2-D conv and pool configs",
    "PaddingConfig3d": "the padding option of the 3-D conv configs (see the Conv3d row)",
    "OptimizerConfig": "the abstract base of the optimizer configs",
    "LrSchedulerConfig": "the abstract base of the scheduler configs",
}


@dataclass(frozen=True)
class Row:
    group: str  # the bold label above its table
    names: tuple[str, ...]  # the backticked names of the first cell
    code: str  # the example, one expression with an optional trailing comment
    line: int  # README line

    @property
    def where(self) -> str:
        return f"README.md:{self.line} ({' / '.join(self.names)})"


def catalogue_text(text: str | None = None) -> tuple[str, int]:
    """The catalogue section and the README line it starts on."""
    text = README.read_text(encoding="utf-8") if text is None else text
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == HEADING), None)
    assert start is not None, f"README.md has no section {HEADING!r}"
    end = next((j for j in range(start + 1, len(lines)) if lines[j].startswith("## ")), len(lines))
    return "\n".join(lines[start:end]), start + 1


def setup_code(text: str | None = None) -> str:
    """The python block the example lines share (the section's first, before any table)."""
    section, _ = catalogue_text(text)
    blocks = re.findall(r"^```python\n(.*?)^```$", section, flags=re.M | re.S)
    assert len(blocks) == 1, f"the catalogue should hold one python block (the set-up), found {len(blocks)}"
    assert section.index("```python") < section.index("| name |"), "the set-up block comes before the tables"
    return blocks[0]


def catalogue_rows(text: str | None = None) -> list[Row]:
    section, first = catalogue_text(text)
    rows, group, in_table = [], "", False
    for offset, line in enumerate(section.splitlines()):
        where = f"README.md:{first + offset}"
        label = re.match(r"^\*\*(.+?)\*\*", line)
        if label:
            group = label.group(1)
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 2, f"{where}: a row has two cells (name, example), got {cells}"
        if not in_table:  # the header and the rule under it
            assert cells == ["name", "one-line example"], f"{where}: unexpected table header {cells}"
            in_table = True
            continue
        if set(cells[0]) <= {"-", ":"}:
            continue
        names = tuple(re.findall(r"`([A-Za-z_]\w*)`", cells[0]))
        assert names, f"{where}: the name cell names nothing in backticks: {cells[0]!r}"
        code = re.fullmatch(r"`([^`]+)`", cells[1])
        assert code, f"{where}: the example must be one code span, got {cells[1]!r}"
        assert group, f"{where}: a table needs a **group** label above it"
        rows.append(Row(group, names, code.group(1), first + offset))
    return rows


def split_comment(code: str) -> tuple[str, str]:
    """(expression, trailing comment text), the comment found by the tokenizer, not by '#'."""
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            return code[: tok.start[1]].rstrip(), tok.string[1:].strip()
    return code.strip(), ""


def expected(comment: str):
    """What the comment promises: ("shape", [..]), ("value", x) or None for plain prose."""
    shape = re.match(r"^\[([\d,\s]*)\]", comment)
    if shape:
        return "shape", [int(d) for d in shape.group(1).replace(",", " ").split()]
    number = re.match(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?(?=$|[\s;:,])", comment)
    if number:
        return "value", float(number.group(0))
    return None


# ---- the parser ---------------------------------------------------------------------------------
SAMPLE = """\
## Catalogue of layers, losses and optimizers

```python
import ember
```

**Core**

| name | one-line example |
|---|---|
| `Linear` | `nn.LinearConfig(4, 8).init()(ember.randn(2, 4))  # [2, 8]; weight [d_in, d_out]` |
| `SiLU` (alias `Silu`) | `nn.SiLU()(ember.randn(2, 8))` |

## Next
"""


def test_the_parser_reads_groups_names_examples_and_comments():
    rows = catalogue_rows(SAMPLE)
    assert [(r.group, r.names, r.line) for r in rows] == [
        ("Core", ("Linear",), 11),
        ("Core", ("SiLU", "Silu"), 12),
    ]
    assert setup_code(SAMPLE) == "import ember\n"
    code, comment = split_comment(rows[0].code)
    assert code == "nn.LinearConfig(4, 8).init()(ember.randn(2, 4))"
    assert expected(comment) == ("shape", [2, 8])
    assert split_comment('nn.ActivationConfig("#x")  # 0.5') == ('nn.ActivationConfig("#x")', "0.5")
    assert expected("0.000125") == ("value", 0.000125)
    assert expected("1e-3 at first") == ("value", 1e-3)
    assert expected("[]; one per sample") == ("shape", [])
    assert expected("the updated model") is None
    assert expected("2-D weights only") is None


def test_the_parser_rejects_a_malformed_row():
    broken = SAMPLE.replace("`nn.SiLU()(ember.randn(2, 8))`", "nn.SiLU()(ember.randn(2, 8))")
    with pytest.raises(AssertionError, match="one code span"):
        catalogue_rows(broken)


# ---- every line runs ------------------------------------------------------------------------------
def test_the_catalogue_has_rows_in_every_group():
    rows = catalogue_rows()
    groups = {r.group.split(" (")[0] for r in rows}
    assert len(rows) >= 100, f"only {len(rows)} rows"
    for group in (
        "Core layers",
        "Recurrent",
        "Activations",
        "Losses",
        "Optimizers",
        "Learning-rate schedulers",
    ):
        assert any(g.startswith(group) for g in groups), f"no group {group!r} among {sorted(groups)}"
    seen: dict[str, str] = {}
    for row in rows:
        for name in row.names:
            assert name not in seen, f"{row.where}: {name} is listed twice (also at {seen[name]})"
            seen[name] = row.where


@pytest.fixture(scope="module")
def namespace():
    ns = {"__name__": "readme_catalogue"}
    exec(compile(setup_code(), "README.md (catalogue set-up)", "exec"), ns)
    for name in ("ember", "nn", "optim"):
        assert name in ns, f"the catalogue's set-up block must define {name!r}"
    return ns


@pytest.mark.parametrize("row", catalogue_rows(), ids=lambda r: r.names[0])
def test_every_example_runs_and_returns_what_its_comment_says(row, namespace):
    code, comment = split_comment(row.code)
    named = {n for name in row.names for n in (name, name + "Config")}
    assert any(re.search(rf"\b{n}\b", code) for n in named), (
        f"{row.where}: the example should build the thing it lists ({' or '.join(sorted(named))})"
    )
    ember.seed(0)
    value = eval(compile(code, row.where, "eval"), dict(namespace))
    promise = expected(comment)
    if promise is None:
        return
    kind, want = promise
    if kind == "shape":
        assert hasattr(value, "shape"), f"{row.where}: returns a {type(value).__name__}, not a tensor"
        assert list(value.shape) == want, f"{row.where}: shape {list(value.shape)}, the comment says {want}"
    else:
        got = float(value)
        assert math.isclose(got, want, rel_tol=1e-6), f"{row.where}: returns {got}, the comment says {want}"


# ---- and nothing exported is left out ---------------------------------------------------------------
def _exports() -> dict[str, object]:
    """Every public class of ember.nn and ember.optim (with its lr_scheduler), by name."""
    found = {}
    for module in (nn, optim, lr_scheduler):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                found[name] = obj
    return found


def _needs_a_row(name: str, obj: object) -> bool:
    if issubclass(obj, nn.Module) or name.endswith(("Config", "Lora")):
        return True
    for base in (optim.Optimizer, optim.LrScheduler):
        if issubclass(obj, base) and obj is not base:
            return True
    return False


def _family(name: str, exports: dict[str, object]) -> set[int]:
    """The class of a name together with its config, or the class its config builds (by id)."""
    related = {name, name + "Config"}
    if name.endswith("Config"):
        related.add(name[: -len("Config")])
    return {id(exports[n]) for n in related if n in exports}


def test_every_name_in_the_catalogue_is_exported():
    exports = _exports()
    for row in catalogue_rows():
        for name in row.names:
            assert name in exports, f"{row.where}: {name} is not a class of ember.nn or ember.optim"


def test_the_allow_list_names_only_exports():
    exports = _exports()
    stale = sorted(n for n in NOT_LAYERS if n not in exports)
    assert not stale, f"NOT_LAYERS names what ember no longer exports: {stale}"


def test_every_exported_layer_loss_optimizer_and_scheduler_has_a_row():
    exports = _exports()
    listed: set[int] = set()
    for row in catalogue_rows():
        for name in row.names:
            listed |= _family(name, exports)
    unlisted: dict[frozenset, str] = {}  # one name per class and its config
    for name, obj in exports.items():
        family = _family(name, exports)
        if _needs_a_row(name, obj) and name not in NOT_LAYERS and not (family & listed):
            unlisted.setdefault(frozenset(family), name)
    missing = sorted(unlisted.values())
    assert not missing, (
        f"README.md's catalogue has no row for {missing}: add `| `Name` | `one line` |` to its group "
        f"(or, for a helper that is not a layer, to NOT_LAYERS in {Path(__file__).name} with the reason)"
    )
