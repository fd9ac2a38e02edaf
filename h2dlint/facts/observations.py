"""What a traced run saw (`h2dlint trace`), as plain records: how often each function of the project ran, and
the synchronisations it caught on CUDA.

The file `h2dlint trace` writes is JSON:

    {"format": "h2dlint-trace", "version": 1, "root": "/abs/project",
     "files": {"pkg/batch.py": "<blake2b-128 of the file's bytes>", ...},
     "functions": [["pkg/batch.py", "Batch.prepare_for_decode", 48, 240], ...],   # path, qualname, line, calls
     "syncs": [{"path": "pkg/batch.py", "line": 58, "kind": "sync", "count": 24,
                "stack": ["pkg/batch.py:58", "run.py:41"]}, ...]}

Paths are relative to the root the run was traced in, with `/` separators. A qualname is Python's
`__qualname__`; one converted from cProfile has none (null), and is matched by name and first line instead.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

FORMAT = "h2dlint-trace"
VERSION = 1
SYNC, PAGEABLE_COPY = "sync", "pageable-copy"  # a synchronising CUDA call; a non-blocking copy from pageable memory


@dataclass(frozen=True)
class FunctionCount:
    path: str
    qualname: Optional[str]
    name: str
    line: int  # the first line of its code (`co_firstlineno`: its first decorator, if decorated)
    calls: int


@dataclass(frozen=True)
class SyncRecord:
    path: str
    line: int
    kind: str  # SYNC or PAGEABLE_COPY
    count: int
    stack: Tuple[str, ...] = ()  # "path:line", innermost first


@dataclass(frozen=True)
class Observations:
    root: str
    files: Dict[str, str]  # path -> digest of its bytes when traced
    functions: Tuple[FunctionCount, ...]
    syncs: Tuple[SyncRecord, ...] = ()

    def by_path(self) -> Dict[str, List[FunctionCount]]:
        found: Dict[str, List[FunctionCount]] = {}
        for function in self.functions:
            found.setdefault(function.path, []).append(function)
        return found


class BadObservations(ValueError):
    """A file that is not a trace h2dlint can read; the message is one line."""


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def parse(text: str) -> Observations:
    try:
        document = json.loads(text)
    except ValueError as error:
        raise BadObservations(f"not JSON: {error}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise BadObservations(f"not an `h2dlint trace` file (no \"format\": \"{FORMAT}\")")
    if document.get("version") != VERSION:
        raise BadObservations(f"trace format version {document.get('version')!r}; this h2dlint reads {VERSION}")
    try:
        functions = tuple(_function(entry) for entry in document.get("functions", []))
        syncs = tuple(_sync(entry) for entry in document.get("syncs", []))
        files = {str(path): str(value) for path, value in dict(document.get("files", {})).items()}
        return Observations(str(document.get("root", "")), files, functions, syncs)
    except (TypeError, ValueError, KeyError, IndexError) as error:
        raise BadObservations(f"malformed record: {error}") from None


def render(observations: Observations) -> str:
    document = {
        "format": FORMAT,
        "version": VERSION,
        "root": observations.root,
        "files": dict(sorted(observations.files.items())),
        # A record without a qualname (from cProfile) keeps the name it is matched by.
        "functions": [
            [f.path, f.qualname, f.line, f.calls] + ([f.name] if f.qualname is None else [])
            for f in observations.functions
        ],
        "syncs": [
            {"path": s.path, "line": s.line, "kind": s.kind, "count": s.count, "stack": list(s.stack)}
            for s in observations.syncs
        ],
    }
    # One record a line: a trace of a large project stays readable and diffable.
    lines = json.dumps(document, indent=1).splitlines()
    return "\n".join(_joined_records(lines)) + "\n"


def _joined_records(lines: List[str]) -> List[str]:
    """`json.dumps(indent=1)` lines with each record (a list or object two levels down) on one line."""
    out: List[str] = []
    depth_of = lambda line: len(line) - len(line.lstrip(" "))  # noqa: E731
    for line in lines:
        if out and depth_of(line) > 2 and depth_of(out[-1]) >= 2 and out[-1].rstrip()[-1:] in "[{,":
            out[-1] = out[-1] + line.strip() if out[-1].endswith(("[", "{")) else out[-1] + " " + line.strip()
        elif out and depth_of(line) == 2 and line.strip()[:1] in "]}" and depth_of(out[-1]) == 2:
            out[-1] += line.strip()
        else:
            out.append(line)
    return out


def _function(entry: list) -> FunctionCount:
    path, qualname, line, calls = entry[:4]
    if qualname is not None and not isinstance(qualname, str):
        raise TypeError(f"qualname {qualname!r}")
    name = entry[4] if len(entry) > 4 else (qualname or "").rpartition(".")[2]
    return FunctionCount(str(path), qualname, str(name), int(line), int(calls))


def _sync(entry: dict) -> SyncRecord:
    kind = str(entry["kind"])
    if kind not in (SYNC, PAGEABLE_COPY):
        raise ValueError(f"sync kind {kind!r}")
    stack = tuple(str(frame) for frame in entry.get("stack", ()))
    return SyncRecord(str(entry["path"]), int(entry["line"]), kind, int(entry.get("count", 1)), stack)
