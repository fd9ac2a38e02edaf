"""How truthful the frequency each finding claims is: its level (`per-step`, `per-request`) against the blind
labels of the sites it is reported on.

    python benchmarks/level_claims.py sglang=/tmp/engines/sglang_x/sglang/srt vllm=/tmp/engines/vllm_x/vllm \
        lmdeploy=/tmp/engines/lmdeploy_x/lmdeploy torchtitan=/tmp/engines/torchtitan_x/torchtitan \
        aphrodite=/tmp/engines/aphrodite_engine_x/aphrodite exllamav2=/tmp/engines/exllamav2_x/exllamav2 \
        --labels benchmarks/engine_labels.tsv --labels benchmarks/d2h_labels.tsv \
        --labels benchmarks/d2h_finding_labels.tsv

Every finding says how often its code runs ("`X.forward` runs per step", "called from `Y` (per request)"), and
the JSON `level` carries it. A claim that is false is a false positive, whatever the construct. This runs
h2dlint over each tree with both rule families (`--select HTD1,HTD2`, one project, no cache, the test and
example folders left out as the censuses do; `--preset torchtitan=training` checks a trainer as its users
would configure it) and, for each finding on a line labelled `per-step` or
`per-request` (the first label file that has the line decides), counts:
- truthful: the finding's level is the label;
- over-claimed: it says per step where the code runs once per request;
- under-claimed: it says per request where the code runs per step.
Lines labelled otherwise (one-time, never-runs, not-h2d, not-sync) are precision's business, not this one's.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from typing import Dict, Optional, Sequence, Tuple

from d2h_findings import EXCLUDES, add_preset_option, read_labels, tree_settings

from h2dlint.project.run import check_paths

LEVELS = ("per-step", "per-request")
FAMILIES = ("HTD1", "HTD2")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("engines", nargs="+", help="NAME=ROOT for each tree")
    parser.add_argument("--labels", action="append", required=True, help="a label file; the first wins a line")
    add_preset_option(parser)
    args = parser.parse_args(argv)
    presets = dict(spec.partition("=")[::2] for spec in args.preset)
    labels: Dict[Tuple[str, str], str] = {}
    for path in args.labels:
        for key, label in read_labels(path).items():
            labels.setdefault(key, label)
    total: Counter = Counter()
    for spec in args.engines:
        engine, _, root = spec.partition("=")
        counts = judge(engine, findings(root, presets.get(engine)), labels)
        print_counts(engine if engine not in presets else f"{engine} (preset {presets[engine]})", counts)
        total.update(counts)
    print_counts("all trees", total)
    return 0


def findings(root: str, preset: Optional[str] = None) -> Dict[str, Dict[str, str]]:
    """`path:line` -> {rule family: the level its finding there claims}."""
    settings = tree_settings(root, preset, FAMILIES)
    found: Dict[str, Dict[str, str]] = {}
    for result in check_paths([root], settings, EXCLUDES, use_cache=False):
        for d in result.diagnostics:
            found.setdefault(f"{os.path.relpath(result.path, root)}:{d.span.row}", {})[d.code[:4]] = d.level
    return found


def judge(engine: str, found: Dict[str, Dict[str, str]], labels: Dict[Tuple[str, str], str]) -> Counter:
    """(family, label, claimed level) -> labelled lines."""
    counts: Counter = Counter()
    for site, claims in found.items():
        label = labels.get((engine, site))
        if label in LEVELS:
            for family, level in claims.items():
                counts[(family, label, level)] += 1
    return counts


def print_counts(title: str, counts: Counter) -> None:
    print(f"## {title}")
    for family in (*FAMILIES, "all"):
        mine = Counter({k: v for k, v in counts.items() if family in ("all", k[0])})
        judged = sum(mine.values())
        over = sum(v for (_, label, level), v in mine.items() if label == "per-request" and level == "per-step")
        under = sum(v for (_, label, level), v in mine.items() if label == "per-step" and level != "per-step")
        true = judged - over - under
        share = f"{100 * true / judged:.0f}%" if judged else "n/a"
        print(f"  {family}: labelled hot findings {judged}, truthful {true} ({share}), over-claimed (per step, "
              f"runs per request) {over}, under-claimed (per request, runs per step) {under}")


if __name__ == "__main__":
    raise SystemExit(main())
