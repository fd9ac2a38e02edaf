"""Shared test helpers. The test layout:

- `tests/test_rule_examples.py`: every rule's own examples (`VALID`/`INVALID`, with the marked line and the
  fixed source), its documentation examples, and its documentation's sections and references.
- `tests/test_rule_docs.py`: `h2dlint/rules/README.md` and README's rule table are what the registry generates; the
  `url` of JSON and SARIF output points at a rule's page.
- `tests/test_checker_fixtures.py`: fixture pairs `fixtures/checker/NAME.py` → `NAME.expected`
  (`row:col CODE message`). After an intended change, regenerate with
  `H2DLINT_UPDATE_FIXTURES=1 pytest tests/test_checker_fixtures.py` and review the diff.
- `tests/test_cli.py`: paths, selection, rule docs, exit codes.
- `tests/test_bad_input.py`: every kind of bad input through the CLI (in every output format), flake8 and the
  pre-commit hook's command; a 50,000-line file; deep nesting.
- `tests/test_interrupted_fix.py`: `--fix` runs killed among their writes leave each file old or new.
- `tests/test_fix_real_trees.py`: `benchmarks/fix_real_trees.py` on the bundled fixtures, and its hunk check.
- `tests/test_config.py`: `[tool.h2dlint]` discovery, every key, flag precedence, bad configuration.
- `tests/test_noqa.py`: which lines a `# noqa` covers, `--add-noqa`, `--statistics`.
- `tests/test_capture.py`: HTD106 and the other rules agree on captured sites, in findings and `explain`.
- `tests/test_output_formats.py`: every output format, fixes in json and SARIF, exit codes in every format, and
  validation against the official SARIF 2.1.0 schema (below).
- `tests/test_terminal.py`: progress and colour on a pseudo-terminal, silence off one and with `--quiet`.
- `tests/test_flake8_plugin.py`: runs `flake8 --select HTD` and compares it with `h2dlint check --output-format
  json` on the reference and on every fixture; `--select`, `--extend-ignore`, `noqa`, stdin, `HTD001`.
- `tests/test_pre_commit_hooks.py` (marked `network`): `pre-commit try-repo` of this checkout in a temporary
  git repository, with its own `PRE_COMMIT_HOME`. It installs the hook environment from the package registry
  and skips only when pre-commit is missing or the registry is unreachable. try-repo uses the checkout's git
  `HEAD` plus uncommitted changes to tracked files: `git add` a new file before running it.
  Deselect these with `pytest -m "not network"`.
- `tests/test_reference.py`: the bundled reference gives exactly its two seed findings and a stable digest;
  `--fix` on a copy removes both, keeps the digest, and a second `--fix` changes nothing.
- `tests/test_project.py`: hotness across files and classes, cold code that stays cold, `explain`, and the
  cached index for one-file faces.
- `tests/test_cache.py`: the cache is invalidated by content, configuration, another file's change and
  version; results are identical with and without it and with one or many workers; an edit that leaves the
  propagation's input as it was keeps the last run's heat (moved loops renamed in other files' messages),
  and added calls, calls taken out of loops, new and deleted files recompute it.
- `tests/test_positions.py`: character columns on non-ASCII lines, rows as Python counts them.
- `tests/test_fix_fixtures.py`: fix pairs `fixtures/fix/NAME.in.py` → `NAME.out.py`, plus `NAME.remaining` (the
  findings left, each saying why). Regenerate like the checker fixtures, and review: each `.out.py` is a claim.
- `tests/test_autofix.py`: writing files (encodings, BOM, CRLF, mode, symlinks, changed-on-disk), `--fix`,
  `--diff`, `vendor-helper`, the codemod.
- `tests/test_fuzz.py`: a short fuzzing run (hypothesis, hypothesmith). Generated programs (hypothesmith's, and
  per-step code with H2D constructs spliced into hot loops in every layout: comments and breaks inside calls,
  continuations, wrapping parentheses, aliases, CR/CRLF/mixed line breaks, BOM, tabs, non-ASCII), and damaged
  copies that do not parse, never crash the checker, the fixer, `--add-noqa`, the flake8 plugin or the CLI; a
  program that does not parse fails with one line; fixed code compiles, a second fix changes nothing, nothing
  fixable is left, other lines are kept, the helper's name is not shadowed and its added import runs first
  (`tests/robustness.py`, `tests/fix_invariants.py`). Programs that fuzzing found failing are pinned there as examples.
- `tests/test_runtime.py`: hypothesis properties that the helpers equal `torch.tensor` / `torch.as_tensor`;
  CUDA tests (marked `cuda`) for the pinned path.
- `tests/test_reference_cuda.py` (CUDA only): on the `--fix`ed reference, `prepare_for_decode` makes no sync and
  copies from pinned memory, where the original syncs (HTD101) and copies from pageable memory (HTD104); the
  digests on `cuda` are unchanged.

The SARIF schema test validates against `fixtures/sarif/sarif-2.1.0-rtm.5.json`, the SARIF 2.1.0 RTM 5 schema
from Microsoft's SARIF SDK (MIT; see `fixtures/sarif/NOTICE`). The OASIS-published file could not be downloaded
on the project's machines; set `H2DLINT_SARIF_SCHEMA=/path/to/sarif-schema-2.1.0.json` to validate against it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
REFERENCE = FIXTURES / "reference"

# Small modules with one finding each: HTD101 and HTD104 in a per-step function.
HOT = "import torch\n\ndef forward(ids, dev):\n    return torch.tensor(ids, device=dev)\n"
HOT_104 = "import torch\n\ndef step(ids, dev):\n    return torch.tensor(ids).to(dev, non_blocking=True)\n"


def write(folder: Path, name: str, text: str) -> Path:
    """Write `text` (dedented) to `folder/name`, creating folders as needed."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run_benchmark(script: Path, *args: str) -> str:
    """What the benchmark script `script` prints, run with `args` in a fresh interpreter; it must succeed."""
    done = subprocess.run([PYTHON, str(script), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def demo_package(tmp_path: Path, modules: Dict[str, str], tool: str = "") -> Path:
    """A project `demo` (its pyproject.toml with `tool` as the `[tool.h2dlint]` table, if any) whose package
    `pkg` holds `modules` (module name -> source); returns the project's root."""
    root = tmp_path / "demo"
    write(root, "pyproject.toml", "[project]\nname = 'demo'\n" + (f"\n[tool.h2dlint]\n{tool}" if tool else ""))
    write(root, "pkg/__init__.py", "")
    for name, source in modules.items():
        write(root, f"pkg/{name}.py", source)
    return root


def codes_by_row(run_cli, folder: Path, source: str) -> Dict[int, str]:
    """The code reported at each row of `source`, written to `folder/one.py` and checked alone with the HTD1 and
    HTD2 families (no cache)."""
    write(folder, "one.py", source)
    code, out, err = run_cli("check", "--select", "HTD1,HTD2", "--output-format", "json", "--no-cache", "one.py",
                             cwd=folder)
    assert code in (0, 1), err
    return {d["location"]["row"]: d["code"] for d in json.loads(out)}


def messages_by_site(run_cli, project: Path, *args: str) -> Dict[Tuple[str, int], str]:
    """(file name, row) -> message of each finding of `h2dlint check` run on the whole of `project`, uncached."""
    code, out, err = run_cli("check", "--output-format", "json", "--no-cache", *args, ".", cwd=project)
    assert code in (0, 1), err
    return {(d["filename"].rsplit("/", 1)[-1], d["location"]["row"]): d["message"] for d in json.loads(out)}


def row_of(source: str, needle: str, nth: int = 0) -> int:
    """The row of the `nth` line of `source` (dedented, as `write` writes it) that holds `needle`."""
    return [n for n, line in enumerate(textwrap.dedent(source).splitlines(), 1) if needle in line][nth]


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Each test gets its own h2dlint cache, so no test sees another's (or writes into the checkout)."""
    folder = tmp_path / "h2dlint-cache"
    monkeypatch.setenv("H2DLINT_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def _no_colour_settings(monkeypatch):
    """Output does not depend on whether the person running the tests asked for colour."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


@pytest.fixture
def run_cli(capsys):
    """Run `h2dlint ARGS...` in-process; returns (exit code, stdout, stderr)."""
    from h2dlint.faces.cli import main

    def run(*args: str, cwd: "os.PathLike[str] | None" = None):
        old = os.getcwd()
        if cwd is not None:
            os.chdir(cwd)
        try:
            code = main(list(args))
        finally:
            os.chdir(old)
        out, err = capsys.readouterr()
        return code, out, err

    return run


PYTHON = sys.executable
