import os
import sys


def _without_working_folder() -> None:
    """`python -m h2dlint` puts the working folder first on `sys.path`. A tree checked from its own folder may
    hold modules named like the standard library's (vLLM 0.6 has `vllm/logging/`), which would then shadow
    the ones the linter imports. The entry stays where h2dlint itself was found there (a source checkout run
    without installing it): worker processes started by spawning import it from the same path."""
    here = os.getcwd()
    if not sys.path or sys.flags.safe_path or os.path.abspath(sys.path[0] or os.curdir) != here:
        return
    import h2dlint

    if os.path.dirname(os.path.dirname(os.path.abspath(h2dlint.__file__))) != here:
        del sys.path[0]


if __name__ == "__main__":  # libcst's tool imports every module of a package in its `modules:` to list codemods
    _without_working_folder()
    from h2dlint.faces.cli import main

    sys.exit(main())
