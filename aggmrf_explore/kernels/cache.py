"""Where numba caches the compiled kernels, and what happens when nowhere is writable.

The kernels are ``@njit(cache=True)``: numba looks for a writable cache directory when each
kernel is *defined*, at import, in this order: ``$NUMBA_CACHE_DIR``, the package's own
``__pycache__`` directories, then the user's cache directory (``~/.cache/numba``).  When
none is writable (a course image run by an unprivileged user with a read-only home), numba
raises "cannot cache function …: no locator available" at import, and no command runs.

:func:`set_up` runs before any kernel is defined (:mod:`aggmrf_explore.kernels` calls it
first) and asks numba's own locators whether one of them can cache.  If none can, it sets
``NUMBA_CACHE_DIR`` (numba's config and the environment, so worker processes inherit it)
to a private directory under the system's temporary directory
(``aggmrf-numba-cache-<uid>``, mode 0700, refused if it is a link or not ours; else a fresh
``mkdtemp``) and prints ONE ``warning:`` line on stderr saying what it costs (the kernels
are compiled again whenever that directory is cleaned: about a minute of CPU before the
first training, 79 s for ``run --dataset toy`` on a busy 2-core machine) and how to fix it
(``NUMBA_CACHE_DIR`` pointing at a directory the user can write, which a course image can
fill when it is built with ``NUMBA_CACHE_DIR=DIR python -m aggmrf_explore.kernels``:
numba only uses a cache directory it can write, so compiling into the read-only package
helps no one else).  If not
even a temporary directory can be written, the kernels are compiled without a cache
(numba's ``NullCache``), with the same one warning.

``python -m aggmrf_explore.kernels`` (:mod:`.__main__`) compiles the dense and hashed chains' kernels
into the cache numba finds (with ``NUMBA_CACHE_DIR``: the compile step of a course image)
and prints where.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

__all__ = ["set_up", "cache_dir", "FALLBACK"]

FALLBACK: dict[str, str | None] = {"dir": None, "why": None}  # what set_up chose, if anything
_KERNEL_FILE = str(Path(__file__).resolve().with_name("gibbs.py"))


def _probe() -> None:
    """(stands for a kernel when asking numba's locators where it would cache)"""


def _numba_locator():
    """numba's locator for a kernel of this package, or None when no cache is writable."""
    from numba.core import caching

    for cls in (
        caching.UserProvidedCacheLocator,
        caching.InTreeCacheLocator,
        caching.UserWideCacheLocator,
    ):
        loc = cls.from_function(_probe, _KERNEL_FILE)
        if loc is not None:
            return loc
    return None


def cache_dir() -> Path | None:
    """The directory numba caches this package's kernels in (None: no cache)."""
    if FALLBACK["why"] == "none":
        return None
    loc = _numba_locator()
    return Path(loc.get_cache_path()) if loc is not None else None


def _private_dir(path: Path) -> bool:
    """``path`` is (made) a directory of ours, mode 0700, not a link, writable."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(path)
        if (
            not stat.S_ISDIR(st.st_mode)
            or st.st_uid != os.getuid()
            or st.st_mode & 0o077
            or not os.access(path, os.W_OK | os.X_OK)
        ):
            return False
        tempfile.TemporaryFile(dir=path).close()
        return True
    except OSError:
        return False


def _fallback_dir() -> Path | None:
    """A private cache directory under the system's temporary directory, or None."""
    try:
        tmp = Path(tempfile.gettempdir())
    except (OSError, FileNotFoundError):
        return None
    fixed = tmp / f"aggmrf-numba-cache-{os.getuid()}"
    if _private_dir(fixed):
        return fixed
    try:
        return Path(tempfile.mkdtemp(prefix="aggmrf-numba-cache-"))
    except OSError:
        return None


def _no_cache() -> None:
    """Compile without caching: every ``cache=True`` kernel gets numba's NullCache."""
    from numba.core import caching, dispatcher

    def enable_caching(self) -> None:
        self._cache = caching.NullCache()

    dispatcher.Dispatcher.enable_caching = enable_caching


def set_up() -> None:
    """Make sure defining the kernels cannot fail for want of a writable cache (module
    docstring); prints one ``warning:`` line when it has to fall back.  Idempotent."""
    if FALLBACK["why"] is not None:
        return
    import numba

    if _numba_locator() is not None:
        FALLBACK["why"] = "found"
        return
    given = os.environ.get("NUMBA_CACHE_DIR")
    where = (
        f"NUMBA_CACHE_DIR={given!r}"
        if given
        else f"the package directory ({Path(_KERNEL_FILE).parent}) or your home's cache"
    )
    fix = (
        "set NUMBA_CACHE_DIR to a directory you can write (a course image can fill it when "
        "it is built: NUMBA_CACHE_DIR=DIR python -m aggmrf_explore.kernels)"
    )
    path = _fallback_dir()
    if path is not None:
        os.environ["NUMBA_CACHE_DIR"] = str(path)
        numba.config.CACHE_DIR = str(path)
        if _numba_locator() is not None:
            FALLBACK.update(dir=str(path), why="temporary")
            print(
                f"warning: numba cannot cache the compiled kernels in {where} (not writable); "
                f"caching them in {path} instead, which the system may clean: then each start "
                f"compiles again (about a minute of CPU before training) — {fix}.",
                file=sys.stderr,
            )
            return
    _no_cache()
    FALLBACK.update(dir=None, why="none")
    print(
        f"warning: numba cannot cache the compiled kernels in {where} nor in a temporary "
        "directory (not writable); compiling them in every process instead (about a minute "
        f"of CPU before each first training) — {fix}.",
        file=sys.stderr,
    )
