import os
import sys


def _without_working_folder() -> None:
    """`python -m h2dlint` puts the working folder first on `sys.path`. A tree checked from its own folder may
    hold modules named like the standard library's (vLLM 0.6 has `vllm/logging/`), which would then shadow
    the ones the linter imports. The package itself is already imported, so nothing else needs that entry."""
    if sys.path and not sys.flags.safe_path and os.path.abspath(sys.path[0] or os.curdir) == os.getcwd():
        del sys.path[0]


if __name__ == "__main__":  # libcst's tool imports every module of a package in its `modules:` to list codemods
    _without_working_folder()
    from h2dlint.faces.cli import main

    sys.exit(main())
