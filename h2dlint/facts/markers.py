"""`# h2dlint: hot|cold` marker comments, and where a `def` or `class` header ends (where its marker may sit)."""

from __future__ import annotations

import ast
import re
from typing import List, Optional, Sequence, Tuple, Union

from h2dlint.facts.summary import Marker

_Scope = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]


MARKER = re.compile(r"#\s*h2dlint:\s*(hot|cold)\b")


def may_hold_markers(text: str) -> bool:
    """Whether `text` may hold a marker at all: every match of `MARKER` contains "h2dlint:"."""
    return "h2dlint:" in text


def find_marker(lines: Sequence[str], first: int, last: int) -> Optional[Marker]:
    """The `# h2dlint: hot|cold` marker on 1-based lines first..last, if any."""
    for line in lines[first - 1 : last]:
        found = MARKER.search(line)
        if found:
            return Marker(found.group(1))
    return None


def header_end(node: _Scope, lines: Sequence[str]) -> int:
    """The last line of a `def`/`class` header (the line of its `:`), where a marker comment may sit."""
    row, column = _header_tail_start(node)
    for index in range(row, min(node.body[0].lineno, len(lines)) + 1):
        line = lines[index - 1]
        code = line.encode("utf-8")[column:].decode("utf-8", errors="replace") if index == row else line
        if ":" in code.split("#", 1)[0]:
            return index
    return node.body[0].lineno


def _header_tail_start(node: _Scope) -> Tuple[int, int]:
    """Where the last part of a header that may contain `:` or `#` of its own ends (row, byte offset):
    after that, only `)`, `->`, `:` and comments remain."""
    if isinstance(node, ast.ClassDef):
        parts: List[ast.AST] = [*node.bases, *(k.value for k in node.keywords)]
    else:
        args = node.args
        parts = [
            *(a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.annotation),
            *args.defaults,
            *(d for d in args.kw_defaults if d is not None),
            *(a.annotation for a in (args.vararg, args.kwarg) if a is not None and a.annotation),
            *([node.returns] if node.returns is not None else []),
        ]
    if not parts:
        return node.lineno, node.col_offset
    last = max(parts, key=lambda p: (p.end_lineno, p.end_col_offset))  # type: ignore[attr-defined]
    return last.end_lineno, last.end_col_offset  # type: ignore[attr-defined]
