"""``python -m aggmrf_explore.cli``: the `aggmrf-explore` command."""

import sys

from . import main

sys.exit(main())
