"""Run `h2dlint check --fix` over whole source trees, in scratch copies, and check that the fixes are safe.

    python benchmarks/fix_real_trees.py sglang=/tmp/recall_engines/sglang_x/sglang/srt \\
        vllm=/tmp/recall_engines/vllm_x/vllm [--scratch DIR] [--json PATH] [--jobs N]

Issue 7 asks that `--fix` over a whole real tree leaves every changed file compiling, that a second run changes
nothing, and that `git diff` touches only flagged expressions and imports. For each `NAME=PATH` this script:

1. copies the tree into a scratch folder (`--scratch DIR` keeps it as `DIR/NAME/<tree folder>` for inspection; by default a
   temporary folder, removed afterwards) and commits it to a fresh git repository there. Only the files h2dlint
   reads are copied (`*.py`, `.gitignore`, `pyproject.toml`): the others cannot change what it finds, and
   vllm's compiled kernels alone weigh 800 MB. The original tree is only read;
2. records every finding and the edits of its fix: `h2dlint check --output-format json --no-cache`, and checks
   that the copy gives as many findings as the original tree (the copy keeps the tree's folder name, since module
   names, and so the links between files, come from it);
3. runs `h2dlint check --fix --no-cache` (its time and peak RSS are reported) and checks:
   - every changed file (`git diff --name-only`) that compiled before still compiles (`compile(..., "exec")`);
     unchanged files are byte-identical, so they trivially still do. No file appears or disappears (a left
     temporary file would show in `git status`);
   - every `git diff -U0` hunk changes only text inside the recorded edits (see below);
4. commits the fixed tree and checks that a second run changes nothing: `--diff` prints nothing and a second
   `--fix` leaves `git status` clean;
5. counts crashes in all four runs: an exit code other than 0 or 1, or any stderr line other than the
   documented one-line file error (`PATH: error: REASON`, REASON not an `internal error`) and `--diff`'s
   closing `Would fix N findings.` line. The file errors themselves are counted and listed.

**Why the hunk check is exact.** A hunk's old lines are a range of the original text; the edits recorded in
step 2 (the callee replacement, the inserted `, device=...`, the removed `.to(...)` tail, the helper import)
that fall in that range cut it into kept pieces with gaps between them. The hunk passes only if its new lines
are those kept pieces, in order and unchanged, with anything in the gaps: a glob match in which the gaps are
the only wildcards. So no character outside a recorded edit may change, at whatever position git's line
alignment puts the hunk. A gap at an import insertion may hold only helper import lines that some recorded fix
adds. `--fix` runs up to ten passes per file, and a later pass sees shifted rows; but each later pass only
rewrites a site that was found in the original text (its recorded edits name the same characters there) or
re-inserts an import at the same anchor, so checking against the original text and the first run's edits is
sound. A later-pass change anywhere else (say, a finding that only appears after a first fix) is reported as
outside, not excused.

Prints one table row per tree (the numbers are also written by `--json PATH`) and the details of every
failure. Exits 1 if any check fails, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from h2dlint.facts.positions import line_starts
from h2dlint.facts.sources import SourceError, decode_source
from h2dlint.project.config import configs_remembered, excluded_by_config
from h2dlint.project.files import discover

UNSAFE = ("--unsafe-fixes",)  # every fix is checked for soundness, the unsafe ones too
COPIED_NAMES = (".gitignore", "pyproject.toml")
GIT_IDENTITY = ["-c", "user.name=h2dlint benchmark", "-c", "user.email=h2dlint@localhost", "-c", "commit.gpgsign=false"]
# The tree's own .gitattributes must not convert line endings, filter files or make them binary to `git diff`.
NEUTRAL_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding diff\n"
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
FILE_ERROR = re.compile(r"^(?P<path>.+): error: (?P<reason>.+)$")
WOULD_FIX = re.compile(r"^Would fix \d+ findings?\.$")
FIXED = re.compile(r"^Found \d+ findings? \((\d+) fixed, \d+ remaining\)\.$", re.MULTILINE)
FINDING_LINE = re.compile(r"^.+:\d+:\d+: HTD\d+ ", re.MULTILINE)

Region = Tuple[int, int]  # start and end offsets of a recorded edit in the original text (equal: an insertion)


@dataclass
class Run:
    """One h2dlint process."""

    options: List[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mib: float


@dataclass
class FileEdits:
    """What the first check recorded for one file: the regions its fixes edit, and the import lines they add."""

    regions: List[Region] = field(default_factory=list)
    imports: List[Region] = field(default_factory=list)  # insertions of an import line
    import_lines: Set[str] = field(default_factory=set)


@dataclass
class TreeReport:
    name: str
    source: str
    files: int = 0
    files_with_findings: int = 0
    findings: int = 0
    findings_in_original: int = 0  # the copy must find what a check of the original tree finds
    fixable: int = 0
    fixed: int = 0
    left: int = 0
    files_changed: int = 0
    not_compiling: List[str] = field(default_factory=list)
    changed_not_compiling_before: List[str] = field(default_factory=list)
    stray_files: List[str] = field(default_factory=list)
    second_run_changes: List[str] = field(default_factory=list)
    recorded_edits: int = 0
    hunks: int = 0
    lines_outside: int = 0
    outside_hunks: List[str] = field(default_factory=list)
    file_errors: List[str] = field(default_factory=list)
    crashes: List[str] = field(default_factory=list)
    fix_seconds: float = 0.0
    fix_peak_rss_mib: float = 0.0

    @property
    def failures(self) -> int:
        return (len(self.not_compiling) + len(self.stray_files) + len(self.second_run_changes)
                + self.lines_outside + len(self.crashes) + (self.findings != self.findings_in_original))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    trees = [_tree_argument(parser, spec) for spec in args.trees]
    if shutil.which("git") is None:
        parser.error("git is not installed")
    reports = []
    with tempfile.TemporaryDirectory(prefix="h2dlint-fix-trees-") as temporary:
        scratch = args.scratch or temporary
        for name, source in trees:
            # The copy keeps the tree's own folder name: module names, and so links between files, come from it.
            target = os.path.abspath(os.path.join(scratch, name, os.path.basename(os.path.normpath(source))))
            if os.path.lexists(target):
                parser.error(f"{target} exists; remove it or choose another --scratch")
            reports.append(fix_tree(name, source, target, args.jobs))
    print(render_table(reports))
    for report in reports:
        print(render_failures(report), end="")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump([{**asdict(r), "failures": r.failures} for r in reports], out, indent=2)
    return 1 if any(r.failures for r in reports) else 0


def fix_tree(name: str, source: str, tree: str, jobs: Optional[int]) -> TreeReport:
    report = TreeReport(name, os.path.abspath(source))
    copy_tree(source, tree)
    git_commit(tree, "original")
    with configs_remembered():  # the files `h2dlint check TREE` checks, as the command line finds them
        report.files = sum(c.error is None for c in discover([tree], (), excluded_by_config))
    check = run_h2dlint(tree, jobs, "--output-format", "json")
    findings = read_findings(check, report)
    original = run_h2dlint(os.path.abspath(source), jobs, "--output-format", "json")
    report.findings_in_original = len(json.loads(original.stdout)) if original.returncode in (0, 1) else -1
    edits = edits_by_file(findings, tree)  # offsets in the original text: read before the fix
    report.recorded_edits = sum(len(set(e.regions)) for e in edits.values())
    fix = run_h2dlint(tree, jobs, "--fix", *UNSAFE)
    report.fix_seconds, report.fix_peak_rss_mib = round(fix.seconds, 2), fix.peak_rss_mib
    report.fixed = sum(int(n) for n in FIXED.findall(fix.stdout))
    report.left = len(FINDING_LINE.findall(fix.stdout))
    check_changes(report, tree, edits)
    git_commit(tree, "fixed")
    diff, second_fix = run_h2dlint(tree, jobs, "--diff", *UNSAFE), run_h2dlint(tree, jobs, "--fix", *UNSAFE)
    report.second_run_changes = second_run_changes(tree, diff)
    report.file_errors = classify_stderr(fix)[0]
    report.crashes += [crash for run in (check, fix, diff, second_fix) for crash in classify_stderr(run)[1]]
    return report


def second_run_changes(tree: str, diff: Run) -> List[str]:
    """Files that `--diff` would change or the second `--fix` changed, after the first fix was committed."""
    changed = diffed_files(diff.stdout, tree) | {path for _, path in git_status(tree)}
    if diff.stdout.strip() and not changed:
        changed.add("(--diff printed a change)")
    return sorted(changed)


def copy_tree(source: str, target: str) -> None:
    source = os.path.realpath(source)
    if os.path.commonpath([source, os.path.realpath(target)]) == source:
        raise SystemExit(f"error: the scratch folder {target} is inside the tree {source}")

    def not_read_by_h2dlint(folder: str, names: List[str]) -> Set[str]:
        return {n for n in names if os.path.isfile(os.path.join(folder, n))
                and not n.endswith(".py") and n not in COPIED_NAMES}

    shutil.copytree(source, target, symlinks=True, ignore=not_read_by_h2dlint)
    for folder, dirs, files in os.walk(target):  # a fix writes through links: none may lead out of the copy
        for name in dirs + files:
            path = os.path.join(folder, name)
            if os.path.islink(path) and not os.path.realpath(path).startswith(os.path.realpath(target) + os.sep):
                raise SystemExit(f"error: {path} links outside the scratch copy; fixing it could change the original")


def git_commit(tree: str, message: str) -> None:
    if not os.path.isdir(os.path.join(tree, ".git")):
        git(tree, "init", "-q")
        with open(os.path.join(tree, ".git", "info", "attributes"), "w", encoding="utf-8") as out:
            out.write(NEUTRAL_ATTRIBUTES)
    git(tree, "add", "-A", "-f", ".")
    git(tree, *GIT_IDENTITY, "commit", "-q", "--no-verify", "--allow-empty", "-m", message)


def git(tree: str, *args: str) -> str:
    done = subprocess.run(["git", "-c", "core.quotepath=false", "-c", "core.autocrlf=false", *args], cwd=tree,
                          capture_output=True, check=True)
    return done.stdout.decode("utf-8", "surrogateescape")


def git_status(tree: str) -> List[Tuple[str, str]]:
    """(status, path) of every file that differs from the last commit, including new and ignored ones."""
    entries = git(tree, "status", "--porcelain", "-z", "--untracked-files=all", "--ignored").split("\0")
    return [(entry[:2], entry[3:]) for entry in entries if entry]


def run_h2dlint(tree: str, jobs: Optional[int], *options: str) -> Run:
    """`h2dlint check --no-cache TREE OPTIONS` in a fresh process, with its time and peak memory."""
    options = ("--no-cache", *options, *(["--jobs", str(jobs)] if jobs else []))
    args = [sys.executable, "-m", "h2dlint", "check", tree, *options]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(args, stdout=out, stderr=err, cwd=os.path.dirname(tree),
                                   env={**os.environ, "NO_COLOR": "1"})
        _, status, usage = os.wait4(process.pid, 0)  # wait4, not wait: it gives this child's own peak RSS
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    return Run(list(options), process.returncode, stdout, stderr, seconds, round(usage.ru_maxrss / 1024, 1))


def read_findings(run: Run, report: TreeReport) -> List[dict]:
    try:
        findings = json.loads(run.stdout)
    except ValueError:
        report.crashes.append(f"{' '.join(run.options)}: the output is not JSON")
        return []
    report.findings = len(findings)
    report.fixable = sum(f["fix"] is not None for f in findings)
    report.files_with_findings = len({f["filename"] for f in findings})
    return findings


def edits_by_file(findings: Sequence[dict], tree: str) -> Dict[str, FileEdits]:
    """The recorded fix edits of each file (keyed by its path relative to the tree), as offsets."""
    found: Dict[str, FileEdits] = {}
    starts: Dict[str, List[int]] = {}
    for finding in findings:
        if finding["fix"] is None:
            continue
        relative = os.path.relpath(finding["filename"], tree)
        if relative not in starts:
            starts[relative] = line_starts(read_text(os.path.join(tree, relative)))
        edits = found.setdefault(relative, FileEdits())
        for edit in finding["fix"]["edits"]:
            start, end = (_offset(starts[relative], edit[key]) for key in ("location", "end_location"))
            edits.regions.append((start, end))
            if start == end and _is_import(edit["content"]):
                edits.imports.append((start, end))
                edits.import_lines.add(edit["content"].strip())
    return found


def _offset(starts: Sequence[int], location: dict) -> int:
    return starts[location["row"] - 1] + location["column"] - 1


def _is_import(content: str) -> bool:
    return content.strip().startswith(("from ", "import ")) and "\n" not in content.strip()


def check_changes(report: TreeReport, tree: str, edits: Dict[str, FileEdits]) -> None:
    """Compile the changed files, look for stray files, and match every hunk against the recorded edits."""
    changed = [path for status, path in git_status(tree) if status == " M"]
    report.stray_files = [f"{status} {path}" for status, path in git_status(tree) if status != " M"]
    report.files_changed = len(changed)
    for path in changed:
        before = git_bytes(tree, path)
        with open(os.path.join(tree, path), "rb") as handle:
            after = handle.read()
        if compiles(before) is None:
            if compiles(after) is not None:
                report.not_compiling.append(f"{path}: {compiles(after)}")
        else:
            report.changed_not_compiling_before.append(path)
        for header, lines, inside in checked_hunks(before, after, edits.get(path, FileEdits()), path):
            report.hunks += 1
            if not inside:
                report.outside_hunks.append(header)
                report.lines_outside += lines


def git_bytes(tree: str, path: str) -> bytes:
    return subprocess.run(["git", "show", f"HEAD:{path}"], cwd=tree, capture_output=True, check=True).stdout


def compiles(raw: bytes) -> Optional[str]:
    """None if the source compiles, else why not."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(raw, "<file>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return f"{type(error).__name__}: {error}"
    return None


