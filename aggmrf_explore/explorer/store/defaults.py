"""The store's defaults: the default rule's λ and α for a release, the hand-set settings a
dataset switch puts back, and the trainer's settings made from the store's.

Functions of the values they are given: they read a store (:class:`~.store.ExplorerSession`)
and never write it; the store applies what they return.
"""

from __future__ import annotations

from collections.abc import Iterable

from .keys import RULE_KEYS

__all__ = ["RESET_ON_SWITCH", "rule_values", "switch_defaults", "trainer_settings"]

# hand-set settings that return to their defaults on a dataset switch (unless keep_settings)
RESET_ON_SWITCH = ("n_gibbs", "train_seed", "data_seed", "noise_seed", "auto_defaults")


def rule_values(bundle, data, noise_aware: bool) -> dict:
    """The default rule's λ and α ({name: value} for each of ``RULE_KEYS``) for the tables
    of ``bundle`` (a ``ProblemBundle``) at the declared noise of the release ``data`` (an
    ``AggregatedData``; None: no release yet, noise-free): λ grows with the noise.
    ``noise_aware`` (MRF-N) counts only when the release is noisy."""
    from ...trainer_settings import default_settings, release_noise_sd

    sd = 0.0 if data is None else release_noise_sd(data)
    aware = bool(noise_aware and sd > 0)
    d = default_settings(bundle.layout, bundle.aggregated.n, sd, noise_aware=aware)
    return {k: getattr(d, k) for k in RULE_KEYS}


def switch_defaults(session, names: Iterable[str]) -> dict:
    """A dataset switch: the hand-set λ, α, n' and seeds that go back to their defaults (the
    rule, at the next load), except settings changed together with the dataset (``names``:
    a preset or a link); the triplet table goes off.  Returns {name: value} to apply."""
    names = set(names)
    values = {k: session.param[k].default for k in RESET_ON_SWITCH if k not in names}
    if "triples" not in names:
        values["triples"] = False
    return values


def trainer_settings(session):
    """The trainer's settings from the store's (``TrainerSettings``, validated).

    The test NLLH is evaluated every iteration on small problems, every 2–10 on large
    ones (scoring 16 000 Adult test records with 106 tables costs about a fifth of an
    iteration: every 6th keeps it near 3 % of the training time, and the NLLH curve, at
    ~100 it/s, still gets more points per second than the plot has refreshes).
    """
    from ...mrf import TrainerSettings

    s = session
    work = len(s.bundle.encoded.y_test) * s.bundle.layout.n_tables
    return TrainerSettings(
        n_gibbs=s.n_gibbs,
        lambda_mu=s.lambda_mu,
        lambda_theta=s.lambda_theta,
        step_mu=s.step_mu,
        step_theta=s.step_theta,
        gradient=s.gradient,
        precondition=s.precondition,
        noise_aware=s.noise_aware,
        seed=s.train_seed,
        eval_every=int(min(10, max(1, work // 250_000))),
    ).validate()
