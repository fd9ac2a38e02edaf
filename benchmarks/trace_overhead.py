"""What `h2dlint trace` costs: the reference's CPU decode loop, untraced and traced, and `check` with a profile.

    python benchmarks/trace_overhead.py [--steps 24] [--rounds 5] [--python PATH]

Prints the median wall time of `python run_decode.py --device cpu --steps N` run plainly and under
`h2dlint trace -- ...` (the whole command: starting the tracer in the process, counting, merging and writing
the records), their ratio (the goal is at most 1.5x), then the median time of `h2dlint check` on the
reference without and with `--profile` (the goal is at most +10%), both without the cache.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Sequence

REFERENCE = Path(__file__).resolve().parent.parent / "fixtures" / "reference"
H2DLINT = [sys.executable, "-m", "h2dlint"]


def wall(command: Sequence[str], rounds: int, check: bool = True) -> float:
    times: List[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(list(command), cwd=REFERENCE, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--python", default=sys.executable, help="the Python that runs the decode loop (with torch)")
    args = parser.parse_args()
    program = [args.python, "run_decode.py", "--device", "cpu", "--steps", str(args.steps)]
    with tempfile.TemporaryDirectory() as folder:
        profile = os.path.join(folder, "trace.json")
        traced_command = [*H2DLINT, "trace", "--no-syncs", "-o", profile, "--", *program]
        plains, traceds = [], []
        for _ in range(args.rounds):  # alternating, so a change in the machine's load hits both
            plains.append(wall(program, 1))
            traceds.append(wall(traced_command, 1))
        plain, traced = statistics.median(plains), statistics.median(traceds)
        version = subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True).stdout.strip()
        print(f"python {version}, {args.rounds} rounds, --steps {args.steps}")
        print(f"run_decode untraced: {plain:.3f} s   traced: {traced:.3f} s   ratio: {traced / plain:.2f}x")
        check = [*H2DLINT, "check", ".", "--no-cache", "-q"]
        without = wall(check, args.rounds, check=False)
        with_profile = wall([*check, "--profile", profile], args.rounds, check=False)
        extra = with_profile / without - 1
        print(f"check: {without:.3f} s   with --profile: {with_profile:.3f} s   extra: {extra:+.1%}")


if __name__ == "__main__":
    main()
