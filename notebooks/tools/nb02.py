from nbtools import SETUP, answer, code, md, write

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
from aggmrf_explore.explorer.widget import TrainingWidget, convergence_figure

problem = experiment.prepare("synthetic", n=20_000, seed=1, n_features=4, n_modalities=4, coupling=3.0)
layout, agg, enc = problem.layout, problem.aggregated, problem.encoded
print(problem.dataset.description)
print(layout)
"""),
md("""
## 2.1 The gradient needs expectations, and expectations need samples

Notebook 1 showed the gradient of the log-likelihood: $\\nabla_\\mu = \\mathbb{E}[D] - d$ and
$\\nabla_\\theta = \\mathbb{E}[C] - c$ (as a loss to minimise). Computing $\\mathbb{E}[D]$ exactly means
summing over all $4^4 = 256$ states here, but over $10^{13}$ states on Adult. PCD replaces the
expectation by an average over $n'$ samples from the model, kept from one iteration to the next
("persistent") and moved by one **Gibbs sweep** per iteration.

**Gibbs conditional.** Fix a sample $(x, y)$ and a feature $f$. Only the tables containing $f$ change
when $x_f$ changes, so

$$ P(X_f = v \\mid x_{-f}, y) \\propto \\exp\\Big(\\sum_{t \\ni f} \\mu[\\mathrm{row}_t(x_{f\\leftarrow v})] + y\\,\\theta[\\mathrm{row}_t(x_{f\\leftarrow v})]\\Big). $$

Worked example with random parameters: the conditional of feature 2 computed from its tables only,
against brute force from the full joint distribution.
"""),
code("""
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
print("tables holding feature 2:", [layout.table_names[t] for t in tables_with_f])
print("P(X_2 = v | rest, y=1):", gibbs.round(3))
print("Gibbs conditional == brute force:", np.allclose(gibbs, brute))
""", check=True),
md("""
## 2.2 Algorithm 1, live

