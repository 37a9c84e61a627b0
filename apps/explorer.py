"""The live explorer: ``panel serve apps/explorer.py`` (nothing trains until you press Play).

An installed package serves the same page with ``aggmrf-explore serve``.
"""

from aggmrf_explore.explorer.server.serve import explorer_document

explorer_document()
