"""Time h2dlint against flake8 (pyflakes) and ruff on one source tree, as issue 6 asks.

    python benchmarks/speed.py TREE [--runs 5] [--json speed.json] [--jobs N] [--baseline SRC]

Measures, each as the median of several runs of a fresh process:
- h2dlint cold (`--no-cache`), warm (second run, nothing changed) and one file changed (warm, after
  appending a comment to the tree's largest file; the file is restored afterwards);
- `flake8 --select F -j2`, `ruff check --select F --no-cache` and `ruff check --select F` (cached);
- TorchFix, when the `torchfix` command is installed;
- with `--baseline SRC` (a checkout of another h2dlint version, such as `git worktree add /tmp/old REV`), the
  same three h2dlint runs with that version's code, so old and new are compared in one run on one machine.
Prints a table with ratios (cold against flake8, warm against ruff cached) and writes JSON. flake8 and ruff
are not h2dlint dependencies: install them in the environment that runs this script.

Every tool's process runs without PYTHONDONTWRITEBYTECODE, whatever the calling environment says: a user's
`pip install` writes .pyc files, and without them each Python process (h2dlint, flake8, the baseline)
compiles its modules from source on every run. The same holds for every tool, so the comparison stays fair.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence

# Issue 14's goals (issue 6 asked for 0.4x and 5x).
GOAL_COLD_VS_FLAKE8 = 0.25
GOAL_WARM_VS_RUFF_CACHED = 4.0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree")
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median reported)")
    parser.add_argument("--slow-runs", type=int, default=3, help="runs for tools slower than 10 s")
    parser.add_argument("--json", default="speed.json", help="where to write the results")
    parser.add_argument("--jobs", type=int, default=None, help="h2dlint --jobs (default: its own default)")
    parser.add_argument("--baseline", default=None, help="a checkout of another h2dlint version to time too")
    args = parser.parse_args(argv)
    tree = os.path.abspath(args.tree)
    with tempfile.TemporaryDirectory(prefix="h2dlint-speed-") as scratch:
        rows = measure_all(tree, scratch, args)
    report = {
        "tree": tree,
        "files": count_files(tree),
        "lines": count_lines(tree),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "results": rows,
    }
    print(render_table(report))
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
    print(f"\nwrote {args.json}")
    return 0


def tool_environment() -> Dict[str, str]:
    """The environment of every timed process: this one's, with bytecode written and read (see above)."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def measure_all(tree: str, scratch: str, args: argparse.Namespace) -> Dict[str, dict]:
    check = ["check", tree] + (["-j", str(args.jobs)] if args.jobs else [])
    ruff = ruff_command()
    ruff_cache = ["--cache-dir", os.path.join(scratch, "ruff-cache")]
    rows: Dict[str, dict] = {}
    cache_env = {**tool_environment(), "H2DLINT_CACHE_DIR": os.path.join(scratch, "h2dlint-cache")}
    rows.update(h2dlint_rows("h2dlint", [sys.executable, "-m", "h2dlint", *check], cache_env, tree, args.runs))
    if args.baseline:
        # -P: the baseline's code, not whatever the current folder holds, comes first on the path.
        env = {**tool_environment(), "PYTHONPATH": os.path.abspath(args.baseline),
               "H2DLINT_CACHE_DIR": os.path.join(scratch, "baseline-cache")}
        command = [sys.executable, "-P", "-m", "h2dlint", *check]
        rows.update(h2dlint_rows("baseline h2dlint", command, env, tree, args.runs))
    rows["flake8 --select F -j2"] = timed(
        [sys.executable, "-m", "flake8", "--select", "F", "-j2", tree], args.slow_runs
    )
    if ruff is not None:
        rows["ruff check --select F --no-cache"] = timed(ruff + ["--select", "F", "--no-cache", tree], args.runs)
        run(ruff + ["--select", "F"] + ruff_cache + [tree])
        rows["ruff check --select F (cached)"] = timed(ruff + ["--select", "F"] + ruff_cache + [tree], args.runs)
    torchfix = shutil.which("torchfix")
    if torchfix is not None:
        rows["TorchFix"] = timed([torchfix, tree], 1)
    add_ratios(rows)
    return rows


