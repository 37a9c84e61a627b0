"""Steps of a PCD trainer run in a worker process: the trainer's state goes there and back.

Why.  numba's kernels release the GIL, but a training thread hands it back and forth tens
of times per iteration; in a server whose event loop also wants it, the threads wait for
it more than they train (docs/explorer.md, "What kept the second core idle").  A worker
process has a GIL of its own.

How.  :class:`TrainerWorker` starts ``python -m aggmrf_explore.trainer_worker`` (a child
that ends with its parent) and talks to it over two pipes, one framed message at a time.
``worker.run_steps(trainer, k, box)`` does what ``trainer.step(k, callbacks=[box])`` does,
with the same numbers bit for bit.  Only values cross, never the trainer object:

1. the first time a worker sees a trainer, its :class:`TrainerRecipe` (the data, the
   settings it was built with, the held-out records) goes with the slice, and the worker
   builds its own copy of the trainer from it (kept until the trainer is gone); then, with
   every slice, the trainer's state (``trainer.state()``, a
   :class:`~aggmrf_explore.mrf.TrainerState` of settings, arrays and counters, and the
   chain).  The *shared parts* in them (``trainer.shared_parts()``: the data, layout,
   held-out records, the chain's structure and scratch buffers) go to the worker once
   and stay there under a token;
2. the worker restores its copy to that state, steps it with a
   :class:`~aggmrf_explore.callbacks.TimeBox` of the same budget (``box.stop()``, polled
   here, reaches it as SIGUSR1) and sends back the copy's state (shared parts again as
   tokens) and the new iterations' statistics;
3. ``trainer.restore(state, statistics)`` continues from that state and appends the
   statistics to the history; ``box.stats`` gets them too.  A divergence's state (the last
   good one) is restored, then the divergence raised as in ``trainer.step``; any other
   failure leaves the trainer as it was and is raised.

A trainer that is garbage-collected is forgotten by the workers (with the next message).
If the child cannot start or dies, ``run_steps`` raises :class:`WorkerLost` and the
caller trains in its own process (the trainer is unchanged).
"""

from __future__ import annotations

import io
import itertools
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import weakref
from multiprocessing.connection import Connection
from typing import NamedTuple

from .callbacks import TimeBox
from .errors import AggMRFError, DivergenceError

__all__ = [
    "TrainerWorker",
    "TrainerRecipe",
    "recipe_of",
    "rebuild",
    "SharedParts",
    "WorkerLost",
    "worker_main",
    "end_with_parent",
    "ignore_interrupts",
    "trim_memory",
]

READY = b"ready"


class WorkerLost(AggMRFError):
    """The worker process is not there (not started yet, failed, or died)."""


class TrainerRecipe(NamedTuple):
    """What a worker builds its copy of a trainer from (once per trainer; its state comes
    with every slice): ``data`` (the ``AggregatedData`` it trains on), ``settings`` (the
    ``TrainerSettings`` it was built with: ``trainer.initial_settings``), ``X_eval`` and
    ``y_eval`` (its held-out records and labels; None without) and ``live`` (its held-out
    monitor also scores the last iterate)."""

    data: object
    settings: object
    X_eval: object
    y_eval: object
    live: bool


def recipe_of(trainer) -> TrainerRecipe:
    """The recipe of a :class:`~aggmrf_explore.mrf.PCDTrainer`."""
    ho = trainer.held_out
    X, y = (None, None) if ho is None else (ho.X, ho.y)
    return TrainerRecipe(trainer.data, trainer.initial_settings, X, y, bool(ho and ho.live))


def _chain_from_state(*args) -> None:
    """A rebuilt trainer's chain factory: its chain comes with each state (``restore``)."""
    return None


def rebuild(recipe: TrainerRecipe):
    """A trainer built from ``recipe`` (the same fixed parts as the original, bit for bit),
    without a chain: :meth:`~aggmrf_explore.mrf.PCDTrainer.restore` gives it one."""
    from .mrf import PCDTrainer

    r = recipe
    trainer = PCDTrainer(r.data, r.settings, r.X_eval, r.y_eval, chain_factory=_chain_from_state)
    if trainer.held_out is not None:
        trainer.held_out.live = r.live
    return trainer


