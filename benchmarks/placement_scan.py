"""A loose scan for host-to-device copies whose host source was built or named away from the copy (issue 14).

    python benchmarks/placement_scan.py sglang=/tmp/engines/sglang_x/sglang/srt ... \
        --labels benchmarks/engine_labels.tsv --sample 150 --sample-out /tmp/placement_sample.md

It uses the standard library only and knows nothing of h2dlint: no import resolution, no hotness, no
verdicts, so that a sample it writes can be labelled blind. It is deliberately broad; a construct it lists is
a *candidate*, and the labeller decides from the code whether the source really is a host tensor.

A *host source* is, loosely: a torch factory without `device=` (`torch.zeros/ones/full/empty/arange/...`),
`torch.cat/stack/concat`, `torch.from_numpy` or `torch.tensor/as_tensor/asarray` without `device=`; the
result of `.cpu()`; a name or attribute named as host data (`*_cpu`, `*_host`, `*_np`, `cpu_*`, `host_*`);
a local assigned from one anywhere in the function; `self.x` when a method of the class assigns `self.x`
one; a call of a function of the same module that returns one. Host-preserving methods (`.long()`, `.view()`,
slicing, ...) are looked through. The constructs (kind: what makes the source a host source):

- `.to(<device>)` / `.cuda()` of a host source (`copy:<source kind>`), with or without `non_blocking`;
- `buf.copy_(<host source>)` (`copy_:<source kind>`);
- `torch.tensor/as_tensor/asarray` without `device=` inside `with torch.device(...)` / `with
  x.device:`, or in a module that calls `torch.set_default_device` (`device-context`);
- `.to(<device>)` / `.cuda()` of a lambda's or comprehension's own variable (`mapping-copy`).

`--sample-out` writes, per tree, the first N candidate lines in sha1 order of `path:line` that `--labels` does
not label yet, each with its function and source context, and nothing else.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import re
import sys
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

FACTORIES = frozenset(
    "zeros ones full empty arange range linspace logspace eye rand randn randint randperm tensor as_tensor "
    "asarray from_numpy cat concat concatenate stack hstack vstack".split()
)
# Under a device context these copy host data; other factories (`zeros`, `arange`, ...) fill on the device.
DATA_BUILDERS = frozenset({"tensor", "as_tensor", "asarray"})
PRESERVING = frozenset(
    "long int float half bfloat16 bool double view reshape contiguous unsqueeze squeeze flatten clone detach "
    "to_dense narrow expand permute transpose t flip".split()
)
HOST_NAME = re.compile(r"(^|_)(cpu|host|np|numpy)($|_)")
EXCLUDES = ("test_", "_test.py", "/tests/", "/test/", "/benchmarks/", "/examples/", "example.py")


@dataclass(frozen=True)
class Candidate:
    path: str
    line: int
    kind: str
    function: str


def scan(raw: bytes, path: str) -> List[Candidate]:
    try:
        tree = ast.parse(raw)
    except (SyntaxError, ValueError, RecursionError):
        return []
    returns_host = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and _returns_host(f)}
    default_device = any(_callee(n) == "set_default_device" for n in ast.walk(tree) if isinstance(n, ast.Call))
    scanner = _Scanner(path, returns_host, default_device)
    scanner.visit(tree)
    return scanner.found


def _callee(call: ast.Call) -> Optional[str]:
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return call.func.id if isinstance(call.func, ast.Name) else None


def _is_torch_call(call: ast.Call) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("torch", "th")


def _has_device(call: ast.Call) -> bool:
    return any(k.arg == "device" or k.arg is None for k in call.keywords)


def _strip(expr: ast.expr) -> ast.expr:
    while True:
        if isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in PRESERVING:
            expr = expr.func.value
        else:
            return expr


def _last_name(expr: ast.expr) -> Optional[str]:
    if isinstance(expr, ast.Name):
        return expr.id
    return expr.attr if isinstance(expr, ast.Attribute) else None


def _direct_source(expr: ast.expr) -> Optional[str]:
    """The kind of host source `expr` is without looking at names' values, or None."""
    expr = _strip(expr)
    if isinstance(expr, ast.Call):
        name = _callee(expr)
        if name == "cpu" and isinstance(expr.func, ast.Attribute):
            return "cpu()"
        if name in FACTORIES and _is_torch_call(expr) and not _has_device(expr):
            return "factory"
        if name == "pin_memory":
            return "pinned"
        return None
    name = _last_name(expr)
    if name is not None and HOST_NAME.search(name.lower()):
        return "host-name"
    return None


