"""How findings change when hotness follows calls across files: one file at a time vs the whole project.

    python benchmarks/cross_file.py TREE [--json cross_file.json]

Prints the number of findings reasoning about each file alone (what `check_source` and a flake8 plugin
without a cached index see) and about the whole tree (what `h2dlint check TREE` reports), then every site
found only one way, with the reason the project run gives. Nothing is cached.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Dict, Optional, Sequence

from h2dlint.facts.settings import Settings
from h2dlint.project.files import discover
from h2dlint.project.findings import check_file
from h2dlint.project.run import analyse


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree")
    parser.add_argument("--json", default=None, help="also write the comparison here")
    args = parser.parse_args(argv)
    settings = Settings()
    candidates = discover([args.tree])
    alone = _by_site(check_file(c.path, settings) for c in candidates if c.error is None)
    project = _by_site(analyse(candidates, settings).results)
    new = sorted(project.keys() - alone.keys())
    lost = sorted(alone.keys() - project.keys())
    print(f"{args.tree}: {len(candidates)} files")
    print(f"findings, each file alone: {len(alone)}")
    print(f"findings, whole project:   {len(project)} ({len(new)} new, {len(lost)} no longer reported)")
    for site in new:
        print(f"NEW  {site}: {project[site]}")
    for site in lost:
        print(f"GONE {site}: {alone[site]}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"alone": alone, "project": project, "new": new, "gone": lost}, handle, indent=2)
    return 0


def _by_site(results) -> Dict[str, str]:
    return {
        f"{result.path}:{d.span.row}:{d.span.column} {d.code}": d.message.split("; ", 1)[-1].split(". ", 1)[0]
        for result in results
        for d in result.diagnostics
    }


if __name__ == "__main__":
    sys.exit(main())
