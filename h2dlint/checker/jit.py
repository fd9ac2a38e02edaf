"""TorchScript code gets no fix: `torch.jit.script` compiles the function's source, and it cannot compile a call
of the runtime helper (the module would no longer import: `NotSupportedError`)."""

from __future__ import annotations

import ast
import dataclasses
from typing import Dict, Iterator, Optional, Tuple

from h2dlint.facts.summary import ModuleSummary

# What compiles a function's source with TorchScript, when it decorates the function, its class, or is called
# with it. (`torch.jit.ignore`/`unused` leave the body to Python, and `torch.jit.trace` records operations.)
TORCHSCRIPT_COMPILERS = frozenset({"torch.jit.script", "torch.jit.script_method", "torch.jit.interface"})
# In every name of TORCHSCRIPT_COMPILERS, and in any import of one under another name (`from torch.jit import
# script as s`); "script" alone would match every `description` and `subscript`.
_COMPILER_WORDS = ("jit",)
IN_TORCHSCRIPT = "TorchScript compiles this code (`{how}`), and it cannot compile a call of the helper"


def without_fixes_in_jit_code(summary: ModuleSummary, tree: ast.Module, text: str) -> ModuleSummary:
    """`summary`, with no fix for a site in code that TorchScript compiles, and the reason why; `text` is the
    source of `tree`."""
    if all(site.fix is None for site in summary.sites):
        return summary  # nearly every file: no fix to withhold, so no walk for TorchScript code
    if not any(word in text for word in _COMPILER_WORDS):
        return summary  # no compiler is named, nor imported under another name: the walk would find nothing
    compiled = _torchscript_code(tree, summary.imports)
    if not compiled:
        return summary
    sites = []
    for site in summary.sites:
        how = _compiled_by(site.function, compiled)
        if how is not None and site.fix is not None:
            site = dataclasses.replace(site, fix=None, unfixable=IN_TORCHSCRIPT.format(how=how))
        sites.append(site)
    return dataclasses.replace(summary, sites=sites)


def _compiled_by(function: str, compiled: Dict[str, str]) -> Optional[str]:
    parts = function.replace(".<locals>", "").split(".")
    for end in range(len(parts), 0, -1):
        found = compiled.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None


def _torchscript_code(tree: ast.Module, imports: Dict[str, str]) -> Dict[str, str]:
    """Qualnames (without `<locals>`) of the functions and classes TorchScript compiles -> how, as written."""
    compiled: Dict[str, str] = {}
    scripted_by_call = set(_names_passed_to_script(tree, imports))
    for qualname, node in _definitions(tree.body, ""):
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if _qualify(target, imports) in TORCHSCRIPT_COMPILERS:
                compiled[qualname] = "@" + ast.unparse(target)
        if node.name in scripted_by_call and "." not in qualname:
            compiled.setdefault(qualname, f"torch.jit.script({node.name})")
    return compiled


def _definitions(body, prefix: str) -> Iterator[Tuple[str, ast.AST]]:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            qualname = prefix + node.name
            yield qualname, node
            yield from _definitions(node.body, qualname + ".")


def _names_passed_to_script(tree: ast.Module, imports: Dict[str, str]) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
            if _qualify(node.func, imports) in TORCHSCRIPT_COMPILERS:
                yield node.args[0].id


def _qualify(expr: ast.expr, imports: Dict[str, str]) -> Optional[str]:
    """`torch.jit.script` for `torch.jit.script`, `jit.script` or `script`, through the file's imports."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    root = imports.get(expr.id, expr.id)
    return ".".join([root, *reversed(parts)])

