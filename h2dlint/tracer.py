"""The in-process half of `h2dlint trace`: counts how many times each function of a project runs.

It stands alone (the standard library only, no h2dlint import): `h2dlint trace` copies this file beside a
`sitecustomize.py` into a temporary folder put on PYTHONPATH, so every Python process the traced command
starts (the command itself, `python -m ...`, and the children it spawns) loads it before its own code. Each
process writes `<pid>.json` into the folder `H2DLINT_TRACE_OUT` names when it exits; `h2dlint trace` merges
them. A process that ends with `os._exit` (a forked multiprocessing worker) writes nothing.

Python 3.12+ counts with `sys.monitoring` (PY_START, disabled for good at each function outside the project,
so libraries cost nothing after their first call); older Pythons use `sys.setprofile`, also in threads.

With `H2DLINT_TRACE_SYNCS=1` and CUDA available once torch is imported, it also records where the run
synchronised: `torch.cuda.set_sync_debug_mode("warn")` warnings with their Python stack, and non-blocking
copies to the GPU from pageable memory (which sync debug mode misses), caught by wrapping `Tensor.to`,
`Tensor.cuda` and `Tensor.copy_` as vLLM's sync checker does.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading

ENV_OUT, ENV_ROOT, ENV_SYNCS = "H2DLINT_TRACE_OUT", "H2DLINT_TRACE_ROOT", "H2DLINT_TRACE_SYNCS"
_LIBRARY_FOLDERS = ("site-packages", "dist-packages")


class Counter:
    """Calls per code object of the project under `root`."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root) + os.sep
        self.counts: dict = {}
        self.syncs: dict = {}  # (path, line, kind) -> [count, stack]
        self._outside: set = set()
        self._own = os.path.dirname(os.path.abspath(__file__)) + os.sep

    def in_project(self, filename: str) -> bool:
        if filename.startswith("<"):  # `<frozen importlib._bootstrap>`, `<string>`
            return False
        full = os.path.abspath(filename)
        return full.startswith(self.root) and not full.startswith(self._own) and not any(
            f"{os.sep}{folder}{os.sep}" in full for folder in _LIBRARY_FOLDERS
        )

    def start(self) -> None:
        if hasattr(sys, "monitoring"):
            self._start_monitoring()
        else:
            profile = self._profiler()
            sys.setprofile(profile)
            threading.setprofile(profile)
            _pause_while_importing(profile)

    def _start_monitoring(self) -> None:
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        tool = monitoring.PROFILER_ID
        if monitoring.get_tool(tool) is not None:
            tool = next(t for t in range(6) if monitoring.get_tool(t) is None)
        monitoring.use_tool_id(tool, "h2dlint-trace")
        counts, disable = self.counts, monitoring.DISABLE

        def on_start(code, offset):  # noqa: ARG001 - the signature sys.monitoring calls
            if code in counts:
                counts[code] += 1
                return None
            if self.in_project(code.co_filename):
                counts[code] = 1
                self.first_seen()
                return None
            return disable

        monitoring.register_callback(tool, monitoring.events.PY_START, on_start)
        monitoring.set_events(tool, monitoring.events.PY_START)

    def _profiler(self):
        """The `sys.setprofile` hook, with what it reads bound locally: it runs on every call of the program."""
        counts, outside, in_project, first_seen = self.counts, self._outside, self.in_project, self.first_seen

        def profile(frame, event, arg):  # noqa: ARG001 - the signature sys.setprofile calls
            if event == "call":
                code = frame.f_code
                if code in counts:
                    counts[code] += 1
                elif code not in outside:
                    if in_project(code.co_filename):
                        counts[code] = 1
                        first_seen()
                    else:
                        outside.add(code)

        return profile

    def first_seen(self) -> None:
        """Called when a project function first runs: the moment to wrap torch, once it is imported."""
        if os.environ.get(ENV_SYNCS) == "1" and _imported("torch") and not getattr(self, "_syncs_on", False):
            self._syncs_on = True
            try:
                from _h2dlint_syncs import watch_syncs  # beside this file when `h2dlint trace` runs it

                watch_syncs(self)
            except Exception:  # noqa: BLE001 - recording syncs must never break the traced program
                return

    def record_sync(self, kind: str, frames) -> None:
        """A synchronisation at the innermost project frame of `frames` (file, line pairs, innermost first)."""
        stack = [(f, n) for f, n in frames if self.in_project(f)]
        if not stack:
            return
        path, line = stack[0]
        key = (self.relative(path), line, kind)
        entry = self.syncs.setdefault(key, [0, [f"{self.relative(f)}:{n}" for f, n in stack[:8]]])
        entry[0] += 1

    def relative(self, path: str) -> str:
        return os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")

    def records(self) -> dict:
        functions: dict = {}
        for code, calls in list(self.counts.items()):
            if code.co_name == "<module>":
                continue
            qualname = getattr(code, "co_qualname", None)  # Python 3.11+
            key = (self.relative(code.co_filename), qualname, code.co_firstlineno, code.co_name)
            functions[key] = functions.get(key, 0) + calls
        syncs = [
            {"path": p, "line": n, "kind": k, "count": c, "stack": s} for (p, n, k), (c, s) in self.syncs.items()
        ]
        return {
            "root": self.root.rstrip(os.sep),
            "functions": [[p, q, n, c, name] for (p, q, n, name), c in functions.items()],
            "syncs": syncs,
        }


def _pause_while_importing(profile) -> None:
    """Before Python 3.12 the hook runs on every call of the program, and importing a library such as torch
    makes millions; none is a project function's call worth counting (a project module's import-time calls
    run once), so profiling pauses while a module is first imported."""
    import builtins

    original = builtins.__import__
    modules = sys.modules

    def importing(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name in modules and not fromlist:
            return original(name, globals, locals, fromlist, level)
        sys.setprofile(None)
        try:
            return original(name, globals, locals, fromlist, level)
        finally:
            sys.setprofile(profile)

    builtins.__import__ = importing


def _imported(name: str) -> bool:
    """Whether module `name` is imported and done initialising."""
    module = sys.modules.get(name)
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


def write(counter: Counter, folder: str) -> None:
    """This process's records as `<pid>.json` in `folder`, whole or not at all (temporary file, then rename)."""
    target = os.path.join(folder, f"{os.getpid()}.json")
    temporary = target + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(counter.records(), handle)
    os.replace(temporary, target)


def start_from_environment() -> None:
    folder, root = os.environ.get(ENV_OUT), os.environ.get(ENV_ROOT)
    if not folder or not root:
        return
    counter = Counter(root)
    counter.start()
    atexit.register(write, counter, folder)
