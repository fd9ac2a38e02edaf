"""Short names for the files of a run, and the full dotted names by which imports find them.

`module_names` names each file for output and the index; `suffix_index` and `absolute_import` let the index
resolve `import a.b.c` and `from ..x import y` by path, without knowing where the import root is.
"""

from __future__ import annotations

import os
from typing import Dict, Iterable, List, Set


def module_names(paths: Iterable[str]) -> Dict[str, str]:
    """A short dotted name for each file, unique in the run: its path from the folder above the files'
    common folder (`srt.managers.scheduler` for `.../sglang/srt/managers/scheduler.py`)."""
    absolute = {p: os.path.abspath(p) for p in paths}
    if not absolute:
        return {}
    base = os.path.dirname(os.path.commonpath([os.path.dirname(a) for a in absolute.values()]))
    names: Dict[str, str] = {}
    taken: Set[str] = set()
    for path, full in absolute.items():
        name = ".".join(components(os.path.relpath(full, base)))
        if name in taken:
            name = os.path.relpath(full, base)  # `pkg.py` beside `pkg/__init__.py`: keep both apart
        taken.add(name)
        names[path] = name
    return names


def components(path: str) -> List[str]:
    """`a/b/c.py` -> [a, b, c]; `a/b/__init__.py` -> [a, b]."""
    parts = [p for p in path.replace(os.sep, "/").split("/") if p]
    if parts and parts[-1].endswith(".py"):
        parts[-1] = parts[-1][:-3]
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return parts


def suffix_index(full_names: Dict[str, str]) -> Dict[str, str]:
    """Every dotted suffix of every module's full name -> that module ("" when two modules share it)."""
    index: Dict[str, str] = {}
    for name, full in full_names.items():
        parts = full.split(".")
        for start in range(len(parts)):
            suffix = ".".join(parts[start:])
            index[suffix] = name if index.get(suffix, name) == name else ""
    return index


def absolute_import(target: str, module: str, is_package: bool) -> str:
    """Resolve a relative import (`..x.y`) against the importing module."""
    level = len(target) - len(target.lstrip("."))
    if not level:
        return target
    package = module.split(".")
    if not is_package:
        package = package[:-1]
    if level > 1:
        package = package[: len(package) - (level - 1)]
    rest = target[level:]
    return ".".join(package + ([rest] if rest else []))