One iteration (with $s = n / n'$):

1. one Gibbs sweep of the $n'$ persistent samples (draw $\\tilde y_i$, then each feature in turn);
2. $\\hat d = s \\sum_i \\varphi(\\tilde x_i)$ and $\\hat c = s \\sum_i \\sigma(\\varphi(\\tilde x_i)\\cdot\\theta)\\,\\varphi(\\tilde x_i)$;
3. $g_\\mu = \\hat d - d + 2\\lambda_\\mu\\mu$ and $g_\\theta = \\frac{d}{\\hat d}\\hat c - c + 2\\lambda_\\theta\\theta$ (rescaled);
4. divide by the diagonal Hessian estimates $\\hat d + 2\\lambda_\\mu$ and $\\frac{d}{\\hat d}\\hat c + 2\\lambda_\\theta$;
5. $\\mu \\mathrel{-}= \\alpha_\\mu\\,\\mathrm{dir}_\\mu$, $\\theta \\mathrel{-}= \\alpha_\\theta\\,\\mathrm{dir}_\\theta$.

The package's defaults: $\\alpha_\\theta = 1/T$ ($T$ released tables), $\\alpha_\\mu$ up to $5\\times$ larger,
$\\lambda_\\mu = 1$, $\\lambda_\\theta = T/2$. The reference lines: the exact max-ent model (what PCD
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
code("""
# NBVAL_IGNORE_OUTPUT
widget = TrainingWidget(trainer, plot_every=25, references=refs, title="PCD on synthetic MRF data, n' = 1000")
display(widget)
widget.run(100);
"""),
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
parameters. The held-out NLLH climbs to the exact max-ent value. Below, the model's expected counts
against the data, one dot per table row:
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
only where the positive rate is off. It has the same fixed point (where $\\hat d = d$). The effect is
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
"""),
md("""
## 2.4 Different step sizes for μ and θ (the paper's Figure 3)

μ only describes the distribution of $X$; the classifier depends on θ alone. Moving μ faster lets
$\\hat d$ catch up with $d$, which the rescaled θ-gradient then exploits. But a large step on θ too
makes the coupled system oscillate: the paper's runs diverged when both steps took μ's value.
(On this small problem the larger μ step alone changes little; the paper's gain was on the large
Criteo data, where μ has far more rows to fit.)
"""),
code("""
steps = {
    "α_μ = α_θ = 1/T": run(step_mu=a_theta, step_theta=a_theta),
    "α_μ = 5/T, α_θ = 1/T": run(step_mu=5 * a_theta, step_theta=a_theta),
    "α_μ = α_θ = 5/T": run(step_mu=5 * a_theta, step_theta=5 * a_theta),
}
fig, ax = plt.subplots(figsize=(7, 4))
for name, h in steps.items():
    ax.plot(h["iteration"], h["nllh_eval"], label=name)
ax.axhline(refs["exact max-ent"], color="0.4", ls=":", label="exact max-ent")
ax.set_ylim(refs["exact max-ent"] - 0.15, refs["exact max-ent"] + 0.02)
ax.set_xlabel("iteration")
ax.set_ylabel("held-out NLLH (higher is better)")
ax.set_title("Figure 3 in small: a larger step on μ only")
ax.legend(loc="lower right")
plt.show()
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
for ax in axes:
    ax.set_xticks(n_primes, [str(v) for v in n_primes])
    ax.minorticks_off()
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
code("""
small = experiment.prepare("synthetic", n=300, seed=3, n_features=3, n_modalities=5, coupling=3.0)
lambdas = [0.25, 4.0, 64.0]
grid = pd.DataFrame(index=pd.Index(lambdas, name="λ_θ"), columns=pd.Index(lambdas, name="λ_μ"), dtype=float)
for lm in lambdas:
    for lt in lambdas:
        m = exact.fit_exact(small.aggregated, lambda_mu=lm, lambda_theta=lt, tol=1e-10)
        grid.loc[lt, lm] = metrics.nllh(small.encoded.y_test, m.predict_proba(small.encoded.X_test)[:, 1])
print("held-out NLLH of the exact max-ent fit (rows λ_θ, columns λ_μ):")
print(grid.round(2).to_string())
""", check=True),
md("""
As in the paper's Table 5: a large $\\lambda_\\mu$ costs accuracy (read along a row), while
$\\lambda_\\theta$ has a sweet spot (read down a column): too little and the 300 records are
over-fitted, too much and the classifier is flattened towards the base rate.

## Exercises

1. Run the widget's trainer again with `trainer.update(precondition=False)` for 30 iterations
   (`widget.run(30)`). What happens, and why does dividing by $\\hat d + 2\\lambda_\\mu$ help when
   counts range from 1 to 20 000?
2. What is the Monte-Carlo floor for $n' = n$? Why is there little point in going beyond it?
3. In §2.6, redo the grid with `n=20_000`. How does the best $\\lambda_\\theta$ move, and why?
"""),
md("**Answers** (collapsed: click to expand)."),
answer("""
# 1. Without preconditioning one step size must suit every row: a step small enough for the
#    20 000-record rows barely moves the rare rows, so learning is far slower (or unstable if larger).
#    The diagonal Hessian estimate d̂ + 2λ makes the step a relative one, as in Newton's method.
t2 = mrf.PCDTrainer(agg, mrf.default_settings(layout, agg.n, n_gibbs=500, precondition=False), enc.X_test, enc.y_test)
t2.step(30)
print("NLLH after 30 iterations without preconditioning:", round(t2.last_nllh, 3))
# 2. With n' = n, s = 1: the floor is the sampling noise of the data themselves (≈ the d error of a
#    fresh dataset of the same size). Beyond it, d̂ is more precise than d, so the fit cannot improve.
print("floor at n' = n:", round(mrf.expected_floor(agg, agg.n), 4))
# 3. With 70x more records each coefficient is well supported: the best λ_θ moves to the small end.
big = experiment.prepare("synthetic", n=20_000, seed=3, n_features=3, n_modalities=5, coupling=3.0)
for lt in lambdas:
    m = exact.fit_exact(big.aggregated, lambda_mu=0.25, lambda_theta=lt, tol=1e-8)
    print("λ_θ =", lt, "NLLH", round(metrics.nllh(big.encoded.y_test, m.predict_proba(big.encoded.X_test)[:, 1]), 3))
"""),
]

if __name__ == "__main__":
    print(write("02_training_pcd.ipynb", cells))
