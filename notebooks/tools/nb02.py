from nbtools import answer, code, md, write

NAME = "02_training_pcd.ipynb"

cells = [
    md("""
# 2. Training the MRF with persistent contrastive divergence

**Learning goals.** After this notebook you can

1. write the Gibbs conditional $P(X_f \\mid x_{-f}, y)$ of the max-ent MRF and check it against brute force;
2. run the paper's training loop (Algorithm 1: persistent contrastive divergence, PCD) and read its
   convergence: the model's expected tables $\\hat d$ approach the data $d$ down to a Monte-Carlo floor;
3. explain the paper's three practical choices and see their effect: the *rescaled* gradient for θ
   (Figure 2), a larger step size for μ than for θ (Figure 3), the number $n'$ of Gibbs samples (Figure 1);
4. explain why $\\lambda_\\theta$ is tuned like a logistic regression's L2 penalty while $\\lambda_\\mu$ should stay small (Table 5).

Data: records sampled from a known pairwise MRF (4 features × 4 values, 20 000 training and 20 000
test records), small enough that the exact max-ent solution is computable, so we can compare PCD
with the truth. Every training run takes a few seconds.
"""),
    "SETUP",
    code("""
from aggmrf_explore import exact, experiment, metrics, mrf
from aggmrf_explore.explorer import TrainingWidget, convergence_figure

problem = experiment.prepare("synthetic", n=20_000, seed=1, n_features=4, n_modalities=4, coupling=3.0)
layout, agg, enc = problem.layout, problem.aggregated, problem.encoded
print(problem.dataset.description)
print(layout)
"""),
    md("""
## 2.1 The gradient needs expectations, and expectations need samples

Notebook 1 showed the gradient of the log-likelihood: $\\nabla_\\mu = \\mathbb{E}[D] - d$ and
$\\nabla_\\theta = \\mathbb{E}[C] - c$ (as a loss to minimise). Computing $\\mathbb{E}[D]$ exactly means
summing over all $4^4 = 256$ states here, but over about $1.7\\times10^{12}$ states on Adult (the
product of its 14 encoded features' cardinalities, $10\\cdot10\\cdot10\\cdot17\\cdot6\\cdot8\\cdot16\\cdot7\\cdot6\\cdot3\\cdot2\\cdot2\\cdot6\\cdot42 \\approx 1.66\\times10^{12}$;
on all 32 561 training records; notebook 5 prints
the count of its 5 000-record subsample, $7.5\\times10^{11}$, where rare categories are pooled). PCD replaces the
expectation by an average over $n'$ samples from the model, kept from one iteration to the next
("persistent") and moved by one **Gibbs sweep** per iteration.

**Gibbs conditional.** Fix a sample $(x, y)$ and a feature $f$. Only the tables containing $f$ change
when $x_f$ changes, so

$$ P(X_f = v \\mid x_{-f}, y) \\propto \\exp\\Big(\\sum_{t \\ni f} \\mu[\\mathrm{row}_t(x_{f\\leftarrow v})] + y\\,\\theta[\\mathrm{row}_t(x_{f\\leftarrow v})]\\Big). $$

Worked example with random parameters: the conditional of the third feature ($f = 2$: Python counts
from 0) computed from its tables only, against brute force from the full joint distribution.
"""),
    code(
        """
rng = np.random.default_rng(0)
mu, theta = rng.normal(0, 0.5, layout.K), rng.normal(0, 0.5, layout.K)
x, yv, f = np.array([0, 1, 2, 3]), 1, 2
tables_with_f = [t for t, feats in enumerate(layout.tables) if f in feats]

candidates = np.repeat(x[None, :], 4, axis=0)
candidates[:, f] = np.arange(4)                         # x with x_f = 0, 1, 2, 3
rows = layout.rows(candidates)[:, tables_with_f]        # only the tables holding feature f
logits = (mu + yv * theta)[rows].sum(axis=1)
gibbs = np.exp(logits - logits.max()); gibbs /= gibbs.sum()

states = exact.all_states(layout)
R = layout.rows(states)
log_joint = (mu + yv * theta)[R].sum(1)                 # log π(x, y) + log Z for every x
same_rest = np.all(np.delete(states, f, axis=1) == np.delete(x, f), axis=1)
brute = np.exp(log_joint[same_rest] - log_joint[same_rest].max()); brute /= brute.sum()
name = layout.feature_names[f]
print(f"tables holding {name}:", [layout.table_names[t] for t in tables_with_f])
print(f"P({name} = v | rest, y=1):", gibbs.round(3))
print("Gibbs conditional == brute force:", np.allclose(gibbs, brute))
""",
        check=True,
    ),
    md("""
## 2.2 Algorithm 1, live

One iteration (with $s = n / n'$):

1. one Gibbs sweep of the $n'$ persistent samples (draw $\\tilde y_i$, then each feature in turn);
2. $\\hat d = s \\sum_i \\varphi(\\tilde x_i)$ and $\\hat c = s \\sum_i \\sigma(\\varphi(\\tilde x_i)\\cdot\\theta)\\,\\varphi(\\tilde x_i)$;
3. $g_\\mu = \\hat d - d + 2\\lambda_\\mu\\mu$ and $g_\\theta = \\frac{d}{\\hat d}\\hat c - c + 2\\lambda_\\theta\\theta$ (rescaled);
4. divide by the diagonal Hessian estimates $\\hat d + 2\\lambda_\\mu$ and $\\frac{d}{\\hat d}\\hat c + 2\\lambda_\\theta$;
5. $\\mu \\mathrel{-}= \\alpha_\\mu\\,\\mathrm{dir}_\\mu$, $\\theta \\mathrel{-}= \\alpha_\\theta\\,\\mathrm{dir}_\\theta$.

**Where the package differs from the paper's Algorithm 1 (appendix C).** Line 13 of Algorithm 1 divides
the θ-direction by $\\hat c + 2\\lambda_\\theta$; the package divides by $\\frac{d}{\\hat d}\\hat c + 2\\lambda_\\theta$, the Hessian
estimate that matches the *rescaled* gradient (with `gradient="true"` it is $\\hat c + 2\\lambda_\\theta$, as in
Algorithm 1). Two safeguards are not in Algorithm 1 either: both Hessian estimates are floored at
$s = n/n'$ (the weight of one Gibbs sample, so an empty row cannot divide by ~0), and every coordinate
of the direction is clipped to $\\pm 2$. Line 10's penalty term is written $2\\lambda_\\mu$ in the paper; the
gradient of $\\lambda_\\mu\\|\\mu\\|^2$ is $2\\lambda_\\mu\\mu$, which is what the package uses.

The package's defaults: $\\alpha_\\theta = 1/T$ ($T$ released tables), $\\alpha_\\mu$ up to $5\\times$ larger,
$\\lambda_\\mu = 1$, $\\lambda_\\theta = \\min(T/2, 50) = T/2$ here. The reference lines: the exact max-ent model (what PCD
should converge to) and the true $P(Y=1 \\mid x)$ that generated the data (the best any model can do).
The widget below trains in this cell and redraws every 25 iterations.
"""),
    code("""
exact_model = exact.fit_exact(agg, lambda_mu=1.0, lambda_theta=layout.n_released_tables / 2, tol=1e-9)
refs = {
    "truth": metrics.nllh(enc.y_test, problem.dataset.true_proba_test),
    "exact max-ent": metrics.nllh(enc.y_test, exact_model.predict_proba(enc.X_test)[:, 1]),
}
settings = mrf.default_settings(layout, agg.n, n_gibbs=1000)
print(settings)
trainer = mrf.PCDTrainer(agg, settings, enc.X_test, enc.y_test)
"""),
    code(
        """
widget = TrainingWidget(trainer, plot_every=25, references=refs, title="PCD on synthetic MRF data, n' = 1000")
display(widget)
widget.run(100);
""",
        ignore=True,
    ),
    md("""
The same plot as a static figure (the widget above is live only in a running notebook):
"""),
    code("""
widget.figure()
"""),
    md("""
**Reading the plot.** The relative error of $\\hat d$ falls quickly, then flattens at the dotted
line: with $n'$ samples, $\\hat d$ is a Monte-Carlo estimate whose error cannot go below about
$\\sqrt{2/\\pi}\\,\\sum_k s\\sqrt{n' p_k(1-p_k)} / n$ (`mrf.expected_floor`), even with perfect
parameters. The held-out NLLH climbs to the exact max-ent value. Both claims are checked (fixed seed,
stated tolerances): if the trainer breaks, this cell fails.
"""),
    code("""
h = trainer.history_frame()
floor = mrf.expected_floor(agg, settings.n_gibbs)
err = h["d_error"].iloc[-15:].mean()
print(f"d̂ error, mean of iterations 86-100: {err:.3f}; Monte-Carlo floor: {floor:.3f}")
print(f"held-out NLLH after 100 iterations: {trainer.last_nllh:.3f}; exact max-ent: {refs['exact max-ent']:.3f}")
"""),
    md("""
The checked claims print booleans only (the numbers above come from the sampler's random stream, which
may change without the claims changing):
"""),
    code(
        """
print("d̂ error within 1.5x the floor:", err < 1.5 * floor)
print(f"held-out NLLH after 100 iterations within 0.015 of exact max-ent ({refs['exact max-ent']:.3f}):",
      abs(trainer.last_nllh - refs["exact max-ent"]) < 0.015)
""",
        check=True,
    ),
    md("""
Below, the model's expected counts against the data, one dot per table row:
"""),
    code("""
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
rel = layout.released
axes[0].loglog(agg.d[rel], trainer.d_hat[rel], ".", alpha=0.6, label="one table row")
lim = [1, agg.d.max() * 1.5]
axes[0].plot(lim, lim, color="0.5", ls="--", label="d̂ = d")
axes[0].set_xlabel("observed count d (records, log scale)")
axes[0].set_ylabel("model's expected count d̂ (records, log scale)")
axes[0].set_title(f"Counts after {trainer.iteration} iterations")
axes[0].legend()
p_exact = exact_model.predict_proba(enc.X_test[:3000])[:, 1]
p_pcd = trainer.predict_proba(enc.X_test[:3000])[:, 1]
axes[1].plot([0, 1], [0, 1], color="0.5", ls="--", label="equal")
axes[1].plot(p_exact, p_pcd, ".", alpha=0.3, label="one test record")
axes[1].set_xlabel("exact max-ent P(Y=1|x)")
axes[1].set_ylabel("PCD P(Y=1|x)")
axes[1].set_title(f"PCD approaches the exact max-ent classifier")
axes[1].legend()
plt.show()
"""),
    md("""
## 2.3 Rescaled vs true gradient (the paper's Figure 2)

The θ-gradient $\\hat c - c$ is non-zero for two reasons: the classifier is wrong, **or** the model's
distribution of $X$ is still wrong (so $\\hat c$ counts the wrong number of records in a row). The
rescaled pseudo-gradient $\\frac{d}{\\hat d}\\hat c - c$ compares *rates* instead of counts, so θ moves
only where the positive rate is off. It has the same fixed point (where $\\hat d = d$).

**Where it comes from: the logistic gradient.** A logistic regression trained on the records minimises
$\\ell(\\theta) = -\\sum_i \\big[y_i\\log\\sigma_i + (1 - y_i)\\log(1 - \\sigma_i)\\big]$ with $\\sigma_i = \\sigma(\\varphi(x_i)\\cdot\\theta)$. Since
$\\sigma' = \\sigma(1-\\sigma)$, its gradient is

$$ \\nabla\\ell(\\theta) = \\sum_i \\varphi(x_i)\\,(\\sigma_i - y_i) = \\sum_i \\sigma_i\\,\\varphi(x_i) - c,
\\qquad\\text{row } k:\\quad (\\nabla\\ell)_k = d_k\\cdot\\overline{\\sigma}_k - c_k, $$

where $\\overline{\\sigma}_k$ is the mean of $\\sigma_i$ over the $d_k$ records of row $k$. The tables give $d_k$ and $c_k$ but not
the records of row $k$; the Gibbs samples do give samples in row $k$, and $\\hat c_k / \\hat d_k$ is the mean of $\\sigma$ over
them. Substituting, $(\\nabla\\ell)_k \\approx d_k\\,\\hat c_k/\\hat d_k - c_k$: **the rescaled gradient is the logistic gradient,
with each row's mean prediction estimated from the model's samples.** The true gradient $\\hat c_k - c_k$ uses the
model's count $\\hat d_k$ instead of the known $d_k$, an extra error $(\\hat d_k - d_k)\\,\\hat c_k/\\hat d_k$ whenever the model of $X$
is off. Check: with the records as "samples" the two coincide exactly; with a distorted sample (records
redrawn with feature 1's first value over-weighted, so $\\hat d \\neq d$) the rescaled gradient stays much closer
to the logistic one than the true gradient does.
"""),
    code(
        """
phi_tr = layout.phi(enc.X_train)                       # (n, K) sparse indicators of the records
theta_r = np.random.default_rng(2).normal(0, 0.3, layout.K)
sig = mrf.sigmoid(phi_tr @ theta_r)                    # σ(φ(x_i)·θ) for every record
g_logistic = phi_tr.T @ (sig - enc.y_train)            # Σ φ(x_i)(σ_i − y_i)

def pseudo_gradients(idx):
    # samples = records[idx], weighted s = n / n' as in Algorithm 1
    s = agg.n / len(idx)
    d_hat = s * np.asarray(phi_tr[idx].sum(axis=0)).ravel()
    c_hat = s * (phi_tr[idx].T @ sig[idx])
    ratio = np.divide(agg.d, d_hat, out=np.ones_like(d_hat), where=d_hat > 0)
    return ratio * c_hat - agg.c, c_hat - agg.c        # rescaled, true

def rel_error(g):
    return np.linalg.norm(g - g_logistic) / np.linalg.norm(g_logistic)

rescaled, true_g = pseudo_gradients(np.arange(agg.n))
print("samples = records: rescaled == true == logistic gradient:",
      np.allclose(rescaled, g_logistic) and np.allclose(true_g, g_logistic))
w = np.where(enc.X_train[:, 0] == 0, 3.0, 1.0)
idx = np.random.default_rng(3).choice(agg.n, agg.n, p=w / w.sum())
rescaled, true_g = pseudo_gradients(idx)
print(f"distorted samples: relative error vs the logistic gradient, rescaled {rel_error(rescaled):.2f}, "
      f"true {rel_error(true_g):.2f}")
print("rescaled closer to the logistic gradient:", rel_error(rescaled) < 0.5 * rel_error(true_g))
""",
        check=True,
    ),
    md("""
The effect on training is
largest when μ lags behind, as on large data where μ has many rows to fit; we imitate that with a
small μ step, $\\alpha_\\mu = \\alpha_\\theta / 5$:
"""),
    code("""
def run(iterations=60, **overrides):
    s = mrf.default_settings(layout, agg.n, **{"n_gibbs": 500, **overrides})
    tr = mrf.PCDTrainer(agg, s, enc.X_test, enc.y_test)
    try:
        tr.step(iterations)
    except Exception as exc:       # a diverging run is a result too
        print(f"{overrides}: {exc}")
    return tr.history_frame()

a_theta = 1 / layout.n_released_tables
runs = {g: run(gradient=g, step_mu=a_theta / 5, step_theta=a_theta) for g in ("rescaled", "true")}

fig, ax = plt.subplots(figsize=(7, 4))
for g, h in runs.items():
    ax.plot(h["iteration"], h["nllh_eval"], label=f"{g} gradient")
ax.axhline(refs["exact max-ent"], color="0.4", ls=":", label="exact max-ent")
ax.set_ylim(refs["exact max-ent"] - 0.15, refs["exact max-ent"] + 0.02)
ax.set_xlabel("iteration")
ax.set_ylabel("held-out NLLH (higher is better)")
ax.set_title("Figure 2 in small: the rescaled θ-gradient converges faster\\n(α_μ = α_θ / 5: μ lags behind)")
ax.legend()
plt.show()
print("NLLH at iteration 30:", {g: round(h["nllh_eval"].iloc[29], 3) for g, h in runs.items()})
"""),
    md("""
The claim, checked (seeded runs; a margin of 0.03 in NLLH, about half the gap at iteration 30):
"""),
    code(
        """
at_30 = {g: h.loc[h["iteration"] == 30, "nllh_eval"].item() for g, h in runs.items()}
print("rescaled beats true by > 0.03 at iteration 30:", at_30["rescaled"] - at_30["true"] > 0.03)
""",
        check=True,
    ),
    md("""
## 2.4 Different step sizes for μ and θ (the paper's Figure 3)

μ only describes the distribution of $X$; the classifier depends on θ alone. The paper found (Figure 3,
on the large Criteo data) that a step on μ larger than on θ cut the training time a lot, and that
taking μ's larger step for θ too made training diverge. The package's default rule takes
$\\alpha_\\theta = 1/T$ and $\\alpha_\\mu = \\min(5/T, 1/T_f)$, here $2.5/T$ ($T_f = 4$ tables hold each feature).
We compare four choices and watch both the classifier (left) and the fit of the tables (right):
"""),
    code("""
steps = {
    "α_μ = α_θ = 1/T": run(step_mu=a_theta, step_theta=a_theta),
    "α_μ = 2.5/T (default), α_θ = 1/T": run(step_mu=2.5 * a_theta, step_theta=a_theta),
    "α_μ = 5/T, α_θ = 1/T": run(step_mu=5 * a_theta, step_theta=a_theta),
    "α_μ = α_θ = 5/T": run(step_mu=5 * a_theta, step_theta=5 * a_theta),
}
fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
for name, h in steps.items():
    axes[0].plot(h["iteration"], h["nllh_eval"], label=name)
    axes[1].plot(h["iteration"], h["d_error"], label=name)
axes[0].axhline(refs["exact max-ent"], color="0.4", ls=":", label="exact max-ent")
axes[0].set_ylim(refs["exact max-ent"] - 0.15, refs["exact max-ent"] + 0.02)
axes[0].set_xlabel("iteration")
axes[0].set_ylabel("held-out NLLH (higher is better)")
axes[0].set_title("The classifier")
axes[0].legend(loc="lower right", fontsize=8)
axes[1].axhline(mrf.expected_floor(agg, 500), color="0.4", ls=":", label="Monte-Carlo floor, n' = 500")
axes[1].set_ylim(0, 0.65)
axes[1].set_xlabel("iteration")
axes[1].set_ylabel("relative L1 error of d̂")
axes[1].set_title("The fit of the tables")
axes[1].legend(fontsize=8, loc="upper right", ncol=2)
fig.suptitle("Figure 3 in small: step sizes for μ and θ")
plt.show()
table = pd.DataFrame({name: h.set_index("iteration").loc[[10, 20, 60], ["nllh_eval", "d_error"]].stack()
                      for name, h in steps.items()}).T
print(table.round(3).to_string())
"""),
    md("""
**What this shows, honestly.** On this small problem the μ step barely changes the held-out NLLH
(left): with the rescaled gradient, θ does not wait for μ (§2.3). The benefit of a larger μ step
shows in the tables (right): at $\\alpha_\\mu = 2.5/T$, $\\hat d$ reaches the Monte-Carlo floor sooner than at
$1/T$. At $5/T$ the coordinate-wise Newton step on μ overshoots: its $\\hat d$ error keeps oscillating far above
the floor (green), which is why the default caps $\\alpha_\\mu$ at $1/T_f$. With both steps at $5/T$ (red) the
classifier gets ahead early, then oscillates: the paper's warning in a mild form. It does not diverge
outright here, since with 113 rows and clipped directions this model is small and well conditioned. The paper's large gain needs a model where μ has many rows to fit and lags behind θ, as
in §2.3 (there, with the true gradient, a small μ step costs a lot: exercise 4).
"""),
    md("""
## 2.5 How many Gibbs samples? (the paper's Figure 1)

More samples lower the Monte-Carlo floor of $\\hat d$, but the data $d$ are themselves noisy (finite
$n$), so beyond a point more samples buy little: the paper used $n' = 10\\,000$ on Adult and Bank.
"""),
    code("""
n_primes = [125, 500, 2000]
hist = {n_p: run(n_gibbs=n_p) for n_p in n_primes}
final_nllh = [h["nllh_eval"].iloc[-15:].mean() for h in hist.values()]
final_err = [h["d_error"].iloc[-15:].mean() for h in hist.values()]
floors = [mrf.expected_floor(agg, n_p) for n_p in n_primes]

fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
axes[0].semilogx(n_primes, final_nllh, "o-", label="PCD, mean of last 15 iterations")
axes[0].axhline(refs["exact max-ent"], color="0.4", ls=":", label="exact max-ent")
axes[0].set_xlabel("Gibbs samples n' (log scale)")
axes[0].set_ylabel("held-out NLLH")
axes[0].set_title("Prediction quality vs n'")
axes[0].legend(loc="lower right")
axes[1].loglog(n_primes, final_err, "o-", label="observed ‖d̂ − d‖₁/‖d‖₁")
axes[1].loglog(n_primes, floors, "s--", color="0.4", label="Monte-Carlo floor")
axes[1].set_xlabel("Gibbs samples n' (log scale)")
axes[1].set_ylabel("relative L1 error of d̂ (log scale)")
axes[1].set_title("The d̂ error follows the floor ∝ 1/√n'")
axes[1].legend()
from matplotlib.ticker import LogLocator, ScalarFormatter

for ax in axes:
    ax.set_xticks(n_primes, [str(v) for v in n_primes])
    ax.minorticks_off()
axes[1].yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))   # several ticks in one decade
axes[1].yaxis.set_major_formatter(ScalarFormatter())
plt.show()
"""),
    md("""
## 2.6 λ_μ vs λ_θ (the paper's Table 5)

The penalty $\\lambda_\\mu\\|\\mu\\|^2 + \\lambda_\\theta\\|\\theta\\|^2$ plays two different roles.
$\\lambda_\\theta$ shrinks the classifier, exactly like the L2 penalty of a logistic regression: its best
value depends on how many records support each coefficient. $\\lambda_\\mu$ only blurs the model of
$X$; if μ could fit the training distribution of $X$ perfectly, the MRF would *be* the logistic
regression, so $\\lambda_\\mu$ is best kept small.

The penalty acts on the objective, not on the sampler, so we can study it with the exact solver.
To make regularisation matter we use only 300 training records here (3 features × 5 values):
"""),
    code(
        """
small = experiment.prepare("synthetic", n=300, seed=3, n_features=3, n_modalities=5, coupling=3.0)
lambdas = [0.25, 4.0, 64.0]
grid = pd.DataFrame(index=pd.Index(lambdas, name="λ_θ"), columns=pd.Index(lambdas, name="λ_μ"), dtype=float)
for lm in lambdas:
    for lt in lambdas:
        m = exact.fit_exact(small.aggregated, lambda_mu=lm, lambda_theta=lt, tol=1e-10)
        grid.loc[lt, lm] = metrics.nllh(small.encoded.y_test, m.predict_proba(small.encoded.X_test)[:, 1])
print("held-out NLLH of the exact max-ent fit (rows λ_θ, columns λ_μ):")
print(grid.round(2).to_string())
best_lt, best_lm = grid.stack().idxmax()
print(f"best cell: λ_θ = {best_lt:g}, λ_μ = {best_lm:g}")
print("in the best λ_θ row, NLLH falls as λ_μ grows:", bool(grid.loc[best_lt].is_monotonic_decreasing))
print("every column peaks at an interior λ_θ:", bool((grid.idxmax(axis=0) == lambdas[1]).all()))
""",
        check=True,
    ),
    md("""
Read it like the paper's Table 5. Down every column $\\lambda_\\theta$ has a sweet spot (here 4): too little and
the 300 records are over-fitted, too much and the classifier is flattened towards the base rate. Along
the rows where $\\lambda_\\theta$ is reasonable (0.25 and 4), a large $\\lambda_\\mu$ costs accuracy (0.47 → 0.46 → 0.33 in
the best row). The last row is the exception: once $\\lambda_\\theta = 64$ has flattened the classifier, a larger
$\\lambda_\\mu$ even helps a little (0.23 → 0.28). So "keep $\\lambda_\\mu$ small" is a statement about a well-chosen
$\\lambda_\\theta$, which is the setting one uses.

## Exercises

1. Run the widget's trainer again with `trainer.update(precondition=False)` for 30 iterations
   (`widget.run(30)`). What happens, and why does dividing by $\\hat d + 2\\lambda_\\mu$ help when
   counts range from 1 to 20 000?
2. What is the Monte-Carlo floor for $n' = n$? Why is there little point in going beyond it?
3. In §2.6, redo the grid with `n=20_000`. How does the best $\\lambda_\\theta$ move, and why?
4. In §2.4, use the *true* gradient with $\\alpha_\\mu = \\alpha_\\theta/5$, $\\alpha_\\mu = \\alpha_\\theta$ and $\\alpha_\\mu = 2.5\\,\\alpha_\\theta$. Now does μ's step matter?

(Each answer is in a collapsed block below; "Run All" does not open it.)
"""),
    answer(
        """
**1.** Without preconditioning one step size must suit every row, from counts of a few records to
20 000: a step small enough for the big rows barely moves the rare ones, so learning is much slower
(and a larger step would be unstable). Dividing by the diagonal Hessian estimate $\\hat d + 2\\lambda_\\mu$ makes each
step a relative one, as in Newton's method.
""",
        """
t2 = mrf.PCDTrainer(agg, mrf.default_settings(layout, agg.n, n_gibbs=1000, precondition=False), enc.X_test, enc.y_test)
t2.step(100)
print(f"NLLH after 100 iterations: with preconditioning {trainer.last_nllh:.3f}, without {t2.last_nllh:.3f}")
""",
    ),
    answer(
        """
**2.** With $n' = n$, $s = 1$ and the floor is the sampling noise of a dataset of the data's own size. The
data $d$ carry that much noise themselves, so a more precise $\\hat d$ cannot make the fit more accurate.
""",
        """
print("floor at n' = n:", round(mrf.expected_floor(agg, agg.n), 4), " at n' = 1000:", round(mrf.expected_floor(agg, 1000), 4))
""",
    ),
    answer(
        """
**3.** With about 70× more records every coefficient is well supported, so less shrinkage is needed:
the best $\\lambda_\\theta$ moves to the small end of the grid.
""",
        """
big = experiment.prepare("synthetic", n=20_000, seed=3, n_features=3, n_modalities=5, coupling=3.0)
for lt in lambdas:
    m = exact.fit_exact(big.aggregated, lambda_mu=0.25, lambda_theta=lt, tol=1e-8)
    print("λ_θ =", lt, " NLLH", round(metrics.nllh(big.encoded.y_test, m.predict_proba(big.encoded.X_test)[:, 1]), 3))
""",
    ),
    answer(
        """
**4.** Yes. With the true gradient θ chases $\\hat c - c$, which is wrong wherever μ has not fitted the
counts yet, so a lagging μ slows θ down a lot; a larger μ step helps, as in the paper's Figure 3. (Much
larger, e.g. $5\\,\\alpha_\\theta$, and the coupled system oscillates.)
""",
        """
for k in (0.2, 1.0, 2.5):
    h = run(gradient="true", step_mu=k * a_theta, step_theta=a_theta)
    print(f"true gradient, α_μ = {k:g}·α_θ: NLLH at iterations 10, 30, 60:", h["nllh_eval"].iloc[[9, 29, 59]].round(3).tolist())
""",
    ),
]

if __name__ == "__main__":
    print(write(NAME, cells))
