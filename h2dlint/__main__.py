import sys

from h2dlint.cli import main

sys.exit(main())
