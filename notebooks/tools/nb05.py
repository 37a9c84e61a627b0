from nbtools import answer, code, md, write

NAME = "05_reproducing_the_paper.ipynb"

cells = [
    md("""
# 5. Reproducing the paper: Adult and Bank marketing

**Learning goals.** After this notebook you can

1. run the whole pipeline on a real dataset: encode (deciles for numeric features), aggregate into all
   single and pair tables, train the MRF from the tables only, evaluate on held-out records;
2. compare it with the paper's baselines (Table 4): the logistic regression with the same features
   trained on the records (the *skyline*), naive Bayes from the single tables, and the best single
   pair table (B2f);
3. judge how far a quick run is from the paper's full-size one.

The quick version (default) subsamples 5 000 training records and trains 800 iterations (long enough
for both datasets to level off: Bank is still climbing at 300), so that the test suite runs it in well
under a minute. Set `FULL_RUN = True` (or the environment variable
`AGGMRF_FULL_RUN=1`) for the paper-size runs: all training records, $n' = 10\\,000$ Gibbs samples,
and the default iteration count $\\max(600, \\lceil 6/\\alpha_\\theta \\rceil)$: 630 on Adult and 1 260 on
Bank (several minutes per dataset).
"""),
    "SETUP",
    code("""
import os

FULL_RUN = False
FULL_RUN = FULL_RUN or os.environ.get("AGGMRF_FULL_RUN", "") not in ("", "0")

if FULL_RUN:
    config = dict(n=None, n_gibbs=10_000, iterations=None, eval_every=25)  # None: the default rule
else:
    config = dict(n=5000, n_gibbs=2000, iterations=800, eval_every=25)
print("full run" if FULL_RUN else "quick run", config)
"""),
    md("""
## 5.1 The pipeline, one dataset at a time

`experiment.prepare` loads the bundled data, encodes every feature on the training split (numeric
features in deciles, rare categories pooled into "(other)"), and aggregates all single and pair
tables. The trainer then sees only `problem.aggregated`.
"""),
    code(
        """
from aggmrf_explore import experiment, mrf
from aggmrf_explore.baselines import fit_baselines
from aggmrf_explore.explorer import convergence_figure

problems = {name: experiment.prepare(name, n=config["n"], seed=0) for name in ("adult", "bank")}
for name, p in problems.items():
    n_states = np.prod(np.array(p.layout.n_modalities, dtype=float))   # every combination of feature values
    print(f"{name:6s} train {p.n_train:6d}  test {p.n_test:6d}  features {p.layout.n_features:2d}  "
          f"released tables T = {p.layout.n_released_tables:3d}  rows K = {p.layout.K}  feature states {n_states:.2g}")
""",
        check=True,
    ),
    md("""
Train the MRF with the package's default rule ($\\alpha_\\theta = 1/T$, $\\alpha_\\mu$ up to $5/T$,
$\\lambda_\\mu = 1$, $\\lambda_\\theta = \\min(T/2, 50)$, which is 50 on both: $T$ = 105 and 210), and fit the baselines (their L2 penalty and the naive
Bayes temperature are chosen on a validation split of the training records, never on the test set):
"""),
    code("""
results, histories = {}, {}
for name, p in problems.items():
    settings = mrf.default_settings(p.layout, p.aggregated.n, n_gibbs=config["n_gibbs"])
    run = experiment.train_mrf(p, settings, config["iterations"], eval_every=config["eval_every"])
    base = fit_baselines(p)
    histories[name] = run.trainer.history_frame()
    results[name] = {"logistic (skyline)": base["logistic_pairs"].nllh_test, "MRF": run.nllh_test,
                     "naive Bayes": base["naive_bayes"].nllh_test, "best pair (B2f)": base["best_pair"].nllh_test}
ours = pd.DataFrame(results).T
paper = pd.DataFrame({"logistic (skyline)": [0.421, 0.427], "MRF": [0.416, 0.421],
                      "naive Bayes": [0.213, 0.189], "best pair (B2f)": [0.297, 0.318]},
                     index=["adult", "bank"])
pd.concat({"this run": ours, "paper, Table 4": paper}, axis=1).round(3)
"""),
    md("""
The checked summary. The baselines are deterministic (fixed seeds, L-BFGS), and so is the MRF for its
seed; the trainer's claims are checked with tolerances, so a broken trainer fails this cell: on Adult
the MRF, which never saw a record, lands within 0.02 of the skyline; on both it beats naive Bayes, and
the Bank run has levelled off (its NLLH moves by less than 0.003 over the last 200 iterations). On the 5 000-record Bank
subsample the best single pair table is unusually strong (it contains `duration`, the call length,
the strongest single predictor), and the short quick run of the MRF does not always beat it; the full
run does (see the paper's Table 4).
"""),
    code(
        """
print(ours.drop(columns="MRF").round(2).to_string())
for name, r in ours.iterrows():
    print(f"{name}: skyline − MRF < 0.05: {r['logistic (skyline)'] - r['MRF'] < 0.05}; "
          f"MRF > naive Bayes: {r['MRF'] > r['naive Bayes']}")
if not FULL_RUN:
    print("adult: |MRF − skyline| < 0.02:", abs(ours.loc["adult", "MRF"] - ours.loc["adult", "logistic (skyline)"]) < 0.02)
    last = histories["bank"].dropna(subset=["nllh_eval"]).set_index("iteration")["nllh_eval"]
    print("bank: levelled off (|NLLH(800) − NLLH(600)| < 0.003):", abs(last.loc[800] - last.loc[600]) < 0.003)
""",
        check=True,
    ),
    code("""
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, name in zip(axes, ours.index):
    x = np.arange(len(ours.columns))
    ax.bar(x - 0.2, ours.loc[name], width=0.4, label="this run")
    ax.bar(x + 0.2, paper.loc[name], width=0.4, label="paper, Table 4", color="0.6")
    ax.set_xticks(x, ours.columns, rotation=15)
    ax.set_ylabel("test NLLH (higher is better)")
    ax.set_title(f"{name}: models from tables vs the skyline")
    ax.set_ylim(0, 0.55)
    ax.legend(loc="upper center", ncol=2)
plt.show()
"""),
    md("""
How the MRF got there (held-out NLLH every few iterations; the dashed line is the skyline):
"""),
    code("""
for name, h in histories.items():
    display(convergence_figure(h, references={"logistic skyline": ours.loc[name, "logistic (skyline)"]},
                               title=f"{name}: PCD training, n' = {config['n_gibbs']}", figsize=(9, 3.2)))
"""),
    md("""
**Quick vs full.** With 5 000 training records the skyline itself is lower than the paper's (fewer
records per pair cell), and naive Bayes is relatively stronger (the tempered version here is a better
baseline than plain naive Bayes). The full run (`AGGMRF_FULL_RUN=1`) uses all records and the paper's
$n' = 10\\,000$, as in the paper; it takes several minutes per dataset and is not run by the test
suite, so compare its numbers with Table 4 yourself (exercise 1).

## Exercises

1. Run the full version for Adult only and compare with Table 4.
2. Drop the pair tables (`experiment.prepare("adult", pairs=False, n=5000)`). What does the MRF become,
   and how does its NLLH compare with the naive Bayes baseline?
3. The MRF's training time does not depend on $n$ once the tables are computed. Check it by timing
   the trainer on `n=5000` and `n=None` with the same $n'$.

(Each answer is in a collapsed block below; "Run All" does not open it.)
"""),
    answer("""
**1.** Set `FULL_RUN = True` in the first cell (or `AGGMRF_FULL_RUN=1`) and run the notebook: several minutes
per dataset. Compare the "this run" columns with the paper's; the skyline and the MRF move up with
all the records (more records per pair cell), naive Bayes much less.
"""),
    answer(
        """
**2.** With single tables only, the max-ent MRF *is* naive Bayes (notebook 1, §1.6), i.e. the *untempered*
one, whose log-odds double-count correlated features. The baseline here is tempered, so it does better:
""",
        """
singles = experiment.prepare("adult", pairs=False, n=5000, seed=0)
run1 = experiment.train_mrf(singles, mrf.default_settings(singles.layout, singles.aggregated.n, n_gibbs=1000), 200, eval_every=200)
print("MRF on single tables:", round(run1.nllh_test, 3), " tempered naive Bayes:", round(ours.loc["adult", "naive Bayes"], 3))
""",
    ),
    answer(
        """
**3.** One iteration is a Gibbs sweep of the $n'$ samples plus a pass over the $K$ rows: $O(n' \\times T)$; the records
are never touched after aggregation. Timed on 50 iterations, 5 000 records and all 32 561 take about the
same time:
""",
        """
import time

for n in (5000, None):
    p = experiment.prepare("adult", n=n, seed=0)
    tr = mrf.PCDTrainer(p.aggregated, mrf.default_settings(p.layout, p.aggregated.n, n_gibbs=2000, eval_every=50))
    t0 = time.perf_counter()
    tr.step(50)
    print(f"n = {p.n_train:6d}: {time.perf_counter() - t0:.2f} s for 50 iterations")
""",
    ),
]

if __name__ == "__main__":
    print(write(NAME, cells))
