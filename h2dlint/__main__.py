import sys

from h2dlint.faces.cli import main

if __name__ == "__main__":  # libcst's tool imports every module of a package in its `modules:` to list codemods
    sys.exit(main())
