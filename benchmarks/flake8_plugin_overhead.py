"""What the flake8 plugin costs per file, for files that mention torch and for files that do not.

    python benchmarks/flake8_plugin_overhead.py [FOLDER...]
        (default: this Python's standard library, without site-packages, and fixtures/reference)

Prints, per group, the number of files and lines, the mean time of the plugin's `run()` per file, and, for
scale, the mean time of `ast.parse` (which flake8 pays for every file before any tree plugin runs).
"""

from __future__ import annotations

import ast
import sys
import sysconfig
import time
from pathlib import Path

from h2dlint.faces.flake8_plugin import Flake8Checker

REFERENCE = Path(__file__).resolve().parent.parent / "fixtures" / "reference"


def main() -> None:
    folders = [Path(arg) for arg in sys.argv[1:]] or [Path(sysconfig.get_paths()["stdlib"]), REFERENCE]
    groups = {"without torch": [], "with torch": []}
    for path in sorted(p for folder in folders for p in folder.rglob("*.py") if "site-packages" not in p.parts):
        try:
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            ast.parse("".join(lines))
        except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, OSError):
            continue  # flake8 would stop at E902/E999 before any tree plugin runs
        groups["with torch" if "torch" in "".join(lines) else "without torch"].append((path, lines))
    print("folders: " + ", ".join(map(str, folders)))
    for name, files in groups.items():
        if not files:
            print(f"{name}: no files")
            continue
        plugin = _mean_seconds(files, lambda path, lines: list(Flake8Checker(None, lines, str(path)).run()))
        parse = _mean_seconds(files, lambda path, lines: ast.parse("".join(lines)))
        line_count = sum(len(lines) for _, lines in files)
        print(
            f"{name}: {len(files)} files, {line_count} lines; plugin run() {plugin * 1e6:.1f} us/file, "
            f"ast.parse {parse * 1e6:.1f} us/file (plugin = {plugin / parse:.3f} x ast.parse)"
        )


def _mean_seconds(files, work) -> float:
    start = time.perf_counter()
    for path, lines in files:
        work(path, lines)
    return (time.perf_counter() - start) / len(files)


if __name__ == "__main__":
    main()
