"""Fusion on against fusion off on the example's models: the AG News and DbPedia train step and
inference batch of ``bench/model_table.py``, ember ``cpu``, each figure a process of its own,
on and off alternating round by round (so a burst of load moves both alike)::

    python bench/fusion_regression.py                  # 3 rounds, 10 steps a process
    python bench/fusion_regression.py --rounds 5 --models agnews

Prints, for each model and mode, the median over rounds of each process's median step with
fusion on and off, and on / off (the issue's target: within 3%).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from model_table import _spawn  # (bench/ is not a package)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--models", default="agnews,dbpedia")
    args = parser.parse_args(argv)
    cells = [(m, mode) for m in args.models.split(",") for mode in ("train", "infer")]
    times = {(m, mode, f): [] for m, mode in cells for f in ("on", "off")}
    for r in range(args.rounds):
        for model, mode in cells:
            order = ("on", "off") if r % 2 == 0 else ("off", "on")
            for fusion in order:
                env = os.environ.copy()
                env["EMBER_FUSION"] = "1" if fusion == "on" else "0"
                result = _spawn("ember", model, mode, args.steps, env=env)
                times[model, mode, fusion].append(result["median_s"])
    print(f"ember cpu, median step over {args.rounds} processes each (ms)")
    print(f"{'model':<9}{'mode':<7}{'fusion on':>11}{'fusion off':>12}{'on/off':>9}")
    for model, mode in cells:
        on = statistics.median(times[model, mode, "on"]) * 1e3
        off = statistics.median(times[model, mode, "off"]) * 1e3
        print(f"{model:<9}{mode:<7}{on:>11.1f}{off:>12.1f}{on / off:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
