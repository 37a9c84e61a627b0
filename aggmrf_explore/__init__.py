"""aggmrf_explore: learn a logistic model from aggregated (and privacy-noised) contingency tables.

Data flow: records → encoding → tables (aggregate) → privacy (optional noisy release)
→ mrf (PCD trainer, numba kernels) → model → metrics / baselines → explorer.
"""

from .errors import AggMRFError, DivergenceError
from .tables import AggregatedData, TableLayout, aggregate

__all__ = ["AggMRFError", "DivergenceError", "AggregatedData", "TableLayout", "aggregate"]
__version__ = "0.1.0"
