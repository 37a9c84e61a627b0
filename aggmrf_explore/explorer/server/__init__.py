"""The explorer's server: one process serving a class, its runtime and its training pool.

- ``serve.py``: the served page (``explorer_document``, ``build_app``);
- ``runtime.py``: what the process shares between sessions, one object (kernel warm-up,
  the pools, the open sessions, memory); ``scheduler.py``: who trains next (the pools of
  threads and worker processes, each session's run loop); ``loader.py``: a store's data
  prepared off the event loop;
- ``one_process.py`` (one process, one event loop), ``environment.py`` (the environment
  variables it reads), ``closed_tabs.py`` (a closed tab's last writes), ``trace.py`` (what
  the server tells its operator, and its timing trace).
"""
