import sys

from h2dlint.faces.cli import main

sys.exit(main())
