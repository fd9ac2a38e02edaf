"""`h2dlint trace [-o FILE] -- COMMAND ARGS...`: run a program and record how often each project function ran;
`h2dlint trace --import prof.pstats`: the same records from a cProfile file.

The records (`h2dlint.facts.observations`) feed `check --profile FILE` (config `profile`). The counting itself
happens in the traced processes (`h2dlint/tracer.py`, which stands alone): this face only prepares the
folder that loads it, runs the command, and merges what each process wrote.
"""

from __future__ import annotations

import argparse
import json
import marshal
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from h2dlint.facts.observations import FunctionCount, Observations, SyncRecord, digest, render
from h2dlint.facts.settings import UsageError

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACER_SOURCE = os.path.join(_PACKAGE, "tracer.py")  # copied beside the hook, never imported here
SYNCS_SOURCE = os.path.join(_PACKAGE, "trace_syncs.py")
DEFAULT_OUTPUT = "h2dlint-trace.json"

# Loaded by every Python process started with the folder on PYTHONPATH; then it hands over to the
# `sitecustomize` that would have loaded without it, if there is one.
_HOOK = '''\
import os, sys
_here = os.path.dirname(os.path.abspath(__file__))
import _h2dlint_tracer
_h2dlint_tracer.start_from_environment()
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
_self = sys.modules.pop("sitecustomize", None)
try:
    import sitecustomize
except ImportError:
    sys.modules["sitecustomize"] = _self  # the import machinery reads it back when this file is done
sys.path.append(_here)
'''

_Key = Tuple[str, Optional[str], int, str]  # path, qualname, first line, name