def checked_hunks(before: bytes, after: bytes, edits: FileEdits, path: str) -> Iterable[Tuple[str, int, bool]]:
    """Each hunk of the change: its header, its changed lines, and whether it stays within the recorded edits."""
    old, new = _decoded(before, path), _decoded(after, path)
    old_starts, new_starts = _git_line_starts(old), _git_line_starts(new)
    for header, old_row, old_count, new_row, new_count in _hunks(before, after, path):
        old_span = _line_range(old_starts, old_row, old_count, len(old))
        new_span = _line_range(new_starts, new_row, new_count, len(new))
        inside = hunk_within_edits(old, old_span, new[new_span[0] : new_span[1]], edits)
        yield f"{path}: {header}", old_count + new_count, inside


def hunk_within_edits(old: str, span: Region, new_text: str, edits: FileEdits) -> bool:
    """Whether `new_text` is the old text of `span` with only the recorded edits' regions replaced."""
    start, end = span
    inside = sorted((max(s, start), min(e, end)) for s, e in edits.regions
                    if (s < end and e > start) or (s == e and start <= s <= end))
    if not inside:
        return False
    kept, gaps, position = [], [], start
    for s, e in inside:
        if s > position or not gaps:  # else it touches or overlaps the gap before: one gap
            kept.append(old[position:max(s, position)])
            gaps.append([])
        gaps[-1].append((s, e))
        position = max(position, e)
    kept.append(old[position:end])
    filled = _glob_match(kept, new_text)
    return filled is not None and all(
        _only_imports(text, edits) for text, regions in zip(filled, gaps) if set(regions) <= set(edits.imports)
    )


