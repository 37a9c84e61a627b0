"""``python -m aggmrf_explore.kernels``: compile the dense and hashed chains' kernels into
numba's cache and print where it is (the compile step of a course image: run it with
``NUMBA_CACHE_DIR`` set to the directory its users will have, :mod:`.cache`)."""

from __future__ import annotations

from . import warm_up
from .cache import cache_dir


def main() -> int:
    """Compile (or load) the kernels; returns the exit status."""
    warm_up(hashed=True)
    where = cache_dir()
    print(f"kernels compiled; numba's cache: {where if where else '(none: not cached)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
