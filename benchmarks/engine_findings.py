"""Run h2dlint over real engine trees and produce the numbers and the sample for hand classification.

    python benchmarks/engine_findings.py sglang=/tmp/engines/sglang_x/sglang/srt vllm=/tmp/engines/vllm_x/vllm \
        --labels benchmarks/engine_labels.tsv --sample-out /tmp/engine_sample.md

For each tree it prints: the engine version (from `_version.py` or `version.py` above the tree), files, lines,
seconds, and findings per code. Independently of h2dlint it also lists every *H2D construct* in the tree with a loose,
name-based scan (no import resolution, no hotness): `tensor/as_tensor/asarray(..., device=<not cpu>)`,
`.to(<device>)` / `.cuda()` on a tensor just built by `tensor/as_tensor/asarray/from_numpy`,
`x.new_tensor(...)`, and `buf.copy_(...)` of such a tensor (whatever `buf`'s device, which the scan does
not know). Constructs on a line h2dlint reported are "flagged", the others "unflagged".

The measured scope is the engines' runtime code: vendored tests, benchmarks and examples (`--exclude`,
default `RUNTIME_SCOPE_EXCLUDES`) are left out, and how many files that leaves out is printed.

The sample is deterministic: within each engine and stratum (flagged / unflagged) sites are ordered by a hash
of `path:line`, so a site keeps its place when tuning moves others. `--sample-out` writes each sampled site
with its source for reading. `--labels` reads the hand classification (TSV: engine, path:line, label, note;
labels `per-step`, `per-request`, `one-time` (setup: runs, but once or rarely), `never-runs` (nothing in the
tree reaches it: dead code, a branch no caller takes), `not-h2d`) and prints precision and recall:

- one-time share = one-time labels / labelled findings (goal: at most 5%), then the never-runs share, and the
  share of findings that are not hot at all (one-time, never-runs and not-h2d together);
- recall = flagged hot / (flagged hot + unflagged hot), where each stratum's hot count is its labelled hot
  rate times its size (goal: at least 95%): exact when every site is labelled (a census), otherwise an
  estimate with a conservative 95% interval from each sampled rate's Wilson interval; and the same recall
  without the unflagged sites the issue's rule definitions leave out by design (`x.new_tensor()` on a
  receiver not known to be on an accelerator, constructors).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import math
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

from placement_scan import scan as placement_scan  # noqa: E402  (this folder is on sys.path as a script)

from h2dlint.project.config import Overrides, config_for_path, settings_from
from h2dlint.project.files import discover
from h2dlint.project.run import check_paths

BUILDERS = {"tensor", "as_tensor", "asarray"}
HOST_BUILDERS = BUILDERS | {"from_numpy"}
HOST_METHODS = {"long", "int", "float", "half", "bfloat16", "bool", "view", "reshape", "contiguous", "unsqueeze"}
HOT_LABELS = {"per-step", "per-request"}
# Not serving code: vendored test suites, benchmark and example scripts (.gitignore syntax).
RUNTIME_SCOPE_EXCLUDES = ("test_*.py", "*_test.py", "tests/", "test/", "benchmarks/", "examples/", "example.py")


@dataclass(frozen=True)
class Construct:
    path: str  # relative to the tree
    line: int
    kind: str
    function: str


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    args.exclude = RUNTIME_SCOPE_EXCLUDES if args.exclude is None else tuple(args.exclude)
    labels = _read_labels(args.labels) if args.labels else {}
    sample_lines: List[str] = []
    for spec in args.engines:
        name, _, root = spec.partition("=")
        report = _run_engine(name, root, args.exclude)
        _print_engine(report)
        sample = _sample(report, args.sample, args.unflagged_sample)
        sample_lines.extend(_describe_sample(report, sample, labels))
        if labels:
            _print_estimates(report, labels)
    if args.sample_out:
        with open(args.sample_out, "w", encoding="utf-8") as out:
            out.write("\n".join(sample_lines) + "\n")
        print(f"sample written to {args.sample_out}")
    return 0


@dataclass
class EngineReport:
    name: str
    root: str
    version: str
    files: int
    excluded_files: int
    lines: int
    seconds: float
    findings: Dict[Tuple[str, int], List[Tuple[str, str]]]  # (path, row) -> [(code, message)]
    constructs: List[Construct]
    errors: int


def _run_engine(name: str, root: str, exclude: Sequence[str]) -> EngineReport:
    candidates = [c.path for c in discover([root], exclude) if c.error is None]
    excluded = len(discover([root])) - len(candidates)
    findings: Dict[Tuple[str, int], List[Tuple[str, str]]] = {}
    lines = 0
    started = time.perf_counter()
    # As `h2dlint check ROOT` does: one project, hotness across its files, no cache.
    results = check_paths([root], settings_from(config_for_path(root), Overrides()), exclude, use_cache=False)
    seconds = time.perf_counter() - started
    errors = sum(result.error is not None for result in results)
    for result in results:
        for d in result.diagnostics:
            findings.setdefault((os.path.relpath(result.path, root), d.span.row), []).append((d.code, d.message))
    constructs: List[Construct] = []
    for path in candidates:
        with open(path, "rb") as handle:
            raw = handle.read()
        lines += raw.count(b"\n")
        relative = os.path.relpath(path, root)
        constructs.extend(_scan(raw, relative))
        # The constructs whose host source is built away from the copy (issue 14), listed as loosely.
        constructs.extend(Construct(c.path, c.line, c.kind, c.function) for c in placement_scan(raw, relative))
    return EngineReport(
        name, root, _version(root), len(candidates), excluded, lines, seconds, findings, constructs, errors
    )


def _print_engine(report: EngineReport) -> None:
    codes = Counter(code for found in report.findings.values() for code, _ in found)
    flagged = sum((c.path, c.line) in report.findings for c in report.constructs)
    print(f"## {report.name} {report.version} ({report.root})")
    print(f"files {report.files} (left out of scope: {report.excluded_files}), lines {report.lines}, "
          f"files that could not be checked {report.errors}, "
          f"h2dlint {report.seconds:.1f} s")
    print(f"findings {sum(codes.values())}: " + ", ".join(f"{c} {n}" for c, n in sorted(codes.items())))
    kinds = Counter(c.kind for c in report.constructs)
    print(f"H2D constructs (loose scan) {len(report.constructs)}: "
          + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
          + f"; on a reported line {flagged}, not {len(report.constructs) - flagged}")


def _sample(report: EngineReport, flagged_n: int, unflagged_n: int) -> List[Tuple[str, str, int]]:
    """(stratum, path, line) for the first sites of each stratum in hash order."""
    flagged = sorted(report.findings, key=_site_hash)
    unflagged = sorted(
        {(c.path, c.line) for c in report.constructs if (c.path, c.line) not in report.findings}, key=_site_hash
    )
    return [("flagged", *site) for site in flagged[:flagged_n]] + [
        ("unflagged", *site) for site in unflagged[:unflagged_n]
    ]


def _site_hash(site: Tuple[str, int]) -> str:
    return hashlib.sha1(f"{site[0]}:{site[1]}".encode()).hexdigest()


def _describe_sample(
    report: EngineReport, sample: List[Tuple[str, str, int]], labels: Dict[Tuple[str, str], Tuple[str, str]]
) -> Iterator[str]:
    functions = {(c.path, c.line): c.function for c in report.constructs}
    for stratum, path, line in sample:
        label, note = labels.get((report.name, f"{path}:{line}"), ("UNLABELLED", ""))
        yield f"### {report.name} {path}:{line} [{stratum}] label={label} {note}".rstrip()
        yield f"function: {functions.get((path, line), '?')}"
        for code, message in report.findings.get((path, line), []):
            yield f"{code}: {message}"
        yield "```python"
        yield from _context(os.path.join(report.root, path), line)
        yield "```"


def _context(path: str, line: int, before: int = 4, after: int = 2) -> List[str]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read().splitlines()
    return [f"{n + 1:5d}{'>' if n + 1 == line else ' '} {text[n]}" for n in
            range(max(0, line - 1 - before), min(len(text), line + after))]


def _print_estimates(report: EngineReport, labels: Dict[Tuple[str, str], Tuple[str, str]]) -> None:
    unflagged_sites = {(c.path, c.line) for c in report.constructs} - set(report.findings)
    strata = {"flagged": set(report.findings), "unflagged": unflagged_sites}
    counts = {}
    for stratum, sites in strata.items():
        found = _label_counts(report.name, sites, labels)
        counts[stratum] = (len(sites), sum(found[k] for k in HOT_LABELS), sum(found.values()))
        detail = ", ".join(f"{k} {n}" for k, n in sorted(found.items()))
        print(f"  {stratum}: {len(sites)} sites, {counts[stratum][2]} labelled ({detail})")
        if stratum == "flagged" and found:
            _print_precision(found)
    _print_recall("recall", counts["flagged"], counts["unflagged"])
    _print_kinds(report, labels)
    excluded = _by_design_exclusions(report, unflagged_sites)
    kept = unflagged_sites - excluded
    found = _label_counts(report.name, kept, labels)
    _print_recall(
        f"recall excluding the issue's by-design exclusions ({len(excluded)} unflagged sites: "
        "`new_tensor` on a receiver not known to be on an accelerator, constructors)",
        counts["flagged"],
        (len(kept), sum(found[k] for k in HOT_LABELS), sum(found.values())),
    )


def _print_kinds(report: EngineReport, labels: Dict[Tuple[str, str], Tuple[str, str]]) -> None:
    """Per construct shape (the loose scans' kind, with `copy:local:factory` counted as `copy:factory` ...):
    labelled hot sites, how many are flagged, and the one-time sites among the flagged."""
    shapes: Dict[str, Set[Tuple[str, int]]] = {}
    for c in report.constructs:
        shapes.setdefault(_shape(c.kind), set()).add((c.path, c.line))
    print("  per shape (hot sites flagged / hot sites; flagged one-time sites):")
    for shape, sites in sorted(shapes.items()):
        found = [labels[(report.name, f"{p}:{l}")][0] for p, l in sites if (report.name, f"{p}:{l}") in labels]
        flagged = [labels[(report.name, f"{p}:{l}")][0] for p, l in sites
                   if (report.name, f"{p}:{l}") in labels and (p, l) in report.findings]
        hot = sum(label in HOT_LABELS for label in found)
        hot_flagged = sum(label in HOT_LABELS for label in flagged)
        print(f"    {shape}: {hot_flagged}/{hot}; one-time {flagged.count('one-time')} of {len(flagged)} flagged")


def _shape(kind: str) -> str:
    """`copy:local:factory` -> `copy:factory`: where the host source comes from, not how it was reached."""
    parts = kind.split(":")
    return ":".join(part for part in parts if part != "local") if len(parts) > 1 else kind


def _print_precision(found: Counter) -> None:
    labelled = sum(found.values())
    not_hot = labelled - sum(found[k] for k in HOT_LABELS)
    print(f"  one-time share of findings: {found['one-time'] / labelled:.1%} (setup code); never-runs "
          f"{found['never-runs'] / labelled:.1%}; not hot at all (one-time, never-runs, not-h2d): "
          f"{not_hot / labelled:.1%}")


def _label_counts(engine: str, sites: Set[Tuple[str, int]], labels: Dict[Tuple[str, str], Tuple[str, str]]) -> Counter:
    return Counter(labels[(engine, f"{p}:{l}")][0] for p, l in sites if (engine, f"{p}:{l}") in labels)


def _by_design_exclusions(report: EngineReport, unflagged: Set[Tuple[str, int]]) -> Set[Tuple[str, int]]:
    """Unflagged sites that the issue's own rule definitions leave out: HTD105 reports `x.new_tensor()` only
    when `x` is known to be on an accelerator (an unflagged one is not), and constructors stay cold."""
    return {
        (c.path, c.line)
        for c in report.constructs
        if (c.path, c.line) in unflagged
        and (c.kind == "new_tensor" or c.function.rpartition(".")[2] in ("__init__", "__post_init__"))
    }


Stratum = Tuple[int, int, int]  # sites, labelled hot, labelled


def _print_recall(title: str, flagged: Stratum, unflagged: Stratum) -> None:
    """Recall = flagged hot / (flagged hot + unflagged hot), each stratum's hot count its labelled hot rate
    times its size. When every site of both strata is labelled (a census) the figure is exact. Otherwise the
    interval takes each rate's 95% Wilson interval (a fully labelled stratum has none) and combines the bounds
    that make recall smallest and largest, so it is conservative (wider than a joint 95% interval)."""
    if not flagged[2] or not unflagged[2]:
        return
    rate_f, rate_u = (hot / labelled for _, hot, labelled in (flagged, unflagged))
    (low_f, high_f), (low_u, high_u) = (_rate_interval(*stratum) for stratum in (flagged, unflagged))
    hot_f, hot_u = flagged[0] * rate_f, unflagged[0] * rate_u
    if not hot_f + hot_u:
        return
    recall = _recall(hot_f, hot_u)
    if all(labelled == size for size, _, labelled in (flagged, unflagged)):
        print(f"  {title}: {recall:.1%}, exact: every site labelled (hot sites: flagged {hot_f:.0f}, "
              f"missed {hot_u:.0f})")
        return
    low = _recall(flagged[0] * low_f, unflagged[0] * high_u)
    high = _recall(flagged[0] * high_f, unflagged[0] * low_u)
    print(f"  estimated {title}: {recall:.1%}, 95% Wilson interval {low:.1%} to {high:.1%} "
          f"(hot sites: flagged ~{hot_f:.0f}, missed ~{hot_u:.0f})")


def _rate_interval(size: int, hot: int, labelled: int) -> Tuple[float, float]:
    """The 95% interval of a stratum's hot rate: none when every site is labelled."""
    return (hot / labelled,) * 2 if labelled == size else _wilson(hot, labelled)


def _recall(flagged_hot: float, missed_hot: float) -> float:
    total = flagged_hot + missed_hot
    return flagged_hot / total if total else 1.0


def _wilson(successes: int, trials: int, z: float = 1.96) -> Tuple[float, float]:
    """The Wilson score interval of a proportion."""
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def _read_labels(path: str) -> Dict[Tuple[str, str], Tuple[str, str]]:
    labels = {}
    with open(path, encoding="utf-8") as handle:
        for row in handle:
            if row.strip() and not row.startswith("#"):
                engine, site, label, *note = row.rstrip("\n").split("\t")
                labels[(engine, site)] = (label, note[0] if note else "")
    return labels


def _version(root: str) -> str:
    folder = os.path.abspath(root)
    while folder != os.path.dirname(folder):
        for candidate in (os.path.join(folder, name) for name in ("_version.py", "version.py")):
            if os.path.isfile(candidate):
                with open(candidate, encoding="utf-8") as handle:
                    found = re.search(r"__version__\s*=\s*(?:version\s*=\s*)?['\"]([^'\"]+)", handle.read())
                if found:
                    return found.group(1)
        folder = os.path.dirname(folder)
    return "unknown"


def _scan(raw: bytes, path: str) -> List[Construct]:
    try:
        tree = ast.parse(raw)
    except (SyntaxError, ValueError, RecursionError):
        return []
    scanner = _Scanner(path)
    scanner.visit(tree)
    return scanner.found


class _Scanner(ast.NodeVisitor):
    """The loose, name-based scan for H2D constructs described in the module docstring."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.found: List[Construct] = []
        self._stack: List[str] = []
        self._host_names: List[Set[str]] = [set()]

    def _visit_scope(self, node: ast.AST, name: str) -> None:
        self._stack.append(name)
        self._host_names.append(_host_built_names(node))
        self.generic_visit(node)
        self._host_names.pop()
        self._stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._visit_scope(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._visit_scope(node, node.name)

    def visit_Call(self, node: ast.Call) -> None:
        kind = self._kind(node)
        if kind is not None:
            self.found.append(Construct(self.path, node.lineno, kind, ".".join(self._stack) or "<module>"))
        self.generic_visit(node)

    def _kind(self, node: ast.Call) -> Optional[str]:
        name = _callee_name(node)
        if name in BUILDERS and _accelerator_device(node):
            return f"{name}(device=)"
        if name == "new_tensor":
            return "new_tensor"
        if name == "copy_" and isinstance(node.func, ast.Attribute):
            source = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "src"), None)
            if source is not None and _is_host_built(source, self._host_names[-1]):
                return ".copy_() of a host-built tensor"
            return None
        if name in ("to", "cuda") and isinstance(node.func, ast.Attribute):
            if name == "to" and not _to_device(node):
                return None
            if _is_host_built(node.func.value, self._host_names[-1]):
                return f".{name}() on a host-built tensor"
        return None


def _callee_name(node: ast.Call) -> Optional[str]:
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return node.func.id if isinstance(node.func, ast.Name) else None


def _accelerator_device(node: ast.Call) -> bool:
    for keyword in node.keywords:
        if keyword.arg == "device":
            value = keyword.value
            if isinstance(value, ast.Constant) and (value.value is None or str(value.value).startswith("cpu")):
                return False
            return True
    return False


def _to_device(node: ast.Call) -> bool:
    if any(k.arg == "device" for k in node.keywords):
        return True
    if not node.args:
        return False
    text = ast.unparse(node.args[0])
    return "dtype" not in text and not re.fullmatch(r"torch\.(u?int\d*|float\d*|bfloat16|half|bool|long)", text)


def _is_host_built(expr: ast.expr, host_names: Set[str]) -> bool:
    while isinstance(expr, ast.Call) and _callee_name(expr) in HOST_METHODS and isinstance(expr.func, ast.Attribute):
        expr = expr.func.value
    if isinstance(expr, ast.Name):
        return expr.id in host_names
    return (
        isinstance(expr, ast.Call)
        and _callee_name(expr) in HOST_BUILDERS
        and not any(k.arg in ("device", "pin_memory") for k in expr.keywords)
    )


def _host_built_names(scope: ast.AST) -> Set[str]:
    """Names a function assigns from a host-built tensor (loosely: any such assignment in its body)."""
    names = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if _is_host_built(node.value, set()):
                names.add(node.targets[0].id)
    return names


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engines", nargs="+", metavar="NAME=PATH", help="an engine name and its source tree")
    parser.add_argument(
        "--exclude", action="append", default=None, metavar="PATTERN",
        help="a .gitignore-style pattern to leave out (default: vendored tests, benchmarks, examples)",
    )
    parser.add_argument("--labels", help="TSV of hand labels: engine, path:line, label, note")
    parser.add_argument("--sample", type=int, default=30, help="flagged sites to sample per engine")
    parser.add_argument("--unflagged-sample", type=int, default=15, help="unflagged sites to sample per engine")
    parser.add_argument("--sample-out", help="write the sample, with source context, to this file")
    return parser


if __name__ == "__main__":
    sys.exit(main())
