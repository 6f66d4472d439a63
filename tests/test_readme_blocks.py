"""Every code block of README.md runs as written, so the README cannot drift from the code.

* ```python blocks run in order, each in a fresh interpreter, so a reader can paste any one of
  them alone, in an empty working directory per ``##`` section (files a block writes are there
  for the blocks below it), offline (``HF_HUB_OFFLINE=1``) and with plain progress lines
  (``EMBER_RENDERER=cli``). A block that needs names from the blocks above it says so on its
  first line, ``# continues the example above: uses model and batches``; the blocks of its
  section down to it then run in one interpreter, as a reader pasting them into one session
  would, and every unmarked block still runs alone too. A block with an
  ``if __name__ == "__main__":`` guard is a complete script: it is saved to a file and run as
  ``python script.py`` in that directory.
* The training section's script is run by ``tests/train/test_readme_training.py`` (which also
  checks what it prints and writes), so it is only located here.
* A block that cannot run here says why in an HTML comment on the line before it,
  ``<!-- no-run: downloads AG News from the Hugging Face Hub -->``; those stay few.
* Shell blocks: ``make`` targets exist in the Makefile, ``pip install`` extras in
  pyproject.toml, ``python`` scripts in the tree; the example scripts' command lines are run by
  ``tests/examples/test_readme_commands.py`` (the demo by ``test_text_classification_scripts``).
  Other ```text blocks show output or files and hold no command.
* ```toml blocks are ``ember.toml`` examples: each is read by the configuration loader (so an
  unknown key or a wrong type fails), and together they show every setting ember declares.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
NO_RUN = re.compile(r"^<!--\s*no-run:?(.*?)-->\s*$")
MAX_NO_RUN = 1  # the Hub download: everything else runs offline
SCRIPT_GUARD = re.compile(r"^if __name__ == ['\"]__main__['\"]:", re.M)
SHELL = {"bash", "sh", "shell", "console"}
CONTINUES = re.compile(r"^# continues the example above\b")


@dataclass(frozen=True)
class Block:
    lang: str
    info: str  # what follows the language on the fence line
    code: str
    line: int  # README line of the first line of code
    section: str  # the ``##`` heading above it
    no_run: str | None  # the reason given by a no-run marker, "" when it gives none


def readme_blocks(text: str | None = None) -> list[Block]:
    """The fenced code blocks of the README, in order."""
    lines = (README.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks, section, i = [], "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
        fence = re.match(r"^```(\w*)\s*(.*)$", line)
        if not fence:
            i += 1
            continue
        start = i + 1
        end = next((j for j in range(start, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"README.md:{i + 1}: a code block is never closed"
        previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = NO_RUN.match(previous)
        blocks.append(
            Block(
                fence.group(1),
                fence.group(2),
                "\n".join(lines[start:end]) + "\n",
                start + 1,
                section,
                marker.group(1).strip() if marker else None,
            )
        )
        i = end + 1
    return blocks


def load_test_module(relative: str):
    spec = importlib.util.spec_from_file_location(Path(relative).stem, REPO / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def training_script() -> str:
    """The block tests/train/test_readme_training.py runs."""
    return load_test_module("tests/train/test_readme_training.py").training_script()


def runnable_python(blocks: list[Block]) -> list[Block]:
    script = training_script()
    return [b for b in blocks if b.lang == "python" and b.no_run is None and b.code != script]


def python_sections() -> list[str]:
    return list(dict.fromkeys(b.section for b in runnable_python(readme_blocks())))


def continues(block: Block) -> bool:
    """Whether the block says it uses names defined by the blocks above it."""
    return bool(CONTINUES.match(block.code))


def section_runs(blocks: list[Block]) -> list[tuple[str, list[Block]]]:
    """How one section's runnable python blocks are run, in order: ``("session", blocks)`` in
    one interpreter, or ``("script", [block])`` as ``python script.py``.

    Every session block runs alone, except those marked as continuing: the blocks down to the
    last marked one run first as one session (the section's first block alone at its start),
    then each other unmarked block alone, so a block that needs another's names and does not
    say so fails with a NameError.
    """
    session = [b for b in blocks if not SCRIPT_GUARD.search(b.code)]
    marked = [i for i, b in enumerate(session) if continues(b)]
    runs: list[tuple[str, list[Block]]] = []
    together = session[: marked[-1] + 1] if marked else session[:1]
    if together:
        runs.append(("session", together))
    for block in blocks:
        if SCRIPT_GUARD.search(block.code):
            runs.append(("script", [block]))
        elif not continues(block) and block is not together[0]:
            runs.append(("session", [block]))
    return runs


# ---- what every block is ---------------------------------------------------------------------------
def test_the_parser_sees_sections_fences_and_markers():
    text = (
        "## One\n```python\nx = 1\n```\n<!-- no-run: needs a GPU -->\n\n```python\ny = 2\n```\n"
        "## Two\n```text\nout\n```\n"
    )
    blocks = readme_blocks(text)
    assert [(b.section, b.lang, b.code, b.line, b.no_run) for b in blocks] == [
        ("One", "python", "x = 1\n", 3, None),
        ("One", "python", "y = 2\n", 8, "needs a GPU"),
        ("Two", "text", "out\n", 12, None),
    ]


def test_every_block_is_run_or_checked_somewhere():
    blocks = readme_blocks()
    script = training_script()
    assert [b for b in blocks if b.code == script], "the training script block is missing"
    assert runnable_python(blocks), "no python block found to run"
    for block in blocks:
        where = f"README.md:{block.line}"
        assert block.lang in {"python", "text", "toml"} | SHELL, (
            f"{where}: unexpected block language {block.lang!r}"
        )
        assert block.info == "", (
            f"{where}: use a `<!-- no-run: reason -->` line, not the info string {block.info!r}"
        )
        if block.lang != "python":
            assert block.no_run is None, f"{where}: only python blocks are run, so only they can be no-run"


def test_continuing_blocks_follow_a_block_of_their_section():
    by_section: dict[str, list[Block]] = {}
    for block in runnable_python(readme_blocks()):
        where = f"README.md:{block.line}"
        if continues(block):
            assert not SCRIPT_GUARD.search(block.code), f"{where}: a script is complete, it continues nothing"
            assert by_section.get(block.section), (
                f"{where}: continues, but no python block of its section is above it"
            )
        by_section.setdefault(block.section, []).append(block)


def test_section_runs_run_unmarked_blocks_alone():
    text = (
        "## S\n```python\na = 1\n```\n```python\nb = 2\n```\n"
        "```python\n# continues the example above: uses a\nc = a\n```\n"
        "```python\nd = 4\n```\n```python\nif __name__ == '__main__':\n    pass\n```\n"
    )
    blocks = readme_blocks(text)
    plan = [(kind, [b.code.split("\n")[-2] for b in run]) for kind, run in section_runs(blocks)]
    assert plan == [
        ("session", ["a = 1", "b = 2", "c = a"]),
        ("session", ["b = 2"]),
        ("session", ["d = 4"]),
        ("script", ["    pass"]),
    ]
    unmarked = [b for b in blocks if "c = a" not in b.code]
    assert [[b.code for b in run] for _, run in section_runs(unmarked)] == [[b.code] for b in unmarked]


def test_no_run_blocks_say_why_and_stay_few():
    marked = [b for b in readme_blocks() if b.no_run is not None]
    for block in marked:
        assert len(block.no_run.split()) >= 3, f"README.md:{block.line}: say why the block cannot run here"
    assert len(marked) <= MAX_NO_RUN, [f"README.md:{b.line}: {b.no_run}" for b in marked]


# ---- python blocks ------------------------------------------------------------------------------------
RUNNER = """\
import json, sys
namespace = {"__name__": "readme"}
for line, code in json.load(open(sys.argv[1])):
    # blank lines in front keep the README's line numbers in tracebacks
    exec(compile("\\n" * (line - 1) + code, "README.md", "exec"), namespace)
"""


def readme_env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        EMBER_RENDERER="cli",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_HOME=str(tmp_path / "hf"),
        EMBER_DATASET_CACHE=str(tmp_path / "datasets"),
        MPLBACKEND="Agg",
    )
    return env


def run(args: list[str], cwd: Path, env: dict, what: str) -> None:
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{what} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"


@pytest.mark.parametrize("section", python_sections())
def test_readme_section_runs_as_written(section, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    env = readme_env(tmp_path)
    (tmp_path / "runner.py").write_text(RUNNER)
    blocks = [b for b in runnable_python(readme_blocks()) if b.section == section]
    for kind, blocks_run in section_runs(blocks):
        if kind == "script":
            (block,) = blocks_run
            script = work / f"readme_{block.line}.py"  # workers re-import a script's module by its file
            script.write_text(block.code)
            run([script.name], work, env, f"the script at README.md:{block.line}")
            continue
        lines = [b.line for b in blocks_run]
        what = (
            f"the block at README.md:{lines[0]}, run alone (if it uses names from a block above, start it "
            "with `# continues the example above: uses ...`)"
            if len(lines) == 1
            else f"the blocks of '{section}' at README.md lines {lines}, run as one session"
        )
        (tmp_path / "blocks.json").write_text(json.dumps([[b.line, b.code] for b in blocks_run]))
        run([str(tmp_path / "runner.py"), str(tmp_path / "blocks.json")], work, env, what)


# ---- shell and command blocks --------------------------------------------------------------------------
def command_lines(block: Block) -> list[str]:
    """The commands of a block: comments dropped, continuations joined, `(N)` labels removed."""
    text = block.code.replace("\\\n", " ")
    commands = []
    for line in text.splitlines():
        line = re.sub(r"^\(\d+\)\s*", "", line.split("#", 1)[0].strip())
        if line:
            commands.append(line)
    return commands


def makefile_targets() -> set[str]:
    return set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), flags=re.M))


def pyproject_extras() -> set[str]:
    """The keys of pyproject.toml's [project.optional-dependencies] (no tomllib on Python 3.10)."""
    text = (REPO / "pyproject.toml").read_text()
    table = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([\w-]+)\s*=", table, flags=re.M))


def check_shell_command(command: str, where: str) -> None:
    argv = shlex.split(command)
    if argv[0] == "make":
        assert set(argv[1:]) <= makefile_targets(), f"{where}: no such make target in {argv[1:]}"
    elif argv[:2] == ["pip", "install"]:
        targets = [a for a in argv[2:] if not a.startswith("-")]
        assert targets, f"{where}: pip install of nothing"
        for target in targets:
            match = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", target)
            assert match, f"{where}: expected `.` or `.[extras]`, got {target!r}"
            extras = set(match.group(1).split(",")) if match.group(1) else set()
            assert extras <= pyproject_extras(), f"{where}: unknown extras {extras - pyproject_extras()}"
    elif argv[0] == "python":
        check_python_command(argv, where)
    else:
        raise AssertionError(f"{where}: no test checks the command {command!r}")


def check_python_command(argv: list[str], where: str) -> None:
    if argv[1:3] == ["-m", "pytest"]:
        return
    if argv[1] == "-m":  # a module of ember's that runs as a command
        assert argv[2].startswith("ember.") and importlib.util.find_spec(argv[2]), (
            f"{where}: {argv[2]} is not a module of ember"
        )
        return
    script = REPO / argv[1]
    assert script.is_file(), f"{where}: {argv[1]} does not exist"
    if script.parent == REPO / "examples" / "text_classification":
        covered = set(load_test_module("tests/examples/test_readme_commands.py").SCRIPTS) | {"demo"}
        assert script.stem in covered, (
            f"{where}: tests/examples/test_readme_commands.py does not run {argv[1]}"
        )


def test_shell_blocks_name_what_exists():
    checked = 0
    for block in readme_blocks():
        commands = command_lines(block)
        if block.lang in SHELL:
            for command in commands:
                check_shell_command(command, f"README.md:{block.line}")
                checked += 1
        elif block.lang == "text" and any(c.startswith("python ") for c in commands):
            for command in commands:  # a block of commands holds nothing else
                assert command.startswith("python "), f"README.md:{block.line}: {command!r} is not a command"
                check_python_command(shlex.split(command), f"README.md:{block.line}")
                checked += 1
    assert checked >= 10


# ---- toml blocks -------------------------------------------------------------------------------------
def test_toml_blocks_are_valid_ember_toml_showing_every_setting(tmp_path, monkeypatch):
    from ember.config import SETTINGS, ConfigError, files

    monkeypatch.delenv(files.CONFIG_VARIABLE, raising=False)
    blocks = [b for b in readme_blocks() if b.lang == "toml"]
    assert blocks, "the Configuration section's ember.toml example is missing"
    shown: set[str] = set()
    for block in blocks:
        directory = tmp_path / f"line{block.line}"
        directory.mkdir()
        (directory / files.FILE_NAME).write_text(block.code, encoding="utf-8")
        try:
            shown |= set(files.load(directory).values)
        except ConfigError as error:
            raise AssertionError(f"README.md:{block.line}: {error}") from None
    missing = sorted({s.name for s in SETTINGS} - shown)
    assert not missing, f"the README's ember.toml examples leave out {missing}"
