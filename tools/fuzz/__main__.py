"""`python -m tools.fuzz`: a fuzz campaign from the command line, ending with the table.

Example (the long run):
    nice -n 15 python -m tools.fuzz --inputs 1000000 --target all --findings fuzz-findings

Ctrl-C or SIGTERM stops a run early and prints the table of the inputs judged so far. The
exit status is 1 when anything but clean errors and correct loads was found.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from . import FORMATS, TARGETS, format_table, run


def _split(total: int, names: list[str]) -> dict[str, int]:
    share, extra = divmod(total, len(names))
    return {name: share + (1 if i < extra else 0) for i, name in enumerate(names)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.fuzz", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--inputs", type=int, default=10_000, help="inputs in all (split evenly over the targets)"
    )
    parser.add_argument(
        "--target",
        default="all",
        help=f"'all' ({', '.join(FORMATS)}) or a comma-separated list of {sorted(TARGETS)}",
    )
    parser.add_argument("--seed", type=int, default=0, help="selects the inputs (default 0)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="child processes")
    parser.add_argument("--batch", type=int, default=250, help="inputs per task sent to a child")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per input before it is a hang")
    parser.add_argument("--findings", default=None, help="directory to write the inputs of findings to")
    parser.add_argument("--report-every", type=float, default=60.0, help="seconds between progress tables")
    args = parser.parse_args(argv)
    names = (
        list(FORMATS) if args.target == "all" else [n.strip() for n in args.target.split(",") if n.strip()]
    )
    unknown = [n for n in names if n not in TARGETS]
    if unknown or not names:
        parser.error(f"unknown target(s) {unknown}; expected 'all' or some of {sorted(TARGETS)}")
    if args.inputs < 1:
        parser.error("--inputs must be >= 1")

    def progress(tallies, elapsed):
        print(format_table(tallies, elapsed), flush=True)
        print(flush=True)

    def stop(signum, frame):  # `kill <pid>` ends a long run early, with its table
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    started = time.monotonic()
    tallies = run(
        _split(args.inputs, names),
        seed=args.seed,
        jobs=args.jobs,
        batch=args.batch,
        timeout=args.timeout,
        findings_dir=args.findings,
        report=progress,
        report_every=args.report_every,
    )
    elapsed = time.monotonic() - started
    done = sum(tally.inputs for tally in tallies.values())
    print(format_table(tallies, elapsed))
    if done < args.inputs:
        print(f"stopped early: {done:,} of {args.inputs:,} inputs")
    bad = [f for tally in tallies.values() for f in tally.findings]
    for finding in bad[:50]:
        print(f"- {finding.target} #{finding.index}: {finding.outcome}: {finding.detail} [{finding.note}]")
    if len(bad) > 50:
        print(f"... and {len(bad) - 50} more")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
