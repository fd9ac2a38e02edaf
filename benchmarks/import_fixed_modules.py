"""Import every module that `h2dlint check --fix` changed, before and after the fix, with torch installed.

    python benchmarks/fix_real_trees.py sglang=/tmp/engines/sglang_x/sglang/srt --scratch /tmp/S
    python benchmarks/import_fixed_modules.py --tree /tmp/S/sglang/srt --package-root /tmp/engines/sglang_x \\
        --prefix sglang.srt [--jobs 2] [--timeout 120]

`--tree` is a scratch copy that `fix_real_trees.py` kept: a git repository whose last two commits are the original
and the fixed tree. Each changed file is imported as its real module (`--prefix` + its path), with its package's
other modules taken from `--package-root`, once from the original text and once from the fixed text, each in a
fresh process. A module that imported before must import after; one that did not (a dependency that is not
installed, a GPU it needs) is counted, not judged. Prints the counts and every module that stopped importing;
exits 1 if any did.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional, Sequence, Tuple

IMPORT_ONE = r"""
import importlib, importlib.util, sys
name, path = sys.argv[1], sys.argv[2]
parent = name.rpartition(".")[0]
if parent:
    importlib.import_module(parent)
spec = importlib.util.spec_from_file_location(name, path)
module = importlib.util.module_from_spec(spec)
sys.modules[name] = module
spec.loader.exec_module(module)
"""


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", required=True)
    parser.add_argument("--package-root", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    changed = _git(args.tree, "diff", "--name-only", "HEAD~1", "HEAD").split()
    changed = [path for path in changed if path.endswith(".py")]
    original = os.path.join(args.tree, ".git", "h2dlint-original")
    _export_original(args.tree, changed, original)
    jobs = [(path, _module(args.prefix, path)) for path in changed]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda job: _before_and_after(job, args, original), jobs))
    before = sum(ok_before for _, ok_before, _ in results)
    after = sum(ok_after for _, _, ok_after in results)
    broken = [name for name, ok_before, ok_after in results if ok_before and not ok_after]
    print(f"changed modules: {len(results)}; imported before the fix: {before}; after: {after}; "
          f"stopped importing: {len(broken)}")
    for name in broken:
        print(f"  stopped importing: {name}")
    return 1 if broken else 0


def _before_and_after(job: Tuple[str, str], args: argparse.Namespace, original: str) -> Tuple[str, bool, bool]:
    path, name = job
    ok_before = _imports(name, os.path.join(original, path), args)
    ok_after = _imports(name, os.path.join(args.tree, path), args) if ok_before else False
    return name, ok_before, ok_after


def _imports(name: str, path: str, args: argparse.Namespace) -> bool:
    env = {**os.environ, "PYTHONPATH": args.package_root, "CUDA_VISIBLE_DEVICES": ""}
    try:
        done = subprocess.run([sys.executable, "-c", IMPORT_ONE, name, path], env=env, capture_output=True,
                              timeout=args.timeout, cwd=args.package_root)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def _module(prefix: str, path: str) -> str:
    parts = os.path.splitext(path)[0].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([prefix, *parts]) if parts else prefix


def _export_original(tree: str, paths: List[str], target: str) -> None:
    for path in paths:
        os.makedirs(os.path.dirname(os.path.join(target, path)), exist_ok=True)
        with open(os.path.join(target, path), "wb") as out:
            out.write(subprocess.run(["git", "show", f"HEAD~1:{path}"], cwd=tree, capture_output=True,
                                     check=True).stdout)


def _git(tree: str, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=tree, capture_output=True, check=True, text=True).stdout


if __name__ == "__main__":
    sys.exit(main())
