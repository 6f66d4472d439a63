"""``python -m ember.config``: the effective configuration, one line per setting, with where
each value came from (the default, the file, or an environment variable); ``--json`` prints
the same as JSON. Exits 1, printing the error, when the file or a variable is invalid."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import ConfigError, Resolved, config_file, effective


def _shown(value: object) -> object:
    return str(value) if isinstance(value, Path) else value


def _as_json(resolved: list[Resolved], file: Path | None) -> str:
    rows = [
        {
            "setting": r.setting.name,
            "value": _shown(r.value),
            "source": r.source,
            "variable": r.setting.env,
            "doc": r.setting.doc,
        }
        for r in resolved
    ]
    return json.dumps({"file": None if file is None else str(file), "settings": rows}, indent=2)


def _as_table(resolved: list[Resolved], file: Path | None) -> str:
    heading = f"configuration file: {file}" if file else "configuration file: none (defaults)"
    rows = [("setting", "value", "source", "variable")]
    for r in resolved:
        value = "unset" if r.value is None else json.dumps(_shown(r.value))
        rows.append((r.setting.name, value, r.source, r.setting.env))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[3] for row in rows]
    return "\n".join([heading, *lines])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ember.config",
        description="Print ember's effective configuration and where each value came from.",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    try:
        resolved = effective()
    except ConfigError as error:
        print(f"ember.config: {error}", file=sys.stderr)
        return 1
    file = config_file().path
    print(_as_json(resolved, file) if args.json else _as_table(resolved, file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