def _glob_match(kept: Sequence[str], text: str) -> Optional[List[str]]:
    """The gap contents if `text` is kept[0] + gap + kept[1] + ... + kept[-1], else None (leftmost is enough)."""
    first, last = kept[0], kept[-1]
    if not text.startswith(first) or not text.endswith(last) or len(first) + len(last) > len(text):
        return None
    gaps, position, limit = [], len(first), len(text) - len(last)
    for piece in kept[1:-1]:
        found = text.find(piece, position, limit)
        if found < 0:
            return None
        gaps.append(text[position:found])
        position = found + len(piece)
    gaps.append(text[position:limit])
    return gaps


def _only_imports(text: str, edits: FileEdits) -> bool:
    return all(line.strip() in edits.import_lines for line in text.splitlines() if line.strip())


def _hunks(before: bytes, after: bytes, path: str) -> Iterable[Tuple[str, int, int, int, int]]:
    """`git diff -U0` of the two versions: (header, old row, old count, new row, new count) per hunk."""
    with tempfile.TemporaryDirectory() as folder:
        paths = [os.path.join(folder, name) for name in ("old", "new")]
        for target, data in zip(paths, (before, after)):
            with open(target, "wb") as out:
                out.write(data)
        diff = subprocess.run(["git", "diff", "--no-index", "--no-ext-diff", "--no-textconv", "--no-color",
                               "-U0", "--text", *paths], capture_output=True).stdout
    for line in diff.decode("utf-8", "surrogateescape").splitlines():
        found = HUNK.match(line)
        if found:
            old_row, old_count, new_row, new_count = found.groups()
            yield (found.group(0), int(old_row), 1 if old_count is None else int(old_count),
                   int(new_row), 1 if new_count is None else int(new_count))


