"""Recall and precision of the device-to-host rules (HTD2xx) on the blind D2H census (`d2h_labels.tsv`).

    python benchmarks/d2h_findings.py sglang=/tmp/engines/sglang_x/sglang/srt vllm=/tmp/engines/vllm_x/vllm \
        lmdeploy=/tmp/engines/lmdeploy_x/lmdeploy torchtitan=/tmp/engines/torchtitan_x/torchtitan \
        aphrodite=/tmp/engines/aphrodite_engine_x/aphrodite --labels benchmarks/d2h_labels.tsv \
        [--preset torchtitan=training]

Runs h2dlint over each tree as `h2dlint check --select HTD2 TREE` does (one project, no cache; `--preset` as a
tree's users would set it) and joins its
findings by `path:line` with the labels, which `benchmarks/d2h_scan.py` sampled and a reader labelled without
h2dlint's verdicts. The sample is in sha1 order of `path:line`, unrelated to the rules, so over the labelled
sites:
- hot = labels `per-step` and `per-request` (real syncs in code that runs per step or per request);
- recall = labelled hot sites h2dlint reports / labelled hot sites (goal: at least 60%);
- not-hot share = reported labelled sites whose label is not hot (one-time, never-runs, not-sync) / reported
  labelled sites (goal: at most 15%);
and the same per rule (a site reported by several rules counts for each). Findings on unlabelled lines are
counted but not judged. Wilson 95% intervals are given for both rates.

`--finding-labels FILE` (`d2h_finding_labels.tsv`, from `d2h_blind_sample.py`) adds labels of a uniform sample
of the findings themselves, labelled blind among decoys: the not-hot share over those findings that are still
reported, per tree and overall. They never count towards recall (they were chosen because h2dlint reported
them), and the decoys' labels are not used.

`--fresh-labels FILE` (`d2h_fresh_labels.tsv`) adds labels of fresh uniform samples of the finding lines that
no label file had reached when they were drawn. They count as sampled findings too; and because later rules
were never chosen by reading them, their not-hot share is the unbiased estimate for every finding line that
no label reaches. The script then estimates the not-hot share of all reported lines: labelled lines at their
labels, the rest at that fresh rate (the range uses the fresh rate's Wilson interval).
"""

from __future__ import annotations

import argparse
import ast
import math
import os
from collections import Counter, defaultdict
from typing import Dict, Optional, Sequence, Set, Tuple

from h2dlint.facts.allowed_syncs import DEFAULT_SYNC_ALLOWED_CONTEXTS, sync_allowed_region
from h2dlint.facts.settings import Settings
from h2dlint.project.config import Overrides, config_for_path, settings_from
from h2dlint.project.run import check_paths

HOT_LABELS = frozenset({"per-step", "per-request"})
EXCLUDES = ("test_*.py", "*_test.py", "tests/", "test/", "benchmarks/", "examples/", "example.py")

Labels = Dict[Tuple[str, str], str]  # (engine, "path:line") -> label


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("engines", nargs="+", help="NAME=ROOT for each tree")
    parser.add_argument("--labels", required=True)
    parser.add_argument("--finding-labels", default=None, help="blind labels of a uniform sample of findings")
    parser.add_argument("--fresh-labels", default=None, help="blind labels of fresh samples of unlabelled findings")
    add_preset_option(parser)
    args = parser.parse_args(argv)
    presets = dict(spec.partition("=")[::2] for spec in args.preset)
    labels = read_labels(args.labels)
    fresh = read_labels(args.fresh_labels) if args.fresh_labels else {}
    sampled = {**(read_labels(args.finding_labels) if args.finding_labels else {}), **fresh}
    every_label = {**labels, **sampled}
    strata: Counter = Counter()
    fresh_totals: Counter = Counter()
    totals: Counter = Counter()
    by_design: Counter = Counter()
    kept_total = 0
    sampled_totals: Counter = Counter()
    for spec in args.engines:
        name, _, root = spec.partition("=")
        found = findings(root, presets.get(name))
        counts = judge(name, found, labels)
        print_tree(name, found, counts)
        totals.update(counts["all"])
        kept = kept_on_purpose(name, root, labels)
        kept_total += len(kept)
        by_design.update(judge(name, found, {k: v for k, v in labels.items() if k not in kept})["all"])
        if sampled:
            judged = sampled_findings(name, found, sampled)
            print_sampled(judged)
            sampled_totals.update(judged)
        strata.update(label_strata(name, found, every_label))
        fresh_totals.update(sampled_findings(name, found, fresh))
    print("## all trees")
    print_rates("all rules", totals)
    print_rates(f"without the {kept_total} hot syncs kept on purpose (in a `sync-allowed-contexts` block)", by_design)
    if sampled:
        print_sampled(sampled_totals)
    if fresh:
        print_estimate(strata, fresh_totals)
    return 0


