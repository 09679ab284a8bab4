"""`python -m collectors ...`: the collector commands on a node without the service installed."""
import sys

from .cli import main

sys.exit(main())
