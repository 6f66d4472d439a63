"""Run ember's benchmarks and print a table of medians and ratios, then write it as JSON.

    python bench/run.py                       # every bench_*.py except the CUDA ones
    python bench/run.py bench/bench_kernels.py -k attention
    python bench/run.py --json out.json
    python bench/run.py --repeat 3 bench/bench_kernels.py   # medians over 3 whole runs

Ratios are speed-ups of the first ember implementation of a group (ember-cpu, else ember-*,
else native) against NumPy and PyTorch measured in the same run: "x2.0 vs numpy" means twice as
fast as the op composed from NumPy. Each implementation's rounds run one after the other, so a
slow spell of the machine can fall on one of them only; ``--repeat N`` runs the whole selection N
times and takes each figure's median over the runs (the per-run medians go to the JSON too).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))


def collect(pytest_args: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "raw.json")
        # pytest arguments pass through unchanged; with no path among them, run every bench file
        has_target = any(os.path.exists(a.split("::")[0]) for a in pytest_args if not a.startswith("-"))
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            *([] if has_target else [HERE]),
            *pytest_args,
            "-q",
            "-p",
            "no:cacheprovider",
            "--benchmark-only",
            f"--benchmark-json={raw}",
            "-o",
            "python_files=bench_*.py",
            "-o",
            "python_functions=bench_* test_*",
            "-o",
            "testpaths=",
        ]
        if not any(a.startswith("-m") for a in pytest_args):
            cmd += ["-m", "not cuda"]
        print("$", " ".join(cmd), flush=True)
        rc = subprocess.call(cmd, cwd=os.path.dirname(HERE))
        if rc not in (0, 5) or not os.path.exists(raw):
            sys.exit(f"benchmarks failed (pytest exit {rc})")
        with open(raw) as f:
            return json.load(f)


def table(raws: list[dict]) -> list[dict]:
    """One row per benchmark group: each implementation's median (over ``raws``, several runs
    of the same selection, the median of their medians) and the speed-ups of ember's."""
    runs = defaultdict(lambda: defaultdict(list))
    for raw in raws:
        for b in raw["benchmarks"]:
            impl = b.get("extra_info", {}).get("impl", b["name"])
            runs[b["group"] or b["name"]][impl].append(b["stats"]["median"])
    rows = []
    for group, per_impl in runs.items():
        impls = {k: statistics.median(v) for k, v in per_impl.items()}
        ours = next((i for i in ("ember-cpu", "native") if i in impls), None) or next(
            (i for i in impls if i.startswith("ember")), None
        )
        row = {"group": group, "medians_ms": {k: v * 1e3 for k, v in impls.items()}}
        if len(raws) > 1:
            row["runs_ms"] = {k: [t * 1e3 for t in v] for k, v in per_impl.items()}
        if ours:
            row["ember_impl"] = ours
            for base in ("numpy", "torch", "numba"):
                if base in impls and base != ours:
                    row[f"speedup_vs_{base}"] = impls[base] / impls[ours]
        rows.append(row)
    return rows


def render(rows: list[dict]) -> str:
    impls = sorted({i for r in rows for i in r["medians_ms"]}, key=lambda s: (not s.startswith("ember"), s))
    head = ["kernel"] + [f"{i} ms" for i in impls] + ["vs numpy", "vs torch", "vs numba"]
    lines = [head]
    for r in rows:
        cells = [r["group"]] + [f"{r['medians_ms'][i]:.3f}" if i in r["medians_ms"] else "-" for i in impls]
        for base in ("numpy", "torch", "numba"):
            v = r.get(f"speedup_vs_{base}")
            cells.append(f"x{v:.2f}" if v is not None else "-")
        lines.append(cells)
    widths = [max(len(line[c]) for line in lines) for c in range(len(head))]
    out = []
    for n, line in enumerate(lines):
        out.append(
            "  ".join(
                cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in enumerate(zip(line, widths))
            )
        )
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--json", default=os.path.join(HERE, "results", "latest.json"), help="where to write the table"
    )
    ap.add_argument("--repeat", type=int, default=1, help="whole runs; each figure is their median")
    args, pytest_args = ap.parse_known_args()
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, got {args.repeat}")
    rows = table([collect(pytest_args) for _ in range(args.repeat)])
    print()
    print(render(rows))
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"rows": rows}, f, indent=2)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