def add_trace_command(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    trace = commands.add_parser(
        "trace", help="run a Python program and record how often each project function runs (for --profile)"
    )
    trace.add_argument("-o", "--output", default=DEFAULT_OUTPUT, metavar="FILE", help=f"default: {DEFAULT_OUTPUT}")
    trace.add_argument(
        "--root", default=None, metavar="DIR",
        help="the project whose functions are counted (default: the nearest folder above with pyproject.toml "
        "or .git)",
    )
    trace.add_argument("--import", dest="import_file", default=None, metavar="PSTATS", help="convert a cProfile file")
    trace.add_argument(
        "--no-syncs", action="store_true", help="do not record CUDA synchronisations (recorded when CUDA is there)"
    )
    trace.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS...")
    trace.set_defaults(run=run_trace)


def run_trace(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    root = os.path.abspath(args.root) if args.root else project_root(os.getcwd())
    if args.import_file is not None:
        if command:
            raise UsageError("give either --import PSTATS or a command to run, not both")
        observations, status = from_pstats(args.import_file, root), 0
    elif not command:
        raise UsageError("nothing to trace: give a command after `--`, e.g. `h2dlint trace -- python run.py`")
    else:
        observations, status = traced_run(command, root, syncs=not args.no_syncs)
    _write_whole(args.output, render(observations))
    calls = sum(f.calls for f in observations.functions)
    print(
        f"h2dlint: traced {len(observations.functions)} functions of {len(observations.files)} files under "
        f"{root} ({calls} calls, {len(observations.syncs)} sync sites) -> {args.output}",
        file=sys.stderr,
    )
    return status


def _write_whole(path: str, text: str) -> None:
    """Write `path` whole or not at all: a temporary file beside it, then a rename."""
    import tempfile  # this module's imports of the standard library wait for `trace`: `check` has no use for them

    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".h2dlint-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def project_root(folder: str) -> str:
    """The nearest folder at or above `folder` holding pyproject.toml or .git; `folder` itself if none."""
    current = folder
    while True:
        if any(os.path.exists(os.path.join(current, marker)) for marker in ("pyproject.toml", ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return folder
        current = parent


def traced_run(command: Sequence[str], root: str, syncs: bool = True) -> Tuple[Observations, int]:
    """Run `command` with every Python process it starts counting calls; the merged records and its status."""
    import shutil
    import subprocess
    import tempfile

    folder = tempfile.mkdtemp(prefix="h2dlint-trace-")
    try:
        out = os.path.join(folder, "out")
        os.mkdir(out)
        _write_hook(folder)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (folder, env.get("PYTHONPATH")) if p)
        env.update(H2DLINT_TRACE_OUT=out, H2DLINT_TRACE_ROOT=root, H2DLINT_TRACE_SYNCS="1" if syncs else "0")
        try:
            status = subprocess.call(list(command), env=env)
        except OSError as error:
            raise UsageError(f"cannot run {command[0]!r}: {error.strerror or error}") from None
        return merged(_process_records(out), root), status
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _write_hook(folder: str) -> None:
    import shutil

    shutil.copyfile(TRACER_SOURCE, os.path.join(folder, "_h2dlint_tracer.py"))
    shutil.copyfile(SYNCS_SOURCE, os.path.join(folder, "_h2dlint_syncs.py"))
    with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as handle:
        handle.write(_HOOK)


def _process_records(out: str) -> List[dict]:
    records = []
    for name in sorted(os.listdir(out)):
        if name.endswith(".json"):
            with open(os.path.join(out, name), encoding="utf-8") as handle:
                records.append(json.load(handle))
    return records


def merged(records: Sequence[dict], root: str) -> Observations:
    """One set of records from each process's: calls and syncs summed, each file's digest taken now."""
    calls: Dict[_Key, int] = {}
    syncs: Dict[Tuple[str, int, str], List] = {}
    for record in records:
        for path, qualname, line, count, name in record["functions"]:
            key = (path, qualname, line, name)
            calls[key] = calls.get(key, 0) + count
        for sync in record.get("syncs", ()):
            entry = syncs.setdefault((sync["path"], sync["line"], sync["kind"]), [0, sync.get("stack", [])])
            entry[0] += sync["count"]
    return _observations(root, calls, syncs)


def _observations(root: str, calls: Dict[_Key, int], syncs: Dict[Tuple[str, int, str], List]) -> Observations:
    files = {path: found for path in sorted({key[0] for key in calls}) if (found := _file_digest(root, path))}
    functions = tuple(
        FunctionCount(path, qualname, name, line, count)
        for (path, qualname, line, name), count in sorted(calls.items(), key=lambda item: (item[0][0], item[0][2]))
        if path in files
    )
    found_syncs = tuple(
        SyncRecord(path, line, kind, count, tuple(stack))
        for (path, line, kind), (count, stack) in sorted(syncs.items())
    )
    return Observations(root, files, functions, found_syncs)


def _file_digest(root: str, path: str) -> Optional[str]:
    try:
        with open(os.path.join(root, path), "rb") as handle:
            return digest(handle.read())
    except OSError:
        return None


def from_pstats(path: str, root: str) -> Observations:
    """A cProfile file's call counts (primitive and recursive) for the functions under `root`. cProfile keeps
    no qualname: `check --profile` matches these by name and first line."""
    try:
        with open(path, "rb") as handle:
            stats = marshal.load(handle)
        entries = [(key, value[1]) for key, value in stats.items()]
        prefix = root.rstrip(os.sep) + os.sep
        calls: Dict[_Key, int] = {}
        for (filename, line, name), count in entries:
            full = os.path.abspath(filename)
            if full.startswith(prefix) and "site-packages" not in full and not name.startswith("<"):
                key = (os.path.relpath(full, root).replace(os.sep, "/"), None, int(line), str(name))
                calls[key] = calls.get(key, 0) + int(count)
    except OSError as error:
        raise UsageError(f"{path}: cannot read: {error.strerror or error}") from None
    except (EOFError, ValueError, TypeError, AttributeError) as error:
        raise UsageError(f"{path}: not a cProfile (pstats) file: {error}") from None
    return _observations(root, calls, {})
