from nbtools import SETUP, answer, code, md, write

NAME = "06_local_vs_central.ipynb"

cells = [
md("""
# 6. Local versus central privacy

**Learning goals.** After this notebook you can

1. say who must be trusted in **central** privacy (notebook 4: a curator adds noise to exact tables)
   and in **local** privacy (each person randomizes their own record, nobody sees the truth);
2. run **k-ary randomized response** on records, split a person's ε across their fields, and check
   that its likelihood ratio is exactly $e^\\varepsilon$;
3. derive the **unbiased tables** from randomized records with the *linear-moments* idea of
   Raghunathan, Frostig, Duchi & Liang (2016): the sufficient statistics are linear in the observed
   distribution, so one structured linear solve recovers them;
4. compute the estimate's **covariance** in closed form and check it by simulation;
5. explain why **local noise grows like $\\sqrt n$ while central noise does not**, and see what that
   costs the MRF on Adult.
"""),
"SETUP",
md("""
## 6.1 Who sees what

| | central (notebook 4) | local (this notebook) |
|---|---|---|
| who sees the exact records | a trusted curator | nobody |
| where the noise goes | once, on each released table row | on every field of every record |
| noise on a table row | fixed σ (depends on ε, δ, the number of tables) | grows with the number of records $n$ |

**k-ary randomized response** (Warner 1965, generalised). A field with $k$ values is reported
truthfully with probability $p = e^{\\varepsilon}/(e^{\\varepsilon}+k-1)$, otherwise as one of the $k-1$
other values, uniformly (each with $q = 1/(e^{\\varepsilon}+k-1)$). For two true values $x \\neq x'$
and any report $o$, $P(o\\mid x)/P(o\\mid x') \\in \\{p/q,\\ 1,\\ q/p\\}$ and $p/q = e^{\\varepsilon}$: the
report is ε-differentially private *on its own*, before anyone aggregates it.

**Splitting ε.** A person reports several fields; randomizing each independently at $\\varepsilon_f$
costs $\\sum_f \\varepsilon_f$ in total (sequential composition). The package splits the budget
equally over the randomized fields (features with $k \\ge 2$ and the label) by default, or in
proportion to $\\ln k$ (`split="log-k"`), which keeps the keep probabilities of narrow and wide
fields closer. Adult with four small features, ε = 4 per person:
"""),
code("""
from aggmrf_explore import experiment, privacy

features = ["relationship", "education-num", "capital-gain", "age"]
adult = experiment.prepare("adult", features=features)
lay, enc = adult.layout, adult.encoded
rr = privacy.local.make_local_mechanism(4.0, lay)
print(rr.fields(lay.feature_names).round(3).to_string(index=False))
print("total ε =", round(float(rr.feature_epsilons.sum() + rr.label_epsilon), 12))
""", check=True),
md("""
The keep probabilities are low: with ε = 4 per *person*, each field gets ε = 0.8, and a 10-valued
field (age) is reported truthfully only 18 % of the time (uniform guessing would give 10 %).

**Check: the likelihood ratio is exactly $e^{\\varepsilon_f}$.** Build each field's channel matrix
$C_f$ (column $x$ = the law of the report given $x$) and take, for every pair of true values, the
largest ratio over all reports:
"""),
code("""
for f, name in enumerate(lay.feature_names):
    k = int(lay.n_modalities[f])
    C = privacy.local.channel_matrix(k, *rr.feature_channel(f))
    worst = max((C[:, a] / C[:, b]).max() for a in range(k) for b in range(k) if a != b)
    print(f"{name:14s} k = {k:2d}: max ratio / e^ε_f = {worst / np.exp(rr.feature_epsilons[f]):.12f}")
""", check=True),
code("""
# one person's report: the sampler keeps each field with probability p_f
Xt, yt = rr.randomize(enc.X_train[:5], enc.y_train[:5], rng=0)
pd.DataFrame({"true age code": enc.X_train[:5, 3], "reported": Xt[:, 3],
              "true label": enc.y_train[:5], "reported label": yt})
"""),
md("""
## 6.2 Unbiased tables by linear moments

**The idea (Raghunathan et al., section 2).** Learning an exponential family needs only the
sufficient statistics $\\mu = \\sum_i \\phi(x_i, y_i)$; here they are exactly the tables ($d$, $c$).
Under indirect supervision we observe $o_i$ instead of $(x_i, y_i)$. If we find an *observation
function* $\\beta$ with $\\mathbb E[\\beta(o) \\mid x, y] = \\phi(x, y)$, then $\\hat\\mu = \\sum_i \\beta(o_i)$ is
unbiased and the same convex fit (our MRF) takes it as it is.

**Our β.** Let $\\phi_t(x)$ be the one-hot row of record $x$ in the pair table $t = (f_1, f_2)$. The
fields are randomized independently, so the report's one-hot row has expectation

$$\\mathbb E[\\phi_t(\\tilde x) \\mid x] = (C_{f_1} \\otimes C_{f_2})\\, \\phi_t(x), \\qquad
\\mathbb E[\\tilde O] = (C_{f_1} \\otimes C_{f_2})\\, T,$$

linear in the true table $T$ (row-major cells, as in the layout). So
$\\beta(\\tilde x) = (C_{f_1} \\otimes C_{f_2})^{-1} \\phi_t(\\tilde x)$, and $\\hat T = (C_{f_1}^{-1} \\otimes C_{f_2}^{-1})\\tilde O$,
i.e. $\\hat T = C_{f_1}^{-1}\\, \\tilde O\\, C_{f_2}^{-\\top}$ as a $k_1 \\times k_2$ matrix.

**Never form the big matrix.** $C = (p-q)I + q\\,\\mathbf 1\\mathbf 1^\\top$; Sherman–Morrison with
$p + (k-1)q = 1$ gives $C^{-1} = (I - q\\,\\mathbf 1 \\mathbf 1^\\top)/(p-q)$: subtract $q\\times$ the column (row)
sum, divide by $p - q$. Cost $O(k_1 k_2)$ instead of a $(k_1k_2)^2$ system: a $1000 \\times 1000$ table
needs a few 8 MB arrays, where the dense Kronecker matrix would hold $8$ TB.

**Label sums.** The label is one more randomized field with 2 values. Its observed table over
$(\\tilde x, \\tilde y)$ is $[\\tilde d - \\tilde c,\\ \\tilde c]$; invert every axis and keep $y = 1$:
$\\hat c = F(\\tilde c - q_y \\tilde d)/(p_y - q_y)$ and $\\hat d = F(\\tilde d)$, $F$ = the feature inversion.

Check against a dense solve on the relationship × education-num table (42 cells × 2 labels):
"""),
code("""
Xt, yt = rr.randomize(enc.X_train, enc.y_train, rng=1)
from aggmrf_explore import aggregate
observed = aggregate(Xt, yt, lay)
estimate = privacy.local.unbiased_tables(observed, rr)
t = lay.table_index(["relationship", "education-num"])
rows = slice(lay.offsets[t], lay.offsets[t + 1])
k1, k2 = (int(lay.n_modalities[f]) for f in lay.tables[t])
big = np.kron(np.kron(privacy.local.channel_matrix(k1, *rr.feature_channel(lay.tables[t][0])),
                      privacy.local.channel_matrix(k2, *rr.feature_channel(lay.tables[t][1]))),
              privacy.local.channel_matrix(2, *rr.label_channel))
O = np.stack([observed.d[rows] - observed.c[rows], observed.c[rows]], axis=-1).ravel()
dense = np.linalg.solve(big, O).reshape(-1, 2)
print("dense system:", big.shape)
print("counts agree:", np.allclose(estimate.d[rows], dense.sum(axis=1), rtol=1e-9, atol=1e-6))
print("label sums agree:", np.allclose(estimate.c[rows], dense[:, 1], rtol=1e-9, atol=1e-6))
print("every table sums to n:", all(abs(estimate.d[lay.offsets[i]:lay.offsets[i + 1]].sum() - adult.n_train) < 1e-6
                                     for i in range(lay.n_tables)))
""", check=True),
code("""
fig, ax = plt.subplots(figsize=(6, 4.5))
rel = lay.released
ax.scatter(adult.aggregated.d[rel], estimate.d[rel], s=8, alpha=0.6, label="estimated count d̂")
ax.scatter(adult.aggregated.d[rel], observed.d[rel], s=8, alpha=0.6, label="raw count of the reports d̃")
top = adult.aggregated.d[rel].max()
ax.plot([0, top], [0, top], color="0.4", ls="--", label="= true")
ax.set_xlabel("true count (records)")
ax.set_ylabel("count (records)")
ax.set_title("Local ε = 4: raw reports are biased toward uniform, d̂ is not")
ax.legend()
plt.show()
"""),
md("""
The raw counts of the reports are pulled toward the uniform table (big rows shrink, empty rows fill
up); the inversion undoes that on average, at the price of noise and of **negative** estimates.

**Check: unbiasedness.** 500 seeds on 2 000 records (a subsample, to keep it quick): the mean of
$\\hat d$ and $\\hat c$ should be within a few standard errors of the truth in every row. The standard
error here is the closed-form one (§6.3) divided by $\\sqrt{500}$.
"""),
code("""
small = experiment.prepare("adult", features=features, n=2000, seed=0)
rr_small = privacy.local.make_local_mechanism(4.0, small.layout)
runs = [privacy.local.local_release(small.encoded.X_train, small.encoded.y_train, small.layout, rr_small, seed=s)
        for s in range(500)]
D = np.array([r.d for r in runs])
C = np.array([r.c for r in runs])
truth = small.aggregated
var_d, var_c = privacy.local.local_variances(small.layout, rr_small, truth.d, truth.c)
z_d = (D.mean(0) - truth.d)[1:] / np.sqrt(var_d[1:] / 500)     # row 0 (the total n) is exact
z_c = (C.mean(0) - truth.c) / np.sqrt(var_c / 500)
print(f"{z_d.size + z_c.size} cells: largest |z| = {max(abs(z_d).max(), abs(z_c).max()):.2f}")
print(f"share within 3 SE: {np.mean(np.abs(np.r_[z_d, z_c]) < 3):.1%}")
"""),
code("""
print("every cell within 4 standard errors:", bool(max(abs(z_d).max(), abs(z_c).max()) < 4))
print("some estimated counts are negative:", bool((D < 0).any()))
""", check=True),
md("""
## 6.3 The covariance, in closed form

Given the records, the reports' table is a sum of $n$ independent one-hot draws: record $i$ lands
in report cell $o$ with probability $\\pi_i = C e_{x_i}$. So
$\\mathrm{Cov}(\\tilde O) = \\mathrm{diag}(C T) - C\\,\\mathrm{diag}(T)\\,C^\\top$ and, with $A = C^{-1}$,

$$\\mathrm{Cov}(\\hat T) = A\\,\\mathrm{diag}(C T)\\,A^\\top - \\mathrm{diag}(T).$$

The diagonal needs no big matrix either: $\\mathrm{Var}(\\hat T_j) = [(A\\circ A)(C T)]_j - T_j$ and
$A_f \\circ A_f = ((1-2q)I + q^2\\mathbf 1\\mathbf 1^\\top)/(p-q)^2$ has the same structure
(`privacy.local.cell_variances`; the dense `cell_covariance` for small tables). Check against the
500 runs above:
"""),
code("""
emp_d = D.var(axis=0, ddof=1)[1:]
ratio = emp_d / var_d[1:]
print(f"empirical / closed-form variance of d̂: median {np.median(ratio):.2f}, "
      f"5–95 % range {np.quantile(ratio, 0.05):.2f}–{np.quantile(ratio, 0.95):.2f}")
"""),
code("""
# 4 000 more runs of one small table, vectorised: 250 copies of the 2 000 records per call
t_s = small.layout.table_index(["relationship", "capital-gain"])
f1, f2 = small.layout.tables[t_s]
k1, k2 = (int(small.layout.n_modalities[f]) for f in (f1, f2))
chans = [rr_small.feature_channel(f1), rr_small.feature_channel(f2)]
Xs, ys = small.encoded.X_train, small.encoded.y_train
S, chunk = 4000, 250
runs_t = []
for start in range(0, S, chunk):
    Xt, yt = rr_small.randomize(np.tile(Xs, (chunk, 1)), np.tile(ys, chunk), rng=start)
    cell = (Xt[:, f1] * k2 + Xt[:, f2]).reshape(chunk, -1) + (np.arange(chunk) * k1 * k2)[:, None]
    obs = np.bincount(cell.ravel(), minlength=chunk * k1 * k2).reshape(chunk, k1, k2)
    runs_t.append(privacy.local.invert_channel(obs, [(1.0, 0.0), *chans]))  # run axis: identity
runs_t = np.concatenate(runs_t).reshape(S, -1)
sl = slice(small.layout.offsets[t_s], small.layout.offsets[t_s + 1])
cov = privacy.local.cell_covariance(truth.d[sl].reshape(k1, k2), chans)
emp = np.cov(runs_t, rowvar=False)
print(f"relationship × capital-gain ({cov.shape[0]} cells, {S} runs): "
      f"‖empirical − closed form‖ / ‖closed form‖ < 10 %: {np.linalg.norm(emp - cov) / np.linalg.norm(cov) < 0.10}")
print("cells are correlated (largest |correlation| > 0.3):",
      bool(np.abs(cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov))) - np.eye(len(cov))).max() > 0.3))
""", check=True),
md("""
**For MRF-N.** The noise-aware trainer of notebook 4 assumes i.i.d. noise of one σ on every row.
Here each row has its own σ_j, and the rows are correlated. The release carries a per-row Gaussian
approximation, `estimate.noise`: independent $N(0, \\sigma_j^2)$, ignoring the correlations. The
curator does not know $T$, but $\\mathbb E[\\tilde O] = C T$, so $\\hat\\sigma_j^2 = [(A\\circ A)\\tilde O]_j - \\hat T_j$ is an
unbiased estimate of the variance. Does "estimate ± 1.96 σ̂" cover the truth 95 % of the time?
"""),
code("""
rel_s = small.layout.released
covered = np.mean([np.r_[np.abs(r.d - truth.d)[rel_s] <= 1.96 * r.noise.sigma_d[rel_s],
                         np.abs(r.c - truth.c) <= 1.96 * r.noise.sigma_c] for r in runs])
print(f"coverage of ± 1.96 σ̂ over 500 runs: {covered:.1%}")
"""),
code("""
print("coverage within 93–97 %:", bool(0.93 < covered < 0.97))
""", check=True),
md("""
## 6.4 Why local noise grows with n and central noise does not

Every record, wherever it truly is, can be reported in *any* cell, and the inversion multiplies
each report by up to $1/(p-q)$ per field. So each of the $n$ records adds a bounded amount to the
variance of *every* cell: $\\mathrm{Var}(\\hat T_j) \\propto n$, the standard deviation grows like
$\\sqrt n$, even for an empty cell. Central noise is added once per row, with a σ fixed by ε, δ and
the number of tables, whatever $n$. Exactly, from the closed form (scale the tables by 4):
"""),
code("""
v1, _ = privacy.local.local_variances(lay, rr, adult.aggregated.d, adult.aggregated.c)
v4, _ = privacy.local.local_variances(lay, rr, 4 * adult.aggregated.d, 4 * adult.aggregated.c)
print("local variance ratio for 4× the records:", np.round(np.median(v4[rel] / v1[rel]), 6))
gauss = privacy.make_mechanism("gaussian", epsilon=4.0, delta=1e-7, layout=lay)
print(f"central Gaussian σ at ε = 4 (any n): {gauss.sigma:.2f} records")
""", check=True),
code("""
ns = np.geomspace(1000, 1_000_000, 13)
scale = ns / adult.n_train
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for eps in (4.0, 16.0):
    m = privacy.local.make_local_mechanism(eps, lay)
    v, _ = privacy.local.local_variances(lay, m, adult.aggregated.d, adult.aggregated.c)
    sd = np.sqrt(np.median(v[rel]) * scale)
    g = privacy.make_mechanism("gaussian", epsilon=eps, delta=1e-7, layout=lay).sigma
    axes[0].loglog(ns, sd, "-", label=f"local, ε = {eps:g}")
    axes[0].loglog(ns, np.full_like(ns, g), "--", label=f"central Gaussian, ε = {eps:g}")
    typical = np.median(adult.aggregated.d[rel]) * scale
    axes[1].loglog(ns, sd / typical, "-", label=f"local, ε = {eps:g}")
    axes[1].loglog(ns, g / typical, "--", label=f"central, ε = {eps:g}")
axes[0].set_xlabel("number of records n (log scale)")
axes[0].set_ylabel("noise sd of one table row (records)")
axes[0].set_title("Local noise grows like √n, central noise is fixed")
axes[1].set_xlabel("number of records n (log scale)")
axes[1].set_ylabel("noise sd / median row count")
axes[1].set_title("Relative error: local ∝ 1/√n, central ∝ 1/n")
for ax in axes:
    ax.legend(fontsize=8)
plt.show()
"""),
md("""
Relative to the counts, both errors shrink with more data, but local only like $1/\\sqrt n$ and
central like $1/n$: local privacy needs far more records for the same accuracy, and the gap widens
as ε shrinks.

## 6.5 The same MRF on top

The estimated tables are an ordinary `AggregatedData`, so the trainer takes them exactly as a central
release (here projected: $d^+ = \\max(\\hat d, 0)$, $c^+ = \\mathrm{clip}(\\hat c, 0, d^+)$). Adult, the four
features above, all 32 561 training records, 1 000 Gibbs samples, 200 iterations, at the same ε per
person for both models:
"""),
code("""
from aggmrf_explore import DivergenceError, mrf


def held_out(data):
    \"\"\"Held-out NLLH of the default MRF on ``data``; −∞ when training diverges.\"\"\"
    settings = mrf.default_settings(lay, data.n, n_gibbs=1000)
    try:
        return experiment.train_mrf(adult, settings, iterations=200, data=data).nllh_test
    except DivergenceError:
        return -np.inf


no_noise = held_out(adult.aggregated)
results = []
for eps in (1.0, 4.0, 8.0, 16.0, 32.0, 64.0):
    central = privacy.release(adult.aggregated, privacy.make_mechanism("gaussian", epsilon=eps, delta=1e-7, layout=lay), seed=0)
    local = privacy.local.local_release(enc.X_train, enc.y_train, lay, privacy.local.make_local_mechanism(eps, lay), seed=0)
    results.append({"ε": eps, "central MRF": held_out(central), "local MRF": held_out(local),
                 "local median row sd": np.median(local.noise.sigma_d[rel])})
comparison = pd.DataFrame(results)
comparison.round(3)
"""),
code("""
fig, ax = plt.subplots(figsize=(7, 4))
ax.semilogx(comparison["ε"], comparison["central MRF"], "o-", label="central (Gaussian, δ = 1e-7)")
ax.semilogx(comparison["ε"], comparison["local MRF"].clip(lower=-0.5), "s-", label="local (randomized response)")
ax.axhline(no_noise, color="C2", ls="--", label=f"no privacy ({no_noise:.3f})")
ax.axhline(0, color="0.5", lw=0.8)
ax.set_ylim(-0.55, no_noise + 0.05)
ax.set_xlabel("ε per person (log scale)")
ax.set_ylabel("held-out NLLH (higher is better; clipped at −0.5)")
ax.set_title("Adult, 4 features, n = 32 561: the price of trusting nobody")
ax.legend(fontsize=8, loc="lower right")
plt.show()
"""),
md("""
Central privacy costs almost nothing from ε = 1 up; local privacy at the same ε buries the tables
(a held-out NLLH below 0 is worse than predicting the base rate; −∞: the noisy tables ask for a
label weight beyond the trainer's bound and training stops) until ε is large. Local privacy
protects against the curator too, and pays for it in records: its noise per row grows like
$\\sqrt n$, so it needs many times more data for the same accuracy.

## Exercises

1. Use `split="log-k"` at ε = 4 on the four features. Which fields gain, which lose, and does the
   median noise sd of the pair rows go down?
2. How many records would local privacy at ε = 4 need for the *relative* noise of a typical table row
   to match the central Gaussian's at ε = 4 with today's $n$?
3. Suppose the features were public and only the label randomized (the paper's section 3.1
   setting, ε = 4 all on the label). What is the channel of a public field, and how does the noise
   of a label sum $\\hat c_j$ change?

(Each answer is in a collapsed block below; "Run All" does not open it.)
"""),
answer("""
**1.** `log-k` gives the wide fields (age, 10 values; relationship, 7) more ε and the binary
ones (capital-gain, the label) less. The pair rows, dominated by the wide fields' channels, get
markedly less noisy (the median sd roughly halves); the label sums of binary fields pay for it:
""", """
for split in ("equal", "log-k"):
    m = privacy.local.make_local_mechanism(4.0, lay, split=split)
    v, _ = privacy.local.local_variances(lay, m, adult.aggregated.d, adult.aggregated.c)
    pairs = np.isin(lay.row_table(), [i for i, t in enumerate(lay.tables) if len(t) == 2])
    print(f"{split:6s} ε per field {np.round(np.r_[m.feature_epsilons, m.label_epsilon], 2)}, "
          f"median pair-row sd {np.sqrt(np.median(v[pairs])):.0f}")
"""),
answer("""
**2.** The local sd grows like $\\sqrt n$, so its relative error falls like $1/\\sqrt n$; the central
relative error is σ/count. Equal relative error at $n'$ records: $\\mathrm{sd}_{\\text{local}}(n)\\sqrt{n'/n}\\,/\\,(\\text{count}\\cdot n'/n) = \\sigma/\\text{count}$,
so $n' = n\\,(\\mathrm{sd}_{\\text{local}}/\\sigma)^2$:
""", """
v, _ = privacy.local.local_variances(lay, rr, adult.aggregated.d, adult.aggregated.c)
sd_local = np.sqrt(np.median(v[rel]))
sigma = privacy.make_mechanism("gaussian", epsilon=4.0, delta=1e-7, layout=lay).sigma
print(f"local sd {sd_local:.0f}, central σ {sigma:.1f}: n' ≈ {adult.n_train * (sd_local / sigma) ** 2:,.0f} records")
"""),
answer("""
**3.** A public field is reported as is: its channel is the identity ($p = 1$, $q = 0$), so is its
inverse, and the variance formula adds nothing along that axis. Then $d$ is exact and
$\\hat c = (\\tilde c - q_y d)/(p_y - q_y)$: the variance of $\\hat c_j$ grows only with the $d_j$ records
*in row j*, not with all $n$. On the relationship × education-num table:
""", """
label_only = privacy.local.RandomizedResponse(4.0, (1,), protect_label=True)  # all ε on the label
public = (1.0, 0.0)
T_full = np.stack([adult.aggregated.d[rows] - adult.aggregated.c[rows], adult.aggregated.c[rows]], axis=-1)
var_label_only = privacy.local.cell_variances(T_full, [public, label_only.label_channel])[:, 1]
_, var_all = privacy.local.local_variances(lay, rr, adult.aggregated.d, adult.aggregated.c)
print(f"median sd of ĉ, label only: {np.sqrt(np.median(var_label_only)):.1f}; "
      f"every field randomized: {np.sqrt(np.median(var_all[rows])):.0f}")
"""),
]

if __name__ == "__main__":
    print(write(NAME, cells))
