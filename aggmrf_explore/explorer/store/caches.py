"""The explorer's shared caches: an LRU cache, the upload registry and the disk cache.

Everything here is process-wide and read-only once computed, shared by every session of
a server (or notebook).  Nothing imports Panel: the session store and its tests run
without it.  (``pn.cache`` would fit the LRU role, but it hashes its arguments by
pickling them and needs Panel imported; the explorer's keys are small tuples and its
values large objects computed in worker threads, where this cache computes each value
exactly once even when several sessions ask for it at the same moment.)
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from ...errors import AggMRFError

__all__ = [
    "LockedCache",
    "UploadRegistry",
    "UPLOADS",
    "UPLOAD_MAX_BYTES",
    "UPLOAD_CHUNK_BYTES",
    "WEBSOCKET_MAX_MESSAGE_BYTES",
    "format_bytes",
    "cache_dir",
    "read_json",
    "write_json",
]

# Uploads.  The browser refuses a larger file before sending anything (the file picker
# knows this limit); the server refuses it again (a client can bypass the page).  The
# picker sends a file in chunks of UPLOAD_CHUNK_BYTES, far below the websocket's message
# limit (Bokeh's default, 20 MiB, which `panel serve --websocket-max-message-size` sets),
# so an upload never closes the connection.
UPLOAD_MAX_BYTES = 10 * 2**20
UPLOAD_CHUNK_BYTES = 2**20
WEBSOCKET_MAX_MESSAGE_BYTES = 20 * 2**20


class LockedCache:
    """A small LRU cache whose values are computed once even under concurrent requests.

    ``get(key, compute)`` returns the cached value or calls ``compute()`` (outside the
    cache-wide lock, under a per-key lock, so two sessions asking for the same key wait
    for one computation while other keys proceed).  At most ``maxsize`` values are kept.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict = {}

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            klock = self._key_locks.setdefault(key, threading.Lock())
        with klock:
            with self._lock:
                if key in self._data:
                    return self._data[key]
            value = compute()
            with self._lock:
                self._data[key] = value
                self._data.move_to_end(key)
                while len(self._data) > self.maxsize:
                    self._data.popitem(last=False)
                self._key_locks.pop(key, None)
            return value

    def peek(self, key: Hashable) -> Any | None:
        """The cached value, or None (computes nothing)."""
        with self._lock:
            return self._data.get(key)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


def format_bytes(n: float) -> str:
    """A byte count for people: "812 B", "3.4 KB", "30.0 MB" (powers of 1024)."""
    for unit in ("B", "KB", "MB"):
        if n < 1024 or unit == "MB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} MB"  # pragma: no cover


class UploadRegistry:
    """Uploaded CSV files (bytes and the file's own name) keyed by a content hash; the
    newest ``maxsize`` are kept, each at most ``max_bytes`` long."""

    def __init__(self, maxsize: int = 8, max_bytes: int = UPLOAD_MAX_BYTES) -> None:
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self._data: OrderedDict[str, tuple[str, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def register(self, data: bytes, name: str = "upload.csv") -> str:
        """Keep ``data`` (the file called ``name`` on the user's machine) and return its
        content hash (16 hex digits); refuses a file over ``max_bytes``."""
        if len(data) > self.max_bytes:
            raise AggMRFError(
                f"the file {name!r} is {format_bytes(len(data))}; the explorer takes CSV files "
                f"up to {format_bytes(self.max_bytes)}: keep fewer rows or columns, or use the "
                "command line (aggmrf-explore aggregate)."
            )
        h = hashlib.sha256(data).hexdigest()[:16]
        with self._lock:
            self._data[h] = (str(name), data)
            self._data.move_to_end(h)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return h

    def get(self, upload_hash: str) -> bytes | None:
        """The bytes of an upload, or None if unknown (or evicted)."""
        with self._lock:
            item = self._data.get(upload_hash)
        return None if item is None else item[1]

    def name(self, upload_hash: str) -> str:
        """The file name the user uploaded (never a server path); "" if unknown."""
        with self._lock:
            item = self._data.get(upload_hash)
        return "" if item is None else item[0]

    def columns(self, upload_hash: str) -> list[str]:
        """Column names of an uploaded CSV (header line, ',' or ';' separated)."""
        data = self.get(upload_hash)
        if data is None:
            raise AggMRFError(
                "the uploaded file is gone from the server's memory; upload it again."
            )
        head = data.decode("utf-8", errors="replace").splitlines()[:1]
        if not head:
            raise AggMRFError("the uploaded file is empty; upload a CSV with a header line.")
        sep = ";" if head[0].count(";") > head[0].count(",") else ","
        return [c.strip() for c in next(csv.reader([head[0]], delimiter=sep))]


UPLOADS = UploadRegistry(8)  # shared by the sessions of the process


def cache_dir() -> Path:
    """The explorer's disk cache: ``$AGGMRF_CACHE_DIR`` or ``$XDG_CACHE_HOME/aggmrf_explore``."""
    base = os.environ.get("AGGMRF_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "aggmrf_explore"
    )
    return Path(base)


def read_json(path: Path) -> Any | None:
    """The JSON content of a cache file, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path, content: Any) -> bool:
    """Write a cache file safely (``files.write_text``: an exclusive temporary file with an
    unpredictable name, renamed; never through a link); False if it failed."""
    from ...errors import AggMRFError
    from ...files import write_text

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(content), "cache file")
    except (AggMRFError, OSError, TypeError, ValueError):
        return False
    return True
