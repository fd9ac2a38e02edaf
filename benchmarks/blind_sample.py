"""Write h2dlint's findings that no census row labels yet, mixed with as many decoys, for labelling blind.

    python benchmarks/blind_sample.py sglang=/tmp/engines/sglang_x/sglang/srt ... \
        --labels benchmarks/engine_labels.tsv --out /tmp/blind.md --key /tmp/blind_key.tsv

A finding on a line the census has not labelled (a construct no loose scan lists) still needs a label, and the
labeller must not know that h2dlint reported it. So each such line is mixed with a decoy: an unlabelled line of
the same tree that calls `.to(`, `.cuda(`, `.copy_(` or `new_tensor(` and that h2dlint does not report. The
sample lists all of them in sha1 order of `path:line`, with context and no verdicts; `--key` (kept from the
labeller) says which lines were findings, so only those labels count.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
from typing import List, Optional, Sequence, Set, Tuple

from engine_findings import RUNTIME_SCOPE_EXCLUDES, _context, _read_labels, _run_engine

_COPY_CALL = re.compile(r"\.(to|cuda|copy_|new_tensor)\(")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", metavar="NAME=PATH")
    parser.add_argument("--labels", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args(argv)
    labels = _read_labels(args.labels)
    entries: List[Tuple[str, str, str, int, bool]] = []  # (hash, engine, root-relative path, line, is finding)
    for spec in args.trees:
        name, _, root = spec.partition("=")
        report = _run_engine(name, root, RUNTIME_SCOPE_EXCLUDES)
        fresh = sorted(site for site in report.findings if (name, f"{site[0]}:{site[1]}") not in labels)
        decoys = _decoys(name, root, fresh, set(report.findings), labels)
        for (path, line), finding in [(s, True) for s in fresh] + [(s, False) for s in decoys]:
            entries.append((_hash(name, path, line), name, path, line, finding))
        print(f"{name}: {len(fresh)} unlabelled findings, {len(decoys)} decoys")
    entries.sort()
    with open(args.out, "w", encoding="utf-8") as out, open(args.key, "w", encoding="utf-8") as key:
        for _, name, path, line, finding in entries:
            root = dict(spec.partition("=")[::2] for spec in args.trees)[name]
            out.write(f"### {name} {path}:{line}\n```python\n")
            out.write("\n".join(_context(os.path.join(root, path), line, before=6, after=2)) + "\n```\n")
            key.write(f"{name}\t{path}:{line}\t{'finding' if finding else 'decoy'}\n")
    return 0


def _decoys(
    name: str, root: str, fresh: List[Tuple[str, int]], reported: Set[Tuple[str, int]], labels: dict
) -> List[Tuple[str, int]]:
    """One unreported, unlabelled copy-like line per finding, from the same files where possible."""
    candidates: List[Tuple[str, int]] = []
    for path in sorted({p for p, _ in fresh}) or []:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, start=1):
                site = (path, number)
                if _COPY_CALL.search(text) and site not in reported and (name, f"{path}:{number}") not in labels:
                    candidates.append(site)
    candidates.sort(key=lambda s: _hash(name, *s))
    return candidates[: len(fresh)]


def _hash(name: str, path: str, line: int) -> str:
    return hashlib.sha1(f"{name} {path}:{line}".encode()).hexdigest()


if __name__ == "__main__":
    sys.exit(main())
