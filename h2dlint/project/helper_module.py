"""The runtime helper's module, decided up front: `helper-module` must name a module of the project or an
importable one, and `vendor-helper` names the module it writes from the package it lands in."""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Optional, Sequence

# Where a project's own top-level packages live, relative to its configuration: a flat layout, or `src/`.
PROJECT_SOURCE_FOLDERS = (".", "src")


def helper_module_problem(module: str, roots: Sequence[str]) -> Optional[str]:
    """Why fixed code could not import `module` (None when it can): it is neither a file below one of
    `roots` (a project's folders, see PROJECT_SOURCE_FOLDERS) nor found by Python's import system. Only the
    top-level package is looked up, never imported, so nothing of the user's runs."""
    parts = module.split(".")
    if any(_module_file(os.path.join(root, *parts)) for root in roots):
        return None
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        spec = None
    if spec is not None and (len(parts) == 1 or any(
        _module_file(os.path.join(location, *parts[1:])) for location in spec.submodule_search_locations or ()
    )):
        return None
    return (
        f"helper-module `{module}` is neither a module of the project nor importable; write it with "
        "`h2dlint vendor-helper PATH`, or fix the setting"
    )


def is_first_party(module: str, config_root: Optional[str], path: Optional[str]) -> bool:
    """Whether isort, run at the root of the project `path` belongs to, puts an import of `module` in the
    first-party section. Its default `src_paths` are its configuration's folder and its `src/`: a top-level name
    found there (a folder, a `.py` file, or a package root so named) is first-party, whatever else is installed.
    The project's folders are those of `config_root`, and the package root of `path` (not the current folder:
    isort run elsewhere sees other packages as its own)."""
    folder = os.path.dirname(os.path.abspath(path)) if path is not None and os.path.isfile(path) else None
    return _first_party_in(module.split(".")[0], config_root, folder)


@functools.lru_cache(maxsize=4096)
def _first_party_in(top: str, config_root: Optional[str], folder: Optional[str]) -> bool:
    """`is_first_party` for the files of one folder: asked once per folder, not once per file (a warm run of a
    large tree asks it for every file)."""
    roots = [os.path.join(config_root, part) for part in PROJECT_SOURCE_FOLDERS] if config_root else []
    if folder is not None:
        roots += [os.path.join(_package_root_of(folder), part) for part in PROJECT_SOURCE_FOLDERS]
    return any(_holds_top_level(os.path.abspath(root), top) for root in roots)


def _holds_top_level(root: str, name: str) -> bool:
    if os.path.basename(root) == name and os.path.isfile(os.path.join(root, "__init__.py")):
        return True
    return os.path.isdir(os.path.join(root, name)) or os.path.isfile(os.path.join(root, name + ".py"))


def project_roots(config_root: Optional[str]) -> list:
    """The folders a project's modules are found in: below its configuration, and the current folder."""
    roots = [os.path.join(config_root, folder) for folder in PROJECT_SOURCE_FOLDERS] if config_root else []
    return roots + [os.path.join(os.curdir, folder) for folder in PROJECT_SOURCE_FOLDERS]


def module_name_for(path: str) -> str:
    """The dotted module name of the `.py` file at `path`, from its package root (`package_root`)."""
    folder, name = os.path.split(os.path.abspath(path))
    parts = [os.path.splitext(name)[0]]
    root = package_root(path)
    while folder != root:
        folder, package = os.path.split(folder)
        parts.append(package)
    return ".".join(reversed(parts))


def package_root(path: str) -> str:
    """The folder on the import path for the file at `path`: the first folder up that has no `__init__.py`
    (`src/` in a src layout, the project folder in a flat one)."""
    return _package_root_of(os.path.dirname(os.path.abspath(path)))


def _package_root_of(folder: str) -> str:
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder = os.path.dirname(folder)
    return folder


def _module_file(base: str) -> bool:
    return os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py"))
