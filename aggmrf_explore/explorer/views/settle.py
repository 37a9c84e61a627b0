"""Several sliders of one store setting that always end showing the store's value.

The store's param is the one source of truth; each slider is bound to it both ways
(``binding.Binder``).  Bound that way alone, two sliders of one setting (ε: the sidebar's
and the Privacy tab's) can disagree after quick key presses on a busy server: a value
the server sends to a slider while the browser's newer values to that same slider are
still on their way overwrites them on the page, and the server never sends the newer
values back (the browser "has them already").  The page then shows a value that neither
the store nor the run use.

:class:`Settle` waits until a burst of changes has been quiet for ``DELAY_MS``, then
sends the store's value to every slider again, whatever the server thinks the page
shows (two changes held into one message: the page sees only the final value).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import panel as pn

__all__ = ["Settle", "DELAY_MS"]

DELAY_MS = 400


class Settle:
    """Keep ``sliders`` (DiscreteSliders bound to ``session.<name>``) showing its value.

    ``hush()`` is the view's context manager under which its widget watchers ignore a
    change (the resend must not propose a value to the store).
    """

    def __init__(
        self,
        session,
        name: str,
        sliders: Sequence,
        hush: Callable[[], AbstractContextManager],
    ) -> None:
        self.session, self.name, self.sliders, self.hush = session, name, list(sliders), hush
        self._generation = 0
        self._resending = False
        session.param.watch(self._soon, name)
        for w in self.sliders:
            w.param.watch(self._soon, "value")

    def _soon(self, event=None) -> None:
        doc = pn.state.curdoc
        if self._resending or doc is None or doc.session_context is None:
            return  # (no served page: nothing in flight)
        self._generation += 1
        mine = self._generation
        pn.state.add_periodic_callback(lambda: self._settle(mine), period=DELAY_MS, count=1)

    def _settle(self, generation: int) -> None:
        if generation != self._generation:
            return  # a newer change is under way: its own timer settles
        self.resend()

    def resend(self) -> None:
        """Send the store's value to every slider (even one the server believes shows it)."""
        value = getattr(self.session, self.name)
        self._resending = True
        try:
            self._resend(value)
        finally:
            self._resending = False

    def _resend(self, value) -> None:
        with pn.io.hold(), self.hush():
            for w in self.sliders:
                values = list(w.values)
                if value not in values or len(values) < 2:
                    continue
                other = values[1] if values[0] == value else values[0]
                w.value = other  # (held: only the final value reaches the page)
                w.value = value
