"""The project's error type: every public function raises it (a ValueError) on bad input,
with a message that says what was wrong and what to do."""


class AggMRFError(ValueError):
    """Bad input to aggmrf_explore: the message says what is wrong and how to fix it."""


class DivergenceError(AggMRFError):
    """Training diverged (parameters or statistics stopped being finite or exploded)."""
