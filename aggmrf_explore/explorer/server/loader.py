"""Loading a store's data off the event loop, and rolling back a setting that fails.

A data setting (dataset, n, seed, features, tables, an upload's label…) makes the store ask
for new data; :class:`Loader` prepares them in ``runtime.RUNTIME.data`` (a worker thread),
with the quick baselines, then loads them into the store.  When the preparation fails,
the setting that caused it (the error's ``setting``, else every data setting changed
since the last good load) goes back to its last good value, its message stays beside its
control (``session.errors``) and the rest loads again.  The slow baselines (the skyline
logistic on large data) follow in a niced worker thread.

Free of Panel: the view gives the callbacks that draw (``on_loaded``: new data are in the
store; ``on_message``: a message for the red box, "" to clear it; ``on_baselines``: the
slow baselines arrived).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ...errors import error_message
from ..store.problems import (
    CHEAP_BASELINES,
    SLOW_BASELINES,
    get_baselines,
    get_problem,
    peek_baselines,
    peek_problem,
)
from ..store.store import DATA_KEYS, ExplorerSession, baseline_names
from . import runtime

__all__ = [
    "Loader",
    "SMALL_DATASETS",
    "WARM_WAIT",
    "prefetch_first_screen",
    "prefetch_default_data",
]

SMALL_DATASETS = ("toy", "xor", "synthetic")  # all baselines fitted with the data (< 3 s)
BASELINE_GROUPS = (CHEAP_BASELINES, SLOW_BASELINES)
WARM_WAIT = 0.0  # seconds the server's first page waits for the kernels and default data


def prefetch_first_screen() -> None:
    """The first screen's data, quick baselines and trainer (a first start: before the
    compiler, which compiles one function at a time, holds the kernels they need)."""
    s = ExplorerSession(lazy=True, chain_build=runtime.chain_build)
    bundle = get_problem(**s.data_key())
    get_baselines(bundle, baseline_names(bundle, CHEAP_BASELINES))
    s.load(bundle)  # (the rows and logits of the test records are kernels too)
    s.close()
    runtime.log("first screen's data prefetched")


def prefetch_default_data() -> None:
    """Cache the first screen's data and baselines (run by the warm-up thread)."""
    bundle = get_problem(**ExplorerSession(lazy=True).data_key())
    get_baselines(bundle, baseline_names(bundle, CHEAP_BASELINES))
    get_baselines(bundle, SLOW_BASELINES)
    runtime.log("default data prefetched")


def _slow_baselines(bundle):
    runtime.lower_priority()
    return get_baselines(bundle, SLOW_BASELINES)


class Loader:
    """Loads one store's data; ``loaded`` is True once a first load ended (well or not)."""

    def __init__(
        self,
        session: ExplorerSession,
        on_loaded: Callable[[], None],
        on_message: Callable[[str], None],
        on_baselines: Callable[[], None],
    ):
        self.session = session
        self.on_loaded = on_loaded
        self.on_message = on_message
        self.on_baselines = on_baselines
        self.good = self._data_settings()  # the data settings of the last good load
        self.loaded = False
        self.generation = 0  # loads started: an older load gives way to a newer one

    def _data_settings(self) -> dict:
        return {k: getattr(self.session, k) for k in DATA_KEYS}

    def load_cached(self) -> bool:
        """Load now if the kernels are ready and the data and every baseline cached.

        Then the first page already shows the plots and "iteration 0": no second round of
        drawing after the page has rendered.  Otherwise (returns False) the caller loads
        with :meth:`load` once the page is shown, behind the busy indicator.
        """
        s = self.session
        # a first start compiles for a minute: send the page now, with a progress line
        runtime.wait_for_warm_up(0.0 if runtime.first_start() else WARM_WAIT)
        if not runtime.kernels_ready() or s.bundle is not None:
            return False
        bundle = peek_problem(**s.data_key())
        if bundle is None or any(
            peek_baselines(bundle, baseline_names(bundle, w)) is None for w in BASELINE_GROUPS
        ):
            return False
        try:
            s.load(bundle)
        except Exception:  # noqa: BLE001 - the asynchronous load reports it on the page
            return False
        self.good = self._data_settings()
        self.loaded = True
        self.on_loaded()
        runtime.log(f"{s.dataset} loaded from the caches and drawn with the page")
        return True

    async def load(self, notice: str) -> None:
        """Prepare the data of the store's current settings and load them (``notice``:
        what the store says once they are in); on failure, roll back (module docstring)."""
        s = self.session
        loop = asyncio.get_running_loop()
        s.begin_load()
        self.generation += 1
        mine = self.generation

        def work():
            bundle = s.fetch()
            get_baselines(bundle, baseline_names(bundle, CHEAP_BASELINES))
            if s.dataset in SMALL_DATASETS:  # seconds at most, cached on disk: the skyline now
                get_baselines(bundle, SLOW_BASELINES)
            return bundle

        t0 = time.perf_counter()
        try:
            while True:
                wanted = self._data_settings()
                bundle = await loop.run_in_executor(runtime.RUNTIME.data, work)
                runtime.log(f"{s.dataset} data ready in {time.perf_counter() - t0:.2f} s")
                if self.generation != mine:
                    return  # a newer load is under way; it installs the current settings
                if self._data_settings() == wanted:
                    break
                # the settings changed meanwhile and no load was started for them (the
                # first load: the store starts none before data are in place): prepare them
            s.load(bundle, notice=notice)
            previous, self.good = self.good, wanted
            self.loaded = True
            self.on_message("")
            # the settings that changed now are valid; the messages of values refused
            # earlier (a link's bad value, a reverted setting) stay beside their controls
            s.clear_errors(k for k in DATA_KEYS if wanted[k] != previous.get(k))
        except Exception as exc:  # noqa: BLE001
            await self._roll_back(exc)
            return
        finally:
            if self.generation == mine:  # (an older load leaves busy to the newer one)
                s.end_load()
        self.on_loaded()
        runtime.log(f"{s.dataset} loaded and drawn in {time.perf_counter() - t0:.2f} s")
        if not all(k in s.baselines for k in SLOW_BASELINES):
            # large data: the skyline logistic fits in a niced worker thread (cached on disk)
            try:
                res = await loop.run_in_executor(runtime.RUNTIME.slow, _slow_baselines, bundle)
            except Exception as exc:  # noqa: BLE001
                self.on_message(f"the logistic baselines failed: {error_message(exc)}")
                return
            if s.bundle is bundle:
                s.add_baselines(res)
                self.on_baselines()

    async def _roll_back(self, exc: Exception) -> None:
        """A failed load: the culprit setting back to its good value, the rest again."""
        s = self.session
        msg = error_message(exc)
        changed = [k for k in DATA_KEYS if getattr(s, k) != self.good.get(k)]
        # a failure caused by one setting (e.g. unknown features in a link) reverts that
        # one only; the other changed settings load again without it
        culprit = getattr(exc, "setting", None)
        rest = [k for k in changed if k != culprit] if culprit in changed else []
        if culprit in changed:
            changed = [culprit]
        # (the message beside the reverted controls, or the dataset's if none changed; the
        # notice "…: data are being prepared" goes)
        s.fail_load({k: self.good[k] for k in changed}, msg)
        self.on_message(msg)
        self.loaded = True
        if (s.bundle is None and changed) or rest:
            await self.load("")