def h2dlint_rows(label: str, h2dlint: List[str], env: Dict[str, str], tree: str, runs: int) -> Dict[str, dict]:
    """Cold (`--no-cache`), warm (nothing changed) and one file changed (the tree's largest), each timed."""
    rows = {f"{label} cold (--no-cache)": timed(h2dlint + ["--no-cache"], runs, env)}
    run(h2dlint, env)  # fill the cache
    rows[f"{label} warm"] = timed(h2dlint, runs, env)
    largest = largest_file(tree)
    rows[f"{label} one file changed"] = timed(h2dlint, runs, env, before=changing(largest))
    rows[f"{label} one file changed"]["file"] = os.path.relpath(largest, tree)
    return rows


def ruff_command() -> Optional[List[str]]:
    found = shutil.which("ruff") or shutil.which("ruff", path=os.path.dirname(sys.executable))
    return [found, "check"] if found else None


def run(command: List[str], env: Optional[Dict[str, str]] = None) -> float:
    env = tool_environment() if env is None else env
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - start


def timed(
    command: List[str],
    runs: int,
    env: Optional[Dict[str, str]] = None,
    before: Optional[Callable[[int], Callable[[], None]]] = None,
) -> dict:
    times = []
    for index in range(max(1, runs)):
        restore = before(index) if before else None
        try:
            times.append(run(command, env))
        finally:
            if restore:
                restore()
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest child process so far
    return {
        "command": " ".join(command),
        "median_s": statistics.median(times),
        "runs_s": times,
        "peak_rss_mib_so_far": round(peak_kib / 1024),
    }


def changing(path: str) -> Callable[[int], Callable[[], None]]:
    """Before each run: append a distinct comment to `path`; afterwards: put the original bytes back."""

    def before(index: int) -> Callable[[], None]:
        with open(path, "rb") as handle:
            original = handle.read()
        stat = os.stat(path)
        with open(path, "ab") as handle:
            handle.write(f"\n# h2dlint speed benchmark, run {index}\n".encode())

        def restore() -> None:
            with open(path, "wb") as handle:
                handle.write(original)
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))

        return restore

    return before


def add_ratios(rows: Dict[str, dict]) -> None:
    flake8 = rows.get("flake8 --select F -j2", {}).get("median_s")
    ruff_cached = rows.get("ruff check --select F (cached)", {}).get("median_s")
    for row in rows.values():
        if flake8:
            row["vs_flake8"] = row["median_s"] / flake8
        if ruff_cached:
            row["vs_ruff_cached"] = row["median_s"] / ruff_cached


def render_table(report: dict) -> str:
    lines = [
        (
            f"tree: {report['tree']} ({report['files']} files, {report['lines']} lines); "
            f"{report['machine']['cpus']} CPUs, Python {report['machine']['python']}; every tool run with "
            "bytecode (.pyc) written and read, as after a pip install (PYTHONDONTWRITEBYTECODE unset)"
        ),
        "",
        "| run | median s | × flake8 -j2 | × ruff cached |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, row in report["results"].items():
        ratios = [f"{row[k]:.3f}" if k in row else "" for k in ("vs_flake8", "vs_ruff_cached")]
        lines.append(f"| {name} | {row['median_s']:.3f} | {ratios[0]} | {ratios[1]} |")
    results = report["results"]
    cold = results.get("h2dlint cold (--no-cache)", {}).get("vs_flake8")
    warm = results.get("h2dlint warm", {}).get("vs_ruff_cached")
    if cold is not None:
        verdict = "met" if cold <= GOAL_COLD_VS_FLAKE8 else "MISSED"
        lines.append(f"\ncold goal (≤ {GOAL_COLD_VS_FLAKE8}× flake8): {verdict} ({cold:.3f}×)")
    if warm is not None:
        verdict = "met" if warm <= GOAL_WARM_VS_RUFF_CACHED else "MISSED"
        lines.append(f"warm goal (≤ {GOAL_WARM_VS_RUFF_CACHED}× ruff cached): {verdict} ({warm:.2f}×)")
    return "\n".join(lines)


def python_files(tree: str) -> List[str]:
    found = []
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        found.extend(os.path.join(folder, f) for f in files if f.endswith(".py"))
    return found


def count_files(tree: str) -> int:
    return len(python_files(tree))


def count_lines(tree: str) -> int:
    total = 0
    for path in python_files(tree):
        with open(path, "rb") as handle:
            total += handle.read().count(b"\n")
    return total


def largest_file(tree: str) -> str:
    return max(python_files(tree), key=os.path.getsize)


if __name__ == "__main__":
    sys.exit(main())