def _decoded(raw: bytes, path: str) -> str:
    try:
        return decode_source(path, raw).text
    except SourceError:
        return raw.decode("latin-1")  # only offsets matter here, and h2dlint does not fix such a file


def read_text(path: str) -> str:
    with open(path, "rb") as handle:
        return _decoded(handle.read(), path)


def _git_line_starts(text: str) -> List[int]:
    """Where each of git's lines starts: git splits at "\\n" only."""
    return [0] + [m.end() for m in re.finditer("\n", text)]


def _line_range(starts: Sequence[int], row: int, count: int, length: int) -> Region:
    """Offsets of `count` lines from `row`; with count 0, the point after line `row` (git's convention)."""
    first = row - 1 if count else row
    begin = starts[first] if first < len(starts) else length
    stop = starts[first + count] if first + count < len(starts) else length
    return begin, stop


def diffed_files(diff: str, tree: str) -> Set[str]:
    return {os.path.relpath(line[len("+++ b/"):], tree) for line in diff.splitlines() if line.startswith("+++ b/")}


def classify_stderr(run: Run) -> Tuple[List[str], List[str]]:
    """The documented one-line file errors, and everything that counts as a crash."""
    errors, crashes = [], []
    if run.returncode not in (0, 1):
        crashes.append(f"{' '.join(run.options)}: exit code {run.returncode}")
    for line in run.stderr.splitlines():
        error = FILE_ERROR.match(line)
        if error and not error.group("reason").startswith("internal error") and "Traceback" not in line:
            errors.append(line)
        elif not WOULD_FIX.match(line):
            crashes.append(f"{' '.join(run.options)}: {line}")
    return errors, crashes


