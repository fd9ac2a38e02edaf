"""How h2dlint does on trees it was never tuned on: the blind labels of a uniform sample of its findings there.

    pip download --no-deps trl==1.16.0 diffusers==0.42.1 -d /tmp/engines/extra   # then unzip each wheel
    python benchmarks/fresh_trees.py trl=/tmp/engines/extra/x/trl:training \
        diffusers=/tmp/engines/extra/x/diffusers:diffusion --labels benchmarks/fresh_tree_labels.tsv

Each tree is checked as its users would configure it (`NAME=ROOT:PRESET`), with both rule families, as
`level_claims.py` does. `fresh_tree_labels.tsv` labels the first findings in sha1 order of `path:line`, drawn
once and mixed with unreported constructs of the loose scans (decoys), by a reader who saw neither h2dlint's
verdicts nor which line was which. For the sampled findings that are still reported it prints:
- the hot share: labelled `per-step` or `per-request` (a real transfer in code that runs that often);
- how many of those claim the frequency they have (a false claim is a false positive);
- the rest, line by line.
Decoys are not kept in the file; its comments say what they were labelled.
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Dict, Optional, Sequence, Tuple

from d2h_findings import _wilson as wilson, read_labels
from level_claims import LEVELS, findings


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", help="NAME=ROOT or NAME=ROOT:PRESET for each tree")
    parser.add_argument("--labels", required=True, help="the blind labels of sampled findings")
    args = parser.parse_args(argv)
    labels = read_labels(args.labels)
    for spec in args.trees:
        name, _, rest = spec.partition("=")
        root, _, preset = rest.partition(":")
        report(name, findings(root, preset or None), labels)
    return 0


def report(name: str, found: Dict[str, Dict[str, str]], labels: Dict[Tuple[str, str], str]) -> None:
    sampled = {site: label for (tree, site), label in labels.items() if tree == name}
    reported = {site: label for site, label in sampled.items() if site in found}
    hot = {site: label for site, label in reported.items() if label in LEVELS}
    truthful = sum(label in found[site].values() for site, label in hot.items())
    print(f"## {name}: {len(found)} finding lines; {len(reported)} of {len(sampled)} sampled still reported")
    print(f"  hot: {_share(len(hot), len(reported))}; claiming their frequency: {truthful} of {len(hot)}")
    for label, count in sorted(Counter(reported.values()).items()):
        print(f"  {label}: {count}")
    for site, label in sorted(reported.items()):
        if label not in LEVELS:
            print(f"  not hot: {site} ({label})")


def _share(part: int, whole: int) -> str:
    if not whole:
        return "n/a"
    low, high = wilson(part, whole)
    return f"{part / whole:.0%} ({part} of {whole}) [{low:.0%}-{high:.0%}]"


if __name__ == "__main__":
    raise SystemExit(main())
