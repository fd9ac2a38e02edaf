"""A loose, name-based census of device-to-host (D2H) sync constructs, independent of h2dlint.

    python benchmarks/d2h_scan.py sglang=/tmp/engines/sglang_x/sglang/srt vllm=/tmp/engines/vllm_x/vllm \
        --sample 120 --sample-out /tmp/d2h_sample.md [--constructs-out /tmp/d2h_all.tsv]

It lists every construct that can read a device tensor back to the host (issue 18), by name only: no import
resolution, no placement, no hotness. It is deliberately broad, so that what it lists bounds recall of a rule
family from above; whether each site really syncs, and how often it runs, is for a reader to decide
(`benchmarks/d2h_labels.tsv`). It never imports h2dlint, so the census it feeds stays blind to the rules.

Per tree it prints the files scanned and the count per kind. `--sample N` writes, per tree, the first N
distinct `path:line` sites in the order of sha1 of `path:line` (deterministic, and unrelated to the code), each
with its kinds, enclosing function and a few lines of context, and no verdict (`NAME=ROOT:N` sets N per tree).
`--kinds focus` (or a list of kinds) samples only sites with one of those kinds, in the same order, so a focused
sample begins with the focused sites of the plain one. `--labels FILE` prints, per tree, the labels over the
labelled prefix of each stratum (all sites, the focus kinds, the rest) and per kind.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import sys
from collections import Counter
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from d2h_constructs import Construct, scan_source  # noqa: E402

# Vendored tests, benchmarks and examples are not the engine's runtime code.
EXCLUDED_DIRS = frozenset({"tests", "test", "benchmarks", "examples"})
CONTEXT_BEFORE, CONTEXT_AFTER = 4, 4
# `--kinds focus`: the kinds whose sites are often device reads. Left out: int()/float()/bool(), range() ends,
# Python reductions and `.numpy()`, which a random sample shows to be host values (config, shapes, lists) in
# nearly every site; a focused sample gives the rarer real syncs enough sites to estimate recall from.
FOCUS_KINDS = frozenset(
    {
        *("tolist", "item", "cpu", "to-cpu", "mask-index", "nonzero", "condition", "bincount", "unique"),
        *("tensor-of-elements", "repeat_interleave:repeats=name", "repeat_interleave:repeats=expr"),
        *("py-number:slice-bound", "py-number:arange-end", "py-number:fill_value"),
    }
)


def _excluded(relative: str) -> bool:
    parts = relative.split(os.sep)
    name = parts[-1]
    if name.startswith("test_") or name.endswith("_test.py") or name == "example.py":
        return True
    return any(p in EXCLUDED_DIRS for p in parts[:-1])


def python_files(root: str) -> Iterator[str]:
    """Paths relative to root, sorted, without vendored tests, benchmarks and examples."""
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                relative = os.path.relpath(os.path.join(directory, name), root)
                if not _excluded(relative):
                    yield relative




def scan_tree(root: str) -> Tuple[int, List[Construct]]:
    files, found = 0, []
    for relative in python_files(root):
        with open(os.path.join(root, relative), "rb") as handle:
            source = handle.read()
        try:
            found.extend(scan_source(source.decode("utf-8", "replace"), relative))
        except (SyntaxError, ValueError) as error:
            print(f"{os.path.join(root, relative)}: not parsed ({error.__class__.__name__}), skipped", file=sys.stderr)
            continue
        files += 1
    return files, found


def _site_hash(site: str) -> str:
    return hashlib.sha1(site.encode("utf-8")).hexdigest()


def sites_in_hash_order(found: Sequence[Construct]) -> List[Tuple[str, List[Construct]]]:
    """Every distinct `path:line` site with all its constructs, in sha1 order of `path:line`."""
    by_site: Dict[str, List[Construct]] = {}
    for construct in found:
        by_site.setdefault(f"{construct.path}:{construct.line}", []).append(construct)
    return [(site, by_site[site]) for site in sorted(by_site, key=_site_hash)]


def has_kind(constructs: Sequence[Construct], kinds: Optional[frozenset]) -> bool:
    """Whether one of the constructs is of a kind in `kinds` (`kind` or `kind:detail`); None admits all."""
    return kinds is None or any(c.kind in kinds or f"{c.kind}:{c.detail}" in kinds for c in constructs)


def sample_sites(found: Sequence[Construct], count: int, kinds: Optional[frozenset] = None) -> List[Tuple[str, list]]:
    """The first `count` sites in sha1 order (of those with a construct of `kinds`, when given)."""
    return [entry for entry in sites_in_hash_order(found) if has_kind(entry[1], kinds)][:count]


def context(
    root: str, path: str, line: int, cache: Dict[str, List[str]], before: int = CONTEXT_BEFORE,
    after: int = CONTEXT_AFTER,
) -> List[str]:
    """The lines around `line` of `path` (under `root`), the line itself marked `>`; files read once (`cache`,
    by full path: two trees hold files of the same relative path, aphrodite being a fork of vllm)."""
    full = os.path.join(root, path)
    if full not in cache:
        with open(full, encoding="utf-8", errors="replace") as handle:
            cache[full] = handle.read().splitlines()
    lines = cache[full]
    first, last = max(1, line - before), min(len(lines), line + after)
    return [f"{'>' if n == line else ' '}{n:6d} {lines[n - 1]}" for n in range(first, last + 1)]


def write_sample(handle, name: str, root: str, sites: Sequence[Tuple[str, List[Construct]]]) -> None:
    cache: Dict[str, List[str]] = {}
    handle.write(f"# {name}: {root} ({len(sites)} sites, sha1 order of path:line)\n\n")
    for number, (site, constructs) in enumerate(sites, 1):
        kinds = ", ".join(sorted({f"{c.kind}{' ' + c.detail if c.detail else ''}" for c in constructs}))
        first = constructs[0]
        handle.write(f"## {name} {number} {site}  [{kinds}]  in {first.function}\n```\n")
        handle.write("\n".join(context(root, first.path, first.line, cache)) + "\n```\n\n")


def read_labels(path: str) -> Dict[Tuple[str, str], str]:
    """`(engine, path:line) -> label` from a labels TSV (engine, path:line, label, note; `#` lines are comments)."""
    labels: Dict[Tuple[str, str], str] = {}
    with open(path, encoding="utf-8") as handle:
        for row in handle:
            fields = row.rstrip("\n").split("\t")
            if not row.startswith("#") and len(fields) >= 3:
                labels[(fields[0], fields[1])] = fields[2]
    return labels


def print_tally(name: str, found: Sequence[Construct], labels: Dict[Tuple[str, str], str]) -> None:
    """Labels per stratum (all sites, focus kinds, the rest) over its labelled prefix in sha1 order, and per kind."""
    ordered = sites_in_hash_order(found)
    strata = {"all": ordered, "focus": [e for e in ordered if has_kind(e[1], FOCUS_KINDS)]}
    strata["rest"] = [e for e in ordered if not has_kind(e[1], FOCUS_KINDS)]
    for stratum, entries in strata.items():
        prefix = next((i for i, (site, _) in enumerate(entries) if (name, site) not in labels), len(entries))
        counts = Counter(labels[(name, site)] for site, _ in entries[:prefix])
        print(f"  {stratum:6s} first {prefix} of {len(entries)} sites labelled: {_joined(counts)}")
    per_kind: Dict[str, Counter] = {}
    for site, constructs in ordered:
        for kind in sorted({c.kind for c in constructs}) if (name, site) in labels else ():
            per_kind.setdefault(kind, Counter())[labels[(name, site)]] += 1
    for kind, counts in sorted(per_kind.items()):
        print(f"    {kind:20s} {_joined(counts)}")
    known = {site for site, _ in ordered}
    for engine, site in sorted(labels):
        if engine == name and site not in known:
            print(f"  labelled but no longer listed: {site}", file=sys.stderr)


def _joined(counts: Counter) -> str:
    return ", ".join(f"{label} {n}" for label, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _parse_tree(spec: str, default_count: int) -> Tuple[str, str, int]:
    name, _, rest = spec.partition("=")
    root, _, count = rest.rpartition(":") if rest.rsplit(":", 1)[-1].isdigit() else (rest, "", "")
    return name, root, int(count) if count else default_count


def _kinds(text: str) -> frozenset:
    return FOCUS_KINDS if text == "focus" else frozenset(part.strip() for part in text.split(",") if part.strip())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", metavar="NAME=ROOT[:N]", help="a tree to scan, with its sample size")
    parser.add_argument("--sample", type=int, default=0, help="sites to sample per tree (sha1 order)")
    parser.add_argument("--sample-out", help="where to write the sample (markdown)")
    parser.add_argument("--kinds", type=_kinds, help="sample only sites of these kinds: KIND[:DETAIL],... or focus")
    parser.add_argument("--labels", help="a labels TSV: print the labels per stratum and per kind for each tree")
    parser.add_argument("--constructs-out", help="every construct as TSV: engine, path:line, kind, detail, function")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    labels = read_labels(args.labels) if args.labels else None
    with contextlib.ExitStack() as stack:
        sample = stack.enter_context(open(args.sample_out, "w", encoding="utf-8")) if args.sample_out else None
        every = stack.enter_context(open(args.constructs_out, "w", encoding="utf-8")) if args.constructs_out else None
        for spec in args.trees:
            name, root, count = _parse_tree(spec, args.sample)
            files, found = scan_tree(root)
            _print_counts(name, files, found)
            if labels is not None:
                print_tally(name, found, labels)
            if sample and count:
                write_sample(sample, name, root, sample_sites(found, count, args.kinds))
            for c in found if every else ():
                every.write(f"{name}\t{c.path}:{c.line}\t{c.kind}\t{c.detail}\t{c.function}\n")
    return 0


def _print_counts(name: str, files: int, found: Sequence[Construct]) -> None:
    sites = len({(c.path, c.line) for c in found})
    print(f"{name}: {files} files, {len(found)} constructs at {sites} sites")
    kinds = Counter(c.kind for c in found)
    for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])):
        details = Counter(c.detail for c in found if c.kind == kind and c.detail)
        split = ", ".join(f"{d} {k}" for d, k in sorted(details.items(), key=lambda kv: (-kv[1], kv[0])))
        print(f"  {kind:20s} {n:6d}" + (f"  ({split})" if split else ""))


if __name__ == "__main__":
    sys.exit(main())