class SharedParts:
    """The names (tokens) of the trainers and shared parts sent to worker processes, and
    which of them were garbage-collected since (their workers drop their copies).

    One per :class:`~aggmrf_explore.explorer.server.scheduler.TrainingPool` (shared by its
    workers: an array several trainers share goes to each worker once), or one per
    :class:`TrainerWorker` made alone.
    """

    def __init__(self) -> None:
        self._keys: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # trainer → key
        self._objects: dict[int, tuple[weakref.ref, str]] = {}  # id(part) → (ref, token)
        self._pinned: dict[str, dict[str, object]] = {}  # key → its parts taking no weakref
        self.dead: set[str] = set()  # tokens of trainers and parts collected since
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def key(self, trainer) -> str:
        """A name of ``trainer`` for the workers' caches (forgotten once it is gone)."""
        with self._lock:
            key = self._keys.get(trainer)
            if key is None:
                key = self._keys[trainer] = f"t{next(self._counter)}"
                self._pinned[key] = {}
                weakref.finalize(trainer, self._trainer_gone, key)
            return key

    def _trainer_gone(self, key: str) -> None:
        self._pinned.pop(key, None)
        self.dead.add(key)

    def token(self, obj, key: str, name: str) -> str:
        """The token of a shared part: its own while it lives (an array several trainers
        share, e.g. the held-out records, goes to a worker once), else ``key:name`` (for
        parts that take no weak reference, like named tuples: kept alive with their
        trainer, so that their id stays their own)."""
        try:
            with self._lock:
                hit = self._objects.get(id(obj))
                if hit is not None and hit[0]() is obj:
                    return hit[1]
                token = f"o{next(self._counter)}"
                ident = id(obj)
                ref = weakref.ref(obj, lambda _, i=ident, t=token: self._gone(i, t))
                self._objects[ident] = (ref, token)
                return token
        except TypeError:
            token = f"{key}:{name}:{id(obj)}"
            self._pinned.setdefault(key, {})[token] = obj
            return token

    def _gone(self, ident: int, token: str) -> None:
        hit = self._objects.get(ident)
        if hit is not None and hit[1] == token:
            del self._objects[ident]
        self.dead.add(token)


def _owner(token: str) -> str:
    """The cache entry a token belongs to: its trainer's key, or itself."""
    return token.split(":", 1)[0]


