"""The explorer store's settings, grouped by what a change to them invalidates: new data,
a new noisy release, a new trainer, or a live change of the running trainer; ``URL_KEYS``
are every setting a page link holds."""

__all__ = [
    "DATA_KEYS",
    "NOISE_KEYS",
    "TRAINER_KEYS",
    "RULE_KEYS",
    "LIVE_KEYS",
    "VIEW_KEYS",
    "URL_KEYS",
]

DATA_KEYS = tuple("dataset n_samples data_seed features singles pairs triples label_column".split())
NOISE_KEYS = ("mechanism", "epsilon", "delta", "accounting", "calibration", "noise_seed")
TRAINER_KEYS = ("n_gibbs", "noise_aware", "train_seed")
RULE_KEYS = ("lambda_mu", "lambda_theta", "step_mu", "step_theta")  # the default rule sets them
LIVE_KEYS = (*RULE_KEYS, "gradient", "precondition")
VIEW_KEYS = ("auto_defaults", "keep_settings", "iters_per_tick", "table")
URL_KEYS = (*DATA_KEYS, *NOISE_KEYS, *TRAINER_KEYS, *LIVE_KEYS, *VIEW_KEYS)
