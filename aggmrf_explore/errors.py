"""The project's error type: every public function raises it (a ValueError) on bad input,
with a message that says what was wrong and what to do."""


class AggMRFError(ValueError):
    """Bad input to aggmrf_explore: the message says what is wrong and how to fix it."""


class DivergenceError(AggMRFError):
    """Training diverged (parameters or statistics stopped being finite or exploded)."""


def error_message(exc: BaseException) -> str:
    """A one-line message for a page or a log line (never a traceback): an AggMRFError's
    own message, else the exception's type and the first line of its text."""
    if isinstance(exc, AggMRFError):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