class _RefPickler(pickle.Pickler):
    """Pickles objects whose id is in ``refs`` as their token (``persistent_id``)."""

    def __init__(self, file, refs: dict[int, str]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.refs = refs
        self.used: set[str] = set()

    def persistent_id(self, obj):
        token = self.refs.get(id(obj))
        if token is not None:
            self.used.add(token)
        return token


class _RefUnpickler(pickle.Unpickler):
    """Unpickles tokens as the objects of ``objects``."""

    def __init__(self, file, objects: dict[str, object]) -> None:
        super().__init__(file)
        self.objects = objects

    def persistent_load(self, token):
        try:
            return self.objects[token]
        except KeyError:
            raise pickle.UnpicklingError(f"unknown shared part {token!r}") from None


def _dumps(obj, refs: dict[int, str]) -> tuple[bytes, set[str]]:
    buf = io.BytesIO()
    pickler = _RefPickler(buf, refs)
    pickler.dump(obj)
    return buf.getvalue(), pickler.used


def _loads(data: bytes, objects: dict[str, object]):
    return _RefUnpickler(io.BytesIO(data), objects).load()


class TrainerWorker:
    """One worker process that steps trainers for the calling threads, one at a time.

    ``nice``: the child's niceness (the server's event loop comes first).  The child is
    started at once; it is ready (``ready()``) once it has loaded the compiled kernels,
    about a second.  ``close()`` ends it.
    """

    def __init__(self, nice: int = 0, parts: SharedParts | None = None) -> None:
        self.parts = parts if parts is not None else SharedParts()
        self._lock = threading.Lock()
        self.holding: set[str] = set()  # the tokens of the parts the child holds
        self._ready = False
        self.lost = False
        self.closed = False  # by close(): not a failure
        self.retire = False  # to be closed by its thread once idle (nobody trains)
        self.last_used = time.monotonic()  # when the last steps ended
        r_child, w_parent = os.pipe()
        r_parent, w_child = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "aggmrf_explore.trainer_worker",
                    str(r_child),
                    str(w_child),
                    str(nice),
                ],
                pass_fds=(r_child, w_child),
                stdin=subprocess.DEVNULL,
                env={**os.environ, "AGGMRF_WORKER": "1"},
                # a Ctrl-C in the terminal is the server's: ignored from before the child's
                # imports (an ignored SIGINT survives exec, and Python keeps it ignored)
                preexec_fn=ignore_interrupts if os.name == "posix" else None,
            )
        finally:
            os.close(r_child)
            os.close(w_child)
        self._send = Connection(w_parent, readable=False)
        self._recv = Connection(r_parent, writable=False)

    def ready(self) -> bool:
        """True once the child has said it is ready (never blocks)."""
        if self._ready or self.lost:
            return self._ready and not self.lost
        try:
            if self._recv.poll(0) and self._recv.recv_bytes() == READY:
                self._ready = True
        except (EOFError, OSError):
            self.lost = True
        return self._ready

    def wait_ready(self, timeout: float = 60.0) -> bool:
        """Wait up to ``timeout`` s for the child to be ready; True if it is."""
        end = time.monotonic() + timeout
        while not self.ready() and not self.lost and time.monotonic() < end:
            time.sleep(0.02)
        return self.ready()

    def run_steps(self, trainer, k: int, box: TimeBox) -> float:
        """``trainer.step(k, callbacks=[box])`` in the child (module docstring); returns
        the CPU seconds the child spent on it (what the training pool's fair share
        counts); raises :class:`WorkerLost` (trainer unchanged) if the child is not ready
        or dies."""
        if not self.ready():
            raise WorkerLost("the training worker is not ready.")
        with self._lock:
            try:
                return self._run(trainer, int(k), box)
            finally:
                self.last_used = time.monotonic()

    def _run(self, trainer, k: int, box: TimeBox) -> float:
        key = self.parts.key(trainer)
        shared = trainer.shared_parts().items()
        parts = {self.parts.token(obj, key, name): obj for name, obj in shared}
        refs = {id(obj): token for token, obj in parts.items()}
        forget = self._dead()
        built = key in self.holding  # the child holds a copy built from the recipe
        sent, used = _dumps((None if built else recipe_of(trainer), trainer.state()), refs)
        new = {token: parts[token] for token in used - self.holding}
        budget = None if box.budget is None else box.budget - (time.perf_counter() - box.t0)
        # (what a new part holds of parts the child has, e.g. the layout of a new release,
        # goes as their tokens: the child's copies share them)
        new_parts, _ = _dumps(new, {i: t for i, t in refs.items() if t in self.holding})
        message = pickle.dumps(
            ("step", forget, new_parts, key, sent, k, budget), protocol=pickle.HIGHEST_PROTOCOL
        )
        try:
            self._send.send_bytes(message)
            self.holding.update(new)
            while not self._recv.poll(0.02):
                if box.stop is not None and box.stop():
                    os.kill(self.proc.pid, signal.SIGUSR1)
                    box.stop = None  # (once)
                if self.proc.poll() is not None:
                    raise EOFError
            reply = self._recv.recv_bytes()
        except (EOFError, OSError) as exc:
            self.lost = True
            raise WorkerLost(f"the training worker stopped ({exc or 'exit'}).") from None
        kind, payload, cpu = pickle.loads(reply)
        if kind == "error":
            raise payload
        self.holding.add(key)  # (built: the child keeps its copy until the trainer is gone)
        state, new, error = _loads(payload, parts)
        trainer.restore(state, new)
        box.stats.extend(new)
        if error is not None:
            raise DivergenceError(error)
        return cpu

    def _dead(self) -> list[str]:
        """What the child holds of trainers and parts gone since (now dropped here)."""
        gone = {t for t in self.holding if _owner(t) in self.parts.dead}
        self.holding -= gone
        return sorted({_owner(t) for t in gone})

    def forget_dead(self) -> None:
        """Tell the child to drop what it holds of trainers gone since (their memory)."""
        if not self.ready():
            return
        with self._lock:
            dead = self._dead()
            if dead:
                try:
                    self._send.send_bytes(pickle.dumps(("forget", dead)))
                except OSError:
                    self.lost = True

    def close_if_idle(self) -> bool:
        """End the child unless it is stepping a trainer now; True if it was ended."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self.close()
        finally:
            self._lock.release()
        return True

    def close(self) -> None:
        """End the child (it also ends by itself when this process ends)."""
        self.lost = self.closed = True
        for conn in (self._send, self._recv):
            try:
                conn.close()
            except OSError:
                pass
        try:
            self.proc.terminate()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass


# ---------------------------------------------------------------------------- the child
def ignore_interrupts() -> None:
    """In a child, before it runs: SIGINT ignored (a Ctrl-C reaches the whole process group;
    the server stops its children itself, and a child interrupted in its imports would
    print a traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def end_with_parent() -> None:
    """Linux: the system ends the calling process when its parent ends (a child that
    never outlives the server; nothing elsewhere)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _take_leftovers(nice: int) -> None:
    """Run at niceness ``nice`` and, on Linux, in a session of its own whose scheduling
    group ("autogroup") has that niceness: Linux weighs each session as one unit, so a
    thread's nice value alone counts only against its own session's threads.  The worker
    then trains on what the server's event loop and everything else on the machine leave."""
    if hasattr(os, "setsid"):
        try:
            os.setsid()
        except OSError:
            pass
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:
        pass  # no autogroups: the nice value below is enough
    try:  # (never less nice than it is: the parent's thread may be niced already)
        os.setpriority(os.PRIO_PROCESS, 0, max(nice, os.getpriority(os.PRIO_PROCESS, 0)))
    except (AttributeError, OSError):
        pass


def worker_main(read_fd: int, write_fd: int, nice: int = 0) -> None:
    """The child's loop: load the kernels, say ready, then step what it is sent."""
    end_with_parent()
    _take_leftovers(nice)
    stop = [False]  # SIGUSR1 sets it: the slice under way ends after its iteration
    signal.signal(signal.SIGUSR1, lambda signum, frame: stop.__setitem__(0, True))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal is the server's
    recv, send = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    from .kernels import set_threads, warm_up

    warm_up()  # numba's on-disk cache (the parent compiled it): about a second
    set_threads(1)  # one core per worker: the parent runs as many workers as it wants cores
    send.send_bytes(READY)
    objects: dict[str, object] = {}  # token -> shared part
    refs: dict[int, str] = {}  # id(shared part) -> token (to send them back as tokens)
    trainers: dict[str, object] = {}  # trainer key -> the copy built from its recipe
    while True:
        try:
            message = recv.recv_bytes()
        except (EOFError, OSError):
            return
        kind, forget, *rest = pickle.loads(message)
        for token in [t for t in objects if _owner(t) in forget]:
            refs.pop(id(objects.pop(token)), None)
        for key in forget:
            trainers.pop(key, None)
        if kind == "forget":
            trim_memory()  # (their arrays back to the system)
            continue
        new, key, sent, k, budget = rest
        stop[0] = False
        try:
            for token, obj in _loads(new, objects).items():
                objects[token] = obj
                refs[id(obj)] = token
            recipe, state = _loads(sent, objects)
            cpu0 = time.process_time()
            if recipe is not None:
                trainers[key] = rebuild(recipe)
            trainer = trainers[key]
            trainer.restore(state)
            trainer.history.clear()  # (the parent keeps the history; this slice's goes back)
            box = TimeBox(budget, stop=lambda: stop[0])
            error = None
            try:
                trainer.step(k, callbacks=[box])
            except DivergenceError as exc:
                error = str(exc)
            payload, _ = _dumps((trainer.state(), list(trainer.history), error), refs)
            cpu = time.process_time() - cpu0
            reply = pickle.dumps(("ok", payload, cpu), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
            reply = _error_reply(exc)
        send.send_bytes(reply)


def trim_memory() -> None:
    """Hand the process's freed memory back to the system (glibc; nothing elsewhere)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _error_reply(exc: Exception) -> bytes:
    try:
        return pickle.dumps(("error", exc, 0.0), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - an exception that does not pickle
        wrapped = AggMRFError(f"training worker: {type(exc).__name__}: {exc}")
        return pickle.dumps(("error", wrapped, 0.0))


if __name__ == "__main__":
    worker_main(*(int(a) for a in sys.argv[1:4]))
