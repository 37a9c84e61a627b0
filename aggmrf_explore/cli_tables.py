# TEMPORARY shim (issue 12): remove at integration
"""Moved to :mod:`aggmrf_explore.cli` (run.py, aggregate.py, predict.py)."""

from .cli.aggregate import cmd_aggregate
from .cli.predict import cmd_predict
from .cli.run import auto_lambda, cmd_run_tables

__all__ = ["cmd_aggregate", "cmd_run_tables", "cmd_predict", "auto_lambda"]