def label_strata(engine: str, found: Dict[str, Set[str]], labels: Labels) -> Counter:
    """The reported lines of `engine`: how many, how many labelled (by any file), how many of those not hot."""
    labelled = [labels[(engine, site)] for site in found if (engine, site) in labels]
    return Counter({"lines": len(found), "labelled": len(labelled),
                    "labelled not hot": sum(label not in HOT_LABELS for label in labelled)})


def print_estimate(strata: Counter, fresh: Counter) -> None:
    """The not-hot share of every reported line: labelled lines at their labels, the others at the fresh rate."""
    lines, unlabelled = strata["lines"], strata["lines"] - strata["labelled"]
    if not lines or not fresh["findings"]:
        return
    rate = fresh["not hot"] / fresh["findings"]
    low, high = _wilson(fresh["not hot"], fresh["findings"])
    share = [(strata["labelled not hot"] + unlabelled * r) / lines for r in (rate, low, high)]
    print(f"  fresh samples: {fresh['findings']} findings, not hot {fresh['not hot']}; estimated not-hot share of "
          f"all {lines} reported lines ({strata['labelled']} labelled, {strata['labelled not hot']} of them not hot; "
          f"{unlabelled} at the fresh rate): {100 * share[0]:.0f}% [{100 * share[1]:.0f}-{100 * share[2]:.0f}%]")


def kept_on_purpose(engine: str, root: str, labels: Labels) -> Set[Tuple[str, str]]:
    """The labelled hot sites of `engine` inside a `with` block of the default `sync-allowed-contexts`
    (`with gpu_sync_allowed():`): syncs the engine keeps on purpose, which the rules leave quiet by design."""
    kept: Set[Tuple[str, str]] = set()
    for (name, site), label in labels.items():
        if name != engine or label not in HOT_LABELS:
            continue
        path, _, line = site.rpartition(":")
        try:
            with open(os.path.join(root, path), encoding="utf-8") as handle:
                module = ast.parse(handle.read())
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        row = int(line)
        blocks = (n for n in ast.walk(module) if isinstance(n, (ast.With, ast.AsyncWith)))
        if any(
            n.lineno <= row <= (n.end_lineno or n.lineno)
            and any(sync_allowed_region(item.context_expr, DEFAULT_SYNC_ALLOWED_CONTEXTS) for item in n.items)
            for n in blocks
        ):
            kept.add((name, site))
    return kept


def sampled_findings(engine: str, found: Dict[str, Set[str]], sampled: Labels) -> Counter:
    """Over the sampled findings of `engine` that are still reported: how many, how many not hot."""
    labels = [label for (name, site), label in sampled.items() if name == engine and site in found]
    return Counter({"findings": len(labels), "not hot": sum(label not in HOT_LABELS for label in labels)})


def print_sampled(c: Counter) -> None:
    print(f"  sampled findings (labelled blind among decoys): {c['findings']}, not hot {c['not hot']}, "
          f"not-hot share {_rate(c['not hot'], c['findings'])}")


def read_labels(path: str) -> Labels:
    labels: Labels = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("#") or not line.strip():
                continue
            engine, site, label, *_ = line.rstrip("\n").split("\t")
            labels[(engine, site)] = label
    return labels