def _returns_host(function: ast.FunctionDef) -> bool:
    values = [n.value for n in ast.walk(function) if isinstance(n, ast.Return) and n.value is not None]
    return bool(values) and all(_direct_source(v) in ("factory", "cpu()") for v in values)


def _assigned_sources(scope: ast.AST, of_self: bool) -> Dict[str, str]:
    """Names (or `self.x` attributes) assigned a host source anywhere in `scope`."""
    found: Dict[str, str] = {}
    for node in ast.walk(scope):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        kind = _direct_source(node.value)
        if kind is None:
            continue
        for target in targets:
            if of_self and isinstance(target, ast.Attribute) and _is_self(target.value):
                found[target.attr] = kind
            elif not of_self and isinstance(target, ast.Name):
                found[target.id] = kind
    return found


def _is_self(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id == "self"


def _is_device_move(call: ast.Call) -> bool:
    name = _callee(call)
    if name == "cuda":
        return True
    if name != "to":
        return False
    if any(k.arg == "device" for k in call.keywords):
        return not _is_cpu(next(k.value for k in call.keywords if k.arg == "device"))
    if not call.args:
        return False
    text = ast.unparse(call.args[0])
    if _is_cpu(call.args[0]) or "dtype" in text:
        return False
    return not re.fullmatch(r"(torch\.)?(u?int\d*|float\d*|bfloat16|half|bool|long|double|complex\d*)", text)


def _is_cpu(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and (expr.value is None or str(expr.value).startswith("cpu"))


class _Scanner(ast.NodeVisitor):
    def __init__(self, path: str, returns_host: Set[str], default_device: bool) -> None:
        self.path = path
        self.returns_host = returns_host
        self.default_device = default_device
        self.found: List[Candidate] = []
        self.stack: List[str] = []
        self.locals: List[Dict[str, str]] = [{}]
        self.attributes: List[Dict[str, str]] = [{}]
        self.mapped: List[Set[str]] = [set()]
        self.device_blocks = 0

    def _add(self, node: ast.AST, kind: str) -> None:
        self.found.append(Candidate(self.path, node.lineno, kind, ".".join(self.stack) or "<module>"))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.attributes.append(_assigned_sources(node, of_self=True))
        self._scoped(node, node.name)
        self.attributes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.locals.append(_assigned_sources(node, of_self=False))
        self._scoped(node, node.name)
        self.locals.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _scoped(self, node: ast.AST, name: str) -> None:
        self.stack.append(name)
        self.generic_visit(node)
        self.stack.pop()

    def visit_With(self, node: ast.With) -> None:
        in_device = any(_is_device_context(item.context_expr) for item in node.items)
        self.device_blocks += in_device
        self.generic_visit(node)
        self.device_blocks -= in_device

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._mapping(node, {a.arg for a in node.args.args})

    def _comprehension(self, node: ast.AST) -> None:
        bound = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}  # type: ignore
        self._mapping(node, bound)

    visit_ListComp = visit_DictComp = visit_GeneratorExp = visit_SetComp = _comprehension  # type: ignore

    def _mapping(self, node: ast.AST, bound: Set[str]) -> None:
        self.mapped.append(self.mapped[-1] | bound)
        self.generic_visit(node)
        self.mapped.pop()

    def visit_Call(self, node: ast.Call) -> None:
        kind = self._kind(node)
        if kind is not None:
            self._add(node, kind)
        self.generic_visit(node)

    def _kind(self, call: ast.Call) -> Optional[str]:
        name = _callee(call)
        if (self.device_blocks or self.default_device) and name in DATA_BUILDERS and _is_torch_call(call):
            return None if _has_device(call) else "device-context"
        if name == "copy_" and isinstance(call.func, ast.Attribute) and call.args:
            source = self._source(call.args[0])
            return f"copy_:{source}" if source else None
        if isinstance(call.func, ast.Attribute) and _is_device_move(call):
            receiver = _strip(call.func.value)
            if isinstance(receiver, ast.Name) and receiver.id in self.mapped[-1]:
                return "mapping-copy"
            source = self._source(call.func.value)
            return f"copy:{source}" if source else None
        return None

    def _source(self, expr: ast.expr) -> Optional[str]:
        direct = _direct_source(expr)
        if direct is not None:
            return direct
        expr = _strip(expr)
        if isinstance(expr, ast.Name) and expr.id in self.locals[-1]:
            return "local:" + self.locals[-1][expr.id]
        if isinstance(expr, ast.Attribute) and _is_self(expr.value) and expr.attr in self.attributes[-1]:
            return "attribute:" + self.attributes[-1][expr.attr]
        if isinstance(expr, ast.Call) and _callee(expr) in self.returns_host:
            return "return"
        return None


def _is_device_context(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Call):
        return _callee(expr) == "device" and _is_torch_call(expr)
    return isinstance(expr, ast.Attribute) and expr.attr == "device"


def scan_tree(root: str) -> List[Candidate]:
    found: List[Candidate] = []
    for folder, _, files in os.walk(root):
        for file in sorted(files):
            path = os.path.join(folder, file)
            relative = os.path.relpath(path, root)
            if not file.endswith(".py") or any(x in "/" + relative for x in EXCLUDES):
                continue
            with open(path, "rb") as handle:
                found.extend(scan(handle.read(), relative))
    return found


def _site_hash(path: str, line: int) -> str:
    return hashlib.sha1(f"{path}:{line}".encode()).hexdigest()


def read_labelled(path: Optional[str]) -> Set[Tuple[str, str]]:
    if not path:
        return set()
    with open(path, encoding="utf-8") as handle:
        rows = [r.split("\t") for r in handle if r.strip() and not r.startswith("#")]
    return {(r[0], r[1]) for r in rows if len(r) >= 3}


def sample_lines(name: str, root: str, found: List[Candidate], labelled: Set[Tuple[str, str]], n: int) -> Iterable[str]:
    sites: Dict[Tuple[str, int], List[Candidate]] = {}
    for candidate in found:
        sites.setdefault((candidate.path, candidate.line), []).append(candidate)
    fresh = sorted((s for s in sites if (name, f"{s[0]}:{s[1]}") not in labelled), key=lambda s: _site_hash(*s))
    for path, line in fresh[:n]:
        kinds = ", ".join(sorted({c.kind for c in sites[(path, line)]}))
        yield f"### {name} {path}:{line} ({kinds}) in {sites[(path, line)][0].function}"
        yield "```python"
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as handle:
            text = handle.read().splitlines()
        for i in range(max(0, line - 7), min(len(text), line + 2)):
            yield f"{i + 1:5d}{'>' if i + 1 == line else ' '} {text[i]}"
        yield "```"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", metavar="NAME=PATH")
    parser.add_argument("--labels", help="TSV of hand labels; labelled sites are left out of the sample")
    parser.add_argument("--sample", type=int, default=0, help="unlabelled sites to write per tree")
    parser.add_argument("--sample-out", help="where to write the sample")
    args = parser.parse_args(argv)
    labelled = read_labelled(args.labels)
    out: List[str] = []
    for spec in args.trees:
        name, _, root = spec.partition("=")
        found = scan_tree(root)
        sites = {(c.path, c.line) for c in found}
        kinds: Dict[str, int] = {}
        for candidate in found:
            kinds[candidate.kind] = kinds.get(candidate.kind, 0) + 1
        fresh = sum((name, f"{p}:{line}") not in labelled for p, line in sites)
        print(f"{name}: {len(sites)} candidate lines ({fresh} unlabelled): "
              + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
        out.extend(sample_lines(name, root, found, labelled, args.sample))
    if args.sample_out:
        with open(args.sample_out, "w", encoding="utf-8") as handle:
            handle.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
