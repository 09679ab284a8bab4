"""`python -m service.cli`: the `perfwarden` command."""
import sys

from . import main

sys.exit(main())
