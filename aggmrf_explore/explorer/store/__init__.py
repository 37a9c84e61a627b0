"""The explorer's model side, free of Panel: one session's store and what it derives.

- ``store.py``: :class:`ExplorerSession`, the session store (settings as params with
  declared bounds, the problem, the release, the trainer); the only writer of its params;
- ``keys.py`` (the settings grouped by what a change invalidates), ``params.py`` (the
  params made from the settings' one declaration, and the cleaning of a proposed value),
  ``defaults.py`` (the default rule's values, what a dataset switch puts back, the
  trainer's settings), ``releases.py`` (the noisy release and its fallback);
- ``run_control.py``: a session's run control (slices, Steps waiting, rate, status line),
  a member of the store; ``frames.py``: the frames the views show, pure functions;
- ``problems.py`` and ``caches.py``: the data every session shares (problems, releases,
  baselines; the LRU cache, the upload registry, the disk cache);
- ``url.py`` and ``lesson.py``: settings, hidden controls and a lesson text read from a
  link, and written to one; ``escape.py``: text from users (links, uploads) made safe to
  show.
"""
