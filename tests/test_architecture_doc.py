"""docs/architecture.md names real files: every path in backticks on the page (and in the
README's "Layout" section, which points to it) exists in the checkout, so a move or a rename
that leaves the page behind fails here instead of misleading the next reader.

A path is a whitespace-separated word of an inline code span that contains ``/``
(``python ember/tensor/op_codegen.py`` checks ``ember/tensor/op_codegen.py``); a placeholder
in angle brackets (``tests/nn/test_nn_<name>.py``) must match at least one file. Fenced blocks
hold code, not references, and are skipped. The layers the page lists are those of
``ember/_layers.py``, in its order.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ember._layers import LAYERS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"

_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
_PLACEHOLDER = re.compile(r"<[^<>/]+>")


def backticked_paths(text: str) -> list[str]:
    """The paths named in the inline code spans of markdown ``text``, fenced blocks left out."""
    paths = []
    for span in _SPAN.findall(_FENCE.sub("", text)):
        for word in span.split():
            word = word.rstrip(".,;:")
            if "/" in word and not word.startswith(("http:", "https:", "--")):
                paths.append(word)
    return paths


def missing(paths: list[str], roots: tuple[Path, ...] = (ROOT,)) -> list[str]:
    """Those of ``paths`` that name nothing under any of ``roots`` (a placeholder matches any
    name)."""
    gone = []
    for path in paths:
        if _PLACEHOLDER.search(path):
            pattern = _PLACEHOLDER.sub("*", path.rstrip("/"))
            found = any(any(root.glob(pattern)) for root in roots)
        else:
            found = any((root / path).exists() for root in roots)
        if not found:
            gone.append(path)
    return gone


def _readme_layout() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Layout\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_every_backticked_path_on_the_architecture_page_exists():
    paths = backticked_paths(PAGE.read_text(encoding="utf-8"))
    # the page is a map of files: far fewer than this means the extraction broke, not the page
    assert len(paths) > 80, f"only {len(paths)} paths found in {PAGE}"
    assert missing(paths) == [], f"{PAGE.relative_to(ROOT)} names paths that do not exist"


def test_the_readme_layout_points_to_the_page_and_its_paths_exist():
    layout = _readme_layout()
    paths = backticked_paths(layout)
    assert "docs/architecture.md" in paths
    # the section names ember's packages relative to `ember/` too (`core/`, `nn/`)
    gone = missing(paths, roots=(ROOT, ROOT / "ember"))
    assert gone == [], "README's Layout section names paths that do not exist"


def test_the_page_lists_the_layers_of_ember_layers_in_order():
    text = PAGE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| (\w+) \|", text, re.M)
    assert [name for _, name in rows] == [name for name, _ in LAYERS]
    assert [int(rank) for rank, _ in rows] == list(range(len(LAYERS)))


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("see `ember/no_such_file.py` and `ember/_layers.py`", ["ember/no_such_file.py"]),
        ("run `python ember/tensor/nope.py --check`.", ["ember/tensor/nope.py"]),
        ("`tests/nn/test_nn_<name>.py` and `tests/nn/zz_<name>.py`", ["tests/nn/zz_<name>.py"]),
        ("```\n`ember/in_a_fence.py`\n```\n`ember.cuda` `--flag`", []),
    ],
)
def test_the_check_catches_a_path_that_does_not_exist(text, gone):
    assert missing(backticked_paths(text)) == gone
