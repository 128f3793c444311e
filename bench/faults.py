"""Fault-injection and hardening figures (issue 12). Run: python bench/faults.py NAME [--quick]

Each figure lives in its own module `bench/_faults_<name>.py` with a `main(quick: bool) -> int`
that prints the figure and returns an exit code (0: the figure met its goal). This file only
dispatches, so several people can add figures without touching each other's code:

    python bench/faults.py fuzz        # malformed OTLP against receivers, decoders, transforms
    python bench/faults.py secrets     # API key / exporter header grepped everywhere
    python bench/faults.py injection   # prompt injection against every judge built-in
    python bench/faults.py crash|outage|storm|overload|disk
    python bench/faults.py timing      # runs scored whole when their pieces arrive apart
    python bench/faults.py all         # every figure whose module is present
    --quick                            # a CI-sized run of the same figure
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Run as a script, bench/ is first on sys.path; the project root is needed for `tests.fakes`.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FIGURES = ("fuzz", "secrets", "injection", "crash", "outage", "storm", "overload", "disk",
           "timing")


def _available() -> list[str]:
    return [name for name in FIGURES if (HERE / f"_faults_{name}.py").exists()]


def run(name: str, quick: bool) -> int:
    """Import `bench/_faults_<name>.py` and run its `main(quick)`; its exit code."""
    if not (HERE / f"_faults_{name}.py").exists():
        print(f"{name}: bench/_faults_{name}.py is not there (yet)", file=sys.stderr)
        return 2
    module = importlib.import_module(f"bench._faults_{name}")
    started = time.monotonic()
    print(f"== {name}{' (quick)' if quick else ''}", flush=True)
    code = int(module.main(quick=quick))
    print(f"== {name}: {'goal met' if code == 0 else 'GOAL MISSED'} "
          f"({time.monotonic() - started:.0f} s)", flush=True)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("figure", choices=(*FIGURES, "all"))
    parser.add_argument("--quick", action="store_true", help="a CI-sized run")
    args = parser.parse_args(argv)
    names = _available() if args.figure == "all" else [args.figure]
    codes = [run(name, args.quick) for name in names]
    return max(codes, default=0)


if __name__ == "__main__":
    sys.exit(main())