def add_preset_option(parser: argparse.ArgumentParser) -> None:
    """`--preset NAME=PRESET` (repeatable); `dict(spec.partition("=")[::2] for spec in args.preset)` reads it."""
    parser.add_argument(
        "--preset", action="append", default=[], metavar="NAME=PRESET",
        help="check tree NAME with this preset (`torchtitan=training`), as its users would configure it",
    )


def tree_settings(root: str, preset: Optional[str], select: Tuple[str, ...]) -> Settings:
    """The settings `h2dlint check --select ... [--preset ...] ROOT` would use."""
    settings = settings_from(config_for_path(root), Overrides(preset=preset))
    return Settings(**{**_fields(settings), "select": select})


def findings(root: str, preset: Optional[str] = None) -> Dict[str, Set[str]]:
    """`path:line` -> the HTD2xx codes reported there (with `preset`, as `--preset` would check the tree)."""
    settings = tree_settings(root, preset, ("HTD2",))
    found: Dict[str, Set[str]] = defaultdict(set)
    for result in check_paths([root], settings, EXCLUDES, use_cache=False):
        for d in result.diagnostics:
            found[f"{os.path.relpath(result.path, root)}:{d.span.row}"].add(d.code)
    return found


def _fields(settings: Settings) -> dict:
    """The settings' constructor arguments (the derived fields are recomputed)."""
    from dataclasses import fields

    return {f.name: getattr(settings, f.name) for f in fields(settings) if f.init}


def judge(engine: str, found: Dict[str, Set[str]], labels: Labels) -> Dict[str, Counter]:
    """Per rule (and "all"): labelled, hot, hot reported, reported labelled, reported not hot."""
    counts: Dict[str, Counter] = defaultdict(Counter)
    for (name, site), label in labels.items():
        if name != engine:
            continue
        hot = label in HOT_LABELS
        codes = found.get(site, set())
        for rule in ("all", *sorted(codes)):
            if rule == "all":
                counts[rule]["labelled"] += 1
                counts[rule]["hot"] += hot
            if rule == "all" and not codes:
                continue
            counts[rule]["hot flagged"] += hot
            counts[rule]["flagged labelled"] += 1
            counts[rule]["flagged not hot"] += not hot
    return counts


def print_tree(engine: str, found: Dict[str, Set[str]], counts: Dict[str, Counter]) -> None:
    by_code = Counter(code for codes in found.values() for code in codes)
    print(f"## {engine}: findings {sum(by_code.values())} on {len(found)} lines: "
          + ", ".join(f"{c} {n}" for c, n in sorted(by_code.items())))
    print_rates("all rules", counts["all"])
    for rule in sorted(r for r in counts if r != "all"):
        c = counts[rule]
        print(f"  {rule}: flagged labelled {c['flagged labelled']}, hot {c['hot flagged']}, "
              f"not hot {c['flagged not hot']}")


def print_rates(title: str, c: Counter) -> None:
    print(f"  {title}: labelled {c['labelled']}, hot {c['hot']}, flagged hot {c['hot flagged']}, "
          f"recall {_rate(c['hot flagged'], c['hot'])}; flagged labelled {c['flagged labelled']}, "
          f"not hot {c['flagged not hot']}, not-hot share {_rate(c['flagged not hot'], c['flagged labelled'])}")


def _rate(part: int, whole: int) -> str:
    if whole == 0:
        return "n/a"
    low, high = _wilson(part, whole)
    return f"{100 * part / whole:.0f}% [{100 * low:.0f}-{100 * high:.0f}%]"


def _wilson(part: int, whole: int, z: float = 1.96) -> Tuple[float, float]:
    p = part / whole
    centre = (p + z * z / (2 * whole)) / (1 + z * z / whole)
    spread = z * math.sqrt(p * (1 - p) / whole + z * z / (4 * whole * whole)) / (1 + z * z / whole)
    return max(0.0, centre - spread), min(1.0, centre + spread)


if __name__ == "__main__":
    raise SystemExit(main())
