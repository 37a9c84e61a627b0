"""Choosing what to train with: λθ, the iteration count, and the records a result needs.

* :mod:`.scores` — a model scored on held-out tables, without records: aggregated
  (cell-level) NLLH and cross-fit NLLH against a reference model;
* :mod:`.releases` — sub-releases for validation: tables left out, thinned halves;
* :mod:`.lambda_theta` — λθ chosen from the tables alone: the grid, warm-started paths,
  split-release and leave-tables-out validation, ``choose_lambda_theta``;
* :mod:`.sample` — λθ and the iteration count chosen on a small labelled sample,
  ``choose_on_sample``;
* :mod:`.sample_size` — the records local privacy needs to match central privacy.

The package imports none of its modules: import the one you need (``sample_size`` is light,
the others load the trainer).
"""
