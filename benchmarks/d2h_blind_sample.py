"""A uniform sample of the HTD2xx findings, mixed 1:1 with unreported decoys, for labelling blind: the precision
of the device-to-host rules on findings the census sample (`d2h_labels.tsv`) does not reach.

    python benchmarks/d2h_blind_sample.py sglang=/tmp/engines/sglang_x/sglang/srt:20 vllm=...:12 ... \
        --labels benchmarks/d2h_labels.tsv --out /tmp/d2h_blind.md --key /tmp/d2h_blind_key.tsv

The census sample labels only a few of the lines the rules report, so its not-hot share rests on few findings.
This takes, per tree, the first N unlabelled findings in sha1 order of `path:line` (unrelated to the rules) and
as many unlabelled D2H constructs of `d2h_scan.FOCUS_KINDS` that the rules do not report (decoys, also in sha1
order), and writes them in one sha1 order, with context and no verdicts. `--key` (kept from the labeller) says
which lines are findings. Labels of findings go to `d2h_finding_labels.tsv`, apart from the census: they were
chosen because h2dlint reported them, so they measure the not-hot share of findings and never recall.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from d2h_findings import findings, read_labels  # noqa: E402
from d2h_scan import FOCUS_KINDS, context, has_kind, scan_tree  # noqa: E402


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", metavar="NAME=ROOT:N")
    parser.add_argument("--labels", required=True, help="the census labels, whose lines are left out")
    parser.add_argument("--out", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args(argv)
    labels = read_labels(args.labels)
    entries: List[Tuple[str, str, str, str, bool]] = []  # (hash, engine, root, path:line, is finding)
    for spec in args.trees:
        name, _, rest = spec.partition("=")
        root, _, count = rest.rpartition(":")
        reported = findings(root)
        fresh = _first(name, [s for s in reported if (name, s) not in labels], int(count))
        _, constructs = scan_tree(root)
        quiet = {f"{c.path}:{c.line}" for c in constructs if has_kind([c], FOCUS_KINDS)}
        decoys = _first(name, [s for s in quiet if s not in reported and (name, s) not in labels], len(fresh))
        entries += [(_hash(name, s, "order"), name, root, s, True) for s in fresh]
        entries += [(_hash(name, s, "order"), name, root, s, False) for s in decoys]
        print(f"{name}: {len(reported)} finding lines, {len(fresh)} sampled, {len(decoys)} decoys")
    entries.sort()
    cache: Dict[str, List[str]] = {}
    with open(args.out, "w", encoding="utf-8") as out, open(args.key, "w", encoding="utf-8") as key:
        for _, name, root, site, finding in entries:
            path, _, line = site.rpartition(":")
            lines = context(root, path, int(line), cache, before=6, after=2)
            out.write(f"### {name} {site}\n```python\n" + "\n".join(lines) + "\n```\n")
            key.write(f"{name}\t{site}\t{'finding' if finding else 'decoy'}\n")
    return 0


def _first(name: str, sites: List[str], count: int) -> List[str]:
    return sorted(sites, key=lambda s: _hash(name, s))[:count]


def _hash(name: str, site: str, purpose: str = "") -> str:
    """The sha1 order of a site; the sample is written in another order than it is chosen in (`purpose`):
    decoys are the lowest hashes of many constructs, so in the choosing order they would all come first."""
    return hashlib.sha1(f"{purpose}{name} {site}".encode()).hexdigest()


if __name__ == "__main__":
    sys.exit(main())
