"""Seeded θ/μ hashes of short runs: Adult (4 features), XOR, a hashed layout and MRF-N on a
Gaussian release.  A refactoring that must not change results prints the same lines before
and after (run it in each tree: ``PYTHONPATH=<tree> python benchmarks/seeded_hashes.py``).
"""

import hashlib
from dataclasses import replace

import numpy as np

from aggmrf_explore import privacy
from aggmrf_explore.experiment import prepare, train_mrf
from aggmrf_explore.mrf import PCDTrainer, default_settings
from aggmrf_explore.tables import TableLayout, aggregate


def h(tr) -> str:
    """The first 16 hex digits of sha256(θ bytes + μ bytes)."""
    data = np.ascontiguousarray(tr.theta).tobytes() + np.ascontiguousarray(tr.mu).tobytes()
    return hashlib.sha256(data).hexdigest()[:16]


out = {}
adult = prepare("adult", features=["age", "education", "sex", "hours-per-week"])
st = replace(default_settings(adult.layout, adult.aggregated.n), n_gibbs=2000, seed=3)
out["adult"] = h(train_mrf(adult, st, iterations=40, eval_every=10**9).trainer)
xor = prepare("xor", n=5000, seed=1)
st = replace(default_settings(xor.layout, xor.aggregated.n), n_gibbs=1000, seed=2)
out["xor"] = h(train_mrf(xor, st, iterations=60, eval_every=10**9).trainer)
enc = adult.encoded
lay = TableLayout.all_pairs(list(enc.layout().n_modalities), hash_sizes={(0, 1): 16})
agg = aggregate(enc.X_train, enc.y_train, lay)
st = replace(default_settings(lay, agg.n), n_gibbs=1500, seed=5)
tr = PCDTrainer(agg, st)
tr.fit(30)
out["hashed"] = h(tr)
mech = privacy.make_mechanism("gaussian", 1.0, 1e-7, adult.layout, "both", "analytic")
noisy = privacy.release(adult.aggregated, mech, 11)
st = replace(default_settings(adult.layout, noisy.n), n_gibbs=2000, seed=4, noise_aware=True)
out["mrfn"] = h(train_mrf(adult, st, iterations=30, data=noisy, eval_every=10**9).trainer)
for k, v in out.items():
    print(k, v)