COLUMNS = (
    ("tree", lambda r: r.name), ("files", lambda r: r.files), ("files with findings", lambda r: r.files_with_findings),
    ("findings", lambda r: r.findings), ("in the original", lambda r: r.findings_in_original),
    ("fixable", lambda r: r.fixable), ("fixed", lambda r: r.fixed),
    ("left", lambda r: r.left), ("files changed", lambda r: r.files_changed),
    ("not compiling", lambda r: len(r.not_compiling)), ("stray files", lambda r: len(r.stray_files)),
    ("second-run changes", lambda r: len(r.second_run_changes)),
    ("diff lines outside fixes", lambda r: r.lines_outside), ("file errors", lambda r: len(r.file_errors)),
    ("crashes", lambda r: len(r.crashes)), ("--fix s", lambda r: f"{r.fix_seconds:.1f}"),
    ("--fix peak MiB", lambda r: f"{r.fix_peak_rss_mib:.0f}"),
)


def render_table(reports: Sequence[TreeReport]) -> str:
    lines = ["| " + " | ".join(name for name, _ in COLUMNS) + " |",
             "| --- |" + " ---: |" * (len(COLUMNS) - 1)]
    lines += ["| " + " | ".join(str(value(r)) for _, value in COLUMNS) + " |" for r in reports]
    return "\n".join(lines)


def render_failures(report: TreeReport) -> str:
    details = [
        ("not compiling after the fix", report.not_compiling),
        ("stray files (added, deleted or not tracked)", report.stray_files),
        ("changed by a second run", report.second_run_changes),
        ("hunks outside the recorded fix edits", report.outside_hunks),
        ("crashes", report.crashes),
        ("the copy's findings differ from the original tree's", [f"{report.findings} in the copy, "
                                                                 f"{report.findings_in_original} in the original"]
         if report.findings != report.findings_in_original else []),
        ("changed although they did not compile before (not a failure)", report.changed_not_compiling_before),
        ("file errors (documented one-line errors, not a failure)", report.file_errors),
    ]
    lines = [f"\n{report.name} ({report.source}): {report.failures} failures; {report.hunks} hunks in "
             f"{report.files_changed} changed files checked against {report.recorded_edits} recorded edits"]
    for title, items in details:
        if items:
            lines.append(f"  {title}: {len(items)}")
            lines += [f"    {item}" for item in items]
    return "\n".join(lines) + "\n"


def _tree_argument(parser: argparse.ArgumentParser, spec: str) -> Tuple[str, str]:
    name, _, path = spec.partition("=")
    if not name or not path or os.sep in name:
        parser.error(f"expected NAME=PATH, got {spec!r}")
    if not os.path.isdir(path):
        parser.error(f"{path}: not a folder")
    return name, path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", metavar="NAME=PATH", help="a name and a source tree to fix a copy of")
    parser.add_argument("--scratch", help="copy the trees into DIR/NAME and keep them (default: a temporary folder)")
    parser.add_argument("--json", help="also write the numbers to this file")
    parser.add_argument("--jobs", type=int, default=None, help="h2dlint --jobs (default: its own default)")
    return parser


if __name__ == "__main__":
    sys.exit(main())
