"""Which labelled census sites each heuristic decides: switch it off, and list the sites whose verdict changes.

    python benchmarks/heuristic_evidence.py sglang=/tmp/engines/sglang_x/sglang/srt \
        vllm=/tmp/engines/vllm_x/vllm lmdeploy=/tmp/engines/lmdeploy_x/lmdeploy \
        --labels benchmarks/engine_labels.tsv [--only ID ...]

For each engine it checks the runtime scope (as `engine_findings.py` does) with every heuristic on, then
once per heuristic with that one off (`disable_heuristics`), and prints, per heuristic, the labelled sites
(`engine path:line label`) that lose their finding (`-`) or gain one (`+`), with totals per label. A hot
heuristic is justified by per-step / per-request sites it alone reports; a cold or one-time one by
one-time sites it alone keeps quiet. These rows are the `evidence` of `h2dlint.facts.heuristics`; the output
for sglang 0.5.23, vllm 0.33.0 and lmdeploy is kept in `benchmarks/heuristic_evidence.txt`.

Heuristics decided in propagation reuse the summaries of the first run; those decided in the walk (guards,
loops, site markers) summarise every file again.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Set, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from engine_findings import RUNTIME_SCOPE_EXCLUDES, _read_labels  # noqa: E402

from h2dlint.facts.heuristics import HEURISTICS, Group  # noqa: E402
from h2dlint.facts.settings import Settings  # noqa: E402
from h2dlint.project.config import Overrides, config_for_path, settings_from  # noqa: E402
from h2dlint.project.files import discover  # noqa: E402
from h2dlint.project.run import ProjectRun, analyse  # noqa: E402

# Heuristics the single walk applies, so that switching one off changes the files' summaries.
DECIDED_IN_THE_WALK = frozenset(h.id for h in HEURISTICS if h.group in (Group.GUARD, Group.LOOP)) | {"cold-marker"}

Site = Tuple[str, int]  # (path relative to the tree, row)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    labels = _read_labels(args.labels)
    wanted = args.only or [h.id for h in HEURISTICS]
    changes: Dict[str, List[Tuple[str, str, str]]] = {h: [] for h in wanted}  # id -> (sign, row, label)
    for spec in args.engines:
        name, _, root = spec.partition("=")
        started = time.perf_counter()
        for heuristic, sign, site in _engine_changes(root, wanted):
            label, _ = labels.get((name, f"{site[0]}:{site[1]}"), ("unlabelled", ""))
            changes[heuristic].append((sign, f"{name} {site[0]}:{site[1]}", label))
        print(f"# {name}: {len(wanted) + 1} runs in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    for heuristic in wanted:
        rows = changes[heuristic]
        totals = Counter(f"{sign}{label}" for sign, _, label in rows)
        print(f"## {heuristic}: " + (", ".join(f"{k} {n}" for k, n in sorted(totals.items())) or "no change"))
        for sign, row, label in sorted(rows, key=lambda r: (r[2], r[1])):
            print(f"{sign} {row} {label}")
    return 0


def _engine_changes(root: str, wanted: Sequence[str]):
    candidates = discover([root], RUNTIME_SCOPE_EXCLUDES)
    settings = settings_from(config_for_path(root), Overrides())
    base = analyse(candidates, settings)
    flagged = _flagged(base, root)
    summarised = {p: (*base.stats[p], file) for p, file in base.summaries.items()}
    for heuristic in wanted:
        off = _without(settings, heuristic)
        walk = heuristic in DECIDED_IN_THE_WALK
        run = analyse(candidates, off) if walk else analyse(candidates, off, summarised=summarised)
        now = _flagged(run, root)
        yield from ((heuristic, "-", site) for site in sorted(flagged - now))
        yield from ((heuristic, "+", site) for site in sorted(now - flagged))


def _without(settings: Settings, heuristic: str) -> Settings:
    return replace(settings, disable_heuristics=settings.disable_heuristics + (heuristic,))


def _flagged(run: ProjectRun, root: str) -> Set[Site]:
    return {(os.path.relpath(r.path, root), d.span.row) for r in run.results for d in r.diagnostics}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engines", nargs="+", metavar="NAME=ROOT")
    parser.add_argument("--labels", required=True, help="benchmarks/engine_labels.tsv")
    parser.add_argument("--only", nargs="*", metavar="ID", help="these heuristics only")
    return parser


if __name__ == "__main__":
    sys.exit(main())
