from nbtools import answer, code, md, write

NAME = "01_aggregated_data.ipynb"

cells = [
md("""
# 1. Aggregated data and sufficient statistics

**Learning goals.** After this notebook you can

1. compute the *aggregated data* $d$ (counts) and $c$ (label sums) of a dataset, and read the
   indicator vector $\\varphi(x)$ that says in which table rows a record is counted;
2. explain why an ordinary classifier cannot be trained on the tables alone;
3. write the maximum-entropy model $\\pi_{\\mu,\\theta}(x,y) \\propto \\exp(\\varphi(x)\\cdot(\\mu + y\\theta))$ as an
   exponential family whose sufficient statistics are exactly $(d, c)$, and check Lemma 2 numerically;
4. recognise naive Bayes as the special case where only single-feature tables are released.

We follow Gilotte, Ben Yahmed & Rohde, *Learning from aggregated data with a maximum entropy
model*, sections 1–4. Everything here runs in a few seconds.
"""),
"SETUP",
md("""
## 1.1 The records: the paper's Table 1

Five records, three categorical features, a binary label.
"""),
code("""
from aggmrf_explore.datasets import load_dataset

toy = load_dataset("toy")
toy.train
"""),
md("""
## 1.2 Aggregation: from Table 1 to Table 2

**Definition.** A *table* is a set of features. Releasing a table means publishing, for every
combination of its features' values (a *row*), the number of records in that row (a *count*)
and the number of records with label 1 in it (a *label sum*). The paper releases one table for
every pair of features; we also release the single-feature tables and an intercept row (the
total), which are derived from the pairs anyway.

We encode the records as integer codes and aggregate them:
"""),
code("""
from aggmrf_explore import experiment

problem = experiment.prepare("toy")              # encode + layout (singles and pairs) + aggregate
layout, agg = problem.layout, problem.aggregated
print(layout)
print("tables:", layout.table_names)
"""),
md("""
The pair tables, as the paper prints them (rows with a zero count omitted). This cell is checked by
the test suite: if the aggregation changed, the notebook would fail.
"""),
code("""
for pair in [("Feature 1", "Feature 2"), ("Feature 1", "Feature 3"), ("Feature 2", "Feature 3")]:
    frame = agg.table_frame(list(pair))
    frame = frame[frame["count"] > 0].astype({"count": int, "label_sum": int})
    print(frame.to_string(index=False), end="\\n\\n")
""", check=True),
md("""
### An erratum in the paper's Table 2

Compare with the printed Table 2. Three cells differ, and Table 1 proves the printed ones wrong:

| table | row | printed (count, sum) | from Table 1 |
|---|---|---|---|
| Feature 1 × Feature 2 | "1", B | (1, 1) | **(2, 1)**: records 1 and 3 |
| Feature 1 × Feature 2 | "2", B | (2, 1) | **(1, 1)**: record 4 only |
| Feature 1 × Feature 3 | "2", a | (1, 0) | **(1, 1)**: record 4 has label 1 |

A quick consistency check finds such errors without Table 1: every table counts every record once,
so each table's counts sum to $n = 5$ and its label sums to the number of positives, 3. The printed
Feature 1 × Feature 3 label sums add up to 2. Our aggregation passes the check:
"""),
code("""
for t, name in enumerate(layout.table_names):
    rows = slice(layout.offsets[t], layout.offsets[t + 1])
    print(f"{name:24s} counts sum to {agg.d[rows].sum():.0f}, label sums to {agg.c[rows].sum():.0f}")
""", check=True),
md("""
## 1.3 The indicator vector φ(x)

Number all rows of all tables $1, \\dots, K$. For a record $x$, $\\varphi(x) \\in \\{0,1\\}^K$ has a 1 in
exactly one row per table: the row where $x$ is counted. Then the aggregated data are just sums:

$$ d = \\sum_i \\varphi(x_i), \\qquad c = \\sum_i y_i\\, \\varphi(x_i). $$

Worked example, record 1 = ("1", B, a), label 1:
"""),
code("""
X, y = problem.encoded.X_train, problem.encoded.y_train
phi = layout.phi(X)                               # sparse (n, K) matrix
rows_of_record_1 = phi[0].indices
table_of_row = layout.row_table()
for k in rows_of_record_1:
    print(f"row {k:2d} in table {layout.table_names[table_of_row[k]]}")
print("K =", layout.K, "rows; record 1 is counted in", int(phi[0].sum()), "of them (one per table)")
print("d == Σ φ(x_i):", np.array_equal(np.asarray(phi.sum(axis=0)).ravel(), agg.d))
print("c == Σ y_i φ(x_i):", np.array_equal(phi.T @ y, agg.c))
""", check=True),
md("""
## 1.4 Why a classifier cannot train on the tables

Logistic regression minimises $\\sum_i \\ell(y_i, \\sigma(w\\cdot\\varphi(x_i)))$: a sum over *records*, each
with its own features and label. The tables only give sums over rows. Usually many different
datasets have exactly the same tables, and their losses differ.

A small example with three binary features and six records: dataset A and dataset B below have
**identical** tables (every count and every label sum), yet no record of B with label 1 occurs in A.
"""),
code("""
from aggmrf_explore import TableLayout, aggregate

lay3 = TableLayout.all_pairs([2, 2, 2], ["X1", "X2", "X3"])
A = pd.DataFrame([(0,0,0,0), (0,0,0,0), (0,0,0,1), (0,1,1,1), (1,0,1,1), (1,1,0,1)],
                 columns=["X1", "X2", "X3", "y"])
B = pd.DataFrame([(0,0,0,0), (0,0,0,0), (0,0,1,1), (0,1,0,1), (1,0,0,1), (1,1,1,1)],
                 columns=["X1", "X2", "X3", "y"])
agg_A = aggregate(A[["X1", "X2", "X3"]].to_numpy(), A["y"].to_numpy(), lay3)
agg_B = aggregate(B[["X1", "X2", "X3"]].to_numpy(), B["y"].to_numpy(), lay3)
print("same counts d:", np.array_equal(agg_A.d, agg_B.d))
print("same label sums c:", np.array_equal(agg_A.c, agg_B.c))
print("records in common with label 1:", len(A[A.y == 1].merge(B[B.y == 1])))
""", check=True),
md("""
A learner who sees only the tables cannot know whether the positives sit on the even-parity states
(A) or the odd-parity ones (B). It must *choose* a distribution compatible with the tables. The
paper's choice: the one with **maximum entropy**, i.e. the one that adds no structure the tables do
not show. (The toy Table 1 happens to be the only 5-record dataset with its tables; small releases
can leak their records, which is why notebook 4 adds noise.)

## 1.5 Maximum entropy gives an exponential family

**Entropy.** For a distribution $p$ over the states $(x, y)$,
$H(p) = -\\sum_{x,y} p(x,y)\\log p(x,y)$ (in nats). It is 0 for a point mass and largest, $\\log(\\text{number of states})$,
for the uniform distribution: it measures how much a distribution leaves open.

**The problem.** Among all distributions whose *expected* tables per record equal the observed ones,

$$ \\sum_{x,y} p(x,y)\\,\\varphi(x) = d/n, \\qquad \\sum_{x,y} p(x,y)\\,y\\,\\varphi(x) = c/n, \\qquad \\sum_{x,y} p(x,y) = 1, $$

choose the one with the largest $H(p)$. **Derivation** (Lagrange multipliers $\\mu, \\theta \\in \\mathbb{R}^K$ and $\\lambda_0$):

$$ \\mathcal{L}(p) = -\\sum p\\log p + \\mu\\cdot\\Big(\\sum p\\,\\varphi - \\tfrac{d}{n}\\Big) + \\theta\\cdot\\Big(\\sum p\\,y\\varphi - \\tfrac{c}{n}\\Big) + \\lambda_0\\Big(\\sum p - 1\\Big), $$

$$ \\frac{\\partial\\mathcal{L}}{\\partial p(x,y)} = -\\log p(x,y) - 1 + \\varphi(x)\\cdot\\mu + y\\,\\varphi(x)\\cdot\\theta + \\lambda_0 = 0
\\quad\\Longrightarrow\\quad p(x,y) = \\frac{1}{Z}\\exp\\big(\\varphi(x)\\cdot(\\mu + y\\,\\theta)\\big), \\quad Z = e^{1-\\lambda_0}. $$

So the max-ent distribution belongs to an exponential family, and its parameters are the Lagrange
multipliers: $\\mu$ of the count constraints, $\\theta$ of the label-sum constraints. The converse is what we
use later: if a member $\\pi$ of the family matches the tables, then for any $p$ matching them too,
$\\sum p\\log\\pi = \\sum \\pi\\log\\pi$ (because $\\log\\pi$ is linear in $\\varphi(x)$ and $y\\varphi(x)$, whose expectations agree), hence

$$ H(\\pi) - H(p) = \\sum p\\log p - \\sum p \\log \\pi = \\mathrm{KL}(p\\,\\|\\,\\pi) \\ge 0: $$

$\\pi$ *is* the max-ent distribution, and it is unique. We check this on the toy table in a moment.

**Definition.** For parameters $\\mu, \\theta \\in \\mathbb{R}^K$,

$$ \\pi_{\\mu,\\theta}(x, y) = \\frac{1}{Z_{\\mu,\\theta}} \\exp\\big(\\varphi(x)\\cdot(\\mu + y\\,\\theta)\\big),
   \\qquad y \\in \\{0, 1\\}. $$

Bayes' rule gives the classifier: the $\\mu$ terms cancel and
$\\pi(Y=1 \\mid x) = \\dfrac{e^{\\varphi(x)\\cdot(\\mu+\\theta)}}{e^{\\varphi(x)\\cdot\\mu} + e^{\\varphi(x)\\cdot(\\mu+\\theta)}} = \\sigma(\\varphi(x)\\cdot\\theta)$,
a logistic regression on the features $\\varphi(x)$ (one-hot plus all pair crosses).

Check it on the toy layout with random parameters, by enumerating all 8 states $x$:
"""),
code("""
from aggmrf_explore import exact
from aggmrf_explore.mrf import sigmoid

rng = np.random.default_rng(0)
mu, theta = rng.normal(size=layout.K), rng.normal(size=layout.K)
states = exact.all_states(layout)                       # the 8 states, shape (8, 3)
R = layout.rows(states)                                 # the rows where each state is counted
joint = np.exp(np.stack([mu[R].sum(1), (mu + theta)[R].sum(1)], axis=1))  # ∝ π(x, y), y = 0, 1
by_bayes = joint[:, 1] / joint.sum(axis=1)
print("Bayes rule == σ(φ(x)·θ):", np.allclose(by_bayes, sigmoid(theta[R].sum(1))))
""", check=True),
md("""
### Lemma 2, derived: the tables are as good as the records

Let $N(d, c)$ be the number of ordered datasets of $n$ records whose tables are $(d, c)$. The probability
of observing the tables sums the probabilities of those datasets:

$$ \\begin{aligned}
P_{\\mu,\\theta}(D = d, C = c) &= \\sum_{(x_i, y_i)_i \\,\\text{with tables}\\,(d, c)} \\;\\prod_{i=1}^n \\pi_{\\mu,\\theta}(x_i, y_i) \\\\
&= \\sum \\;\\exp\\Big(\\mu\\cdot\\sum_i \\varphi(x_i) + \\theta\\cdot\\sum_i y_i\\varphi(x_i)\\Big)\\,/\\,Z_{\\mu,\\theta}^{\\,n} \\\\
&= \\sum \\;\\exp\\big(\\mu\\cdot d + \\theta\\cdot c\\big)\\,/\\,Z_{\\mu,\\theta}^{\\,n} \\qquad\\text{(every term is the same)} \\\\
&= N(d, c)\\;\\times\\;\\underbrace{\\exp\\big(\\mu\\cdot d + \\theta\\cdot c - n\\log Z_{\\mu,\\theta}\\big)}_{\\text{likelihood of the records}}.
\\end{aligned} $$

$N(d, c)$ does not depend on $(\\mu, \\theta)$: the likelihood of the tables is the likelihood of the records times a
constant, so both have the same maximiser and the same gradient. Check it on datasets A and B of §1.4
(same tables, different records): their record log-likelihoods are equal for any parameters, and
equal to $\\mu\\cdot d + \\theta\\cdot c - n\\log Z$.
"""),
code("""
from scipy.special import logsumexp

rng = np.random.default_rng(1)
mu3, theta3 = rng.normal(size=lay3.K), rng.normal(size=lay3.K)
R_all = lay3.rows(exact.all_states(lay3))
log_z3 = logsumexp(np.concatenate([mu3[R_all].sum(1), (mu3 + theta3)[R_all].sum(1)]))

def record_loglik(frame):
    R_ = lay3.rows(frame[["X1", "X2", "X3"]].to_numpy().astype(np.int32))
    return np.sum(mu3[R_].sum(1) + frame["y"].to_numpy() * theta3[R_].sum(1)) - len(frame) * log_z3

from_tables = mu3 @ agg_A.d + theta3 @ agg_A.c - agg_A.n * log_z3
print("log-likelihood of A:", round(record_loglik(A), 6), " of B:", round(record_loglik(B), 6))
print("both == μ·d + θ·c − n log Z:", np.isclose(record_loglik(A), from_tables) and np.isclose(record_loglik(B), from_tables))
""", check=True),
md("""
### The gradient of Lemma 2, numerically

The log-likelihood of the records under $\\pi_{\\mu,\\theta}$ is
$L(\\mu,\\theta) = \\mu\\cdot d + \\theta\\cdot c - n \\log Z_{\\mu,\\theta}$: it depends on the data **only
through $(d, c)$** (sufficient statistics). Its gradient is

$$ \\nabla_\\mu L = d - \\mathbb{E}_{\\mu,\\theta}[D], \\qquad \\nabla_\\theta L = c - \\mathbb{E}_{\\mu,\\theta}[C], $$

where $\\mathbb{E}[D], \\mathbb{E}[C]$ are the tables *expected* from $n$ records drawn from the model.
We check it against finite differences of the full-data log-likelihood:
"""),
code("""
R_data = layout.rows(X)

def loglik(mu, theta):
    a, b = mu[R].sum(1), theta[R].sum(1)
    log_z = logsumexp(np.concatenate([a, a + b]))
    return np.sum(mu[R_data].sum(1) + y * theta[R_data].sum(1)) - len(y) * log_z

Ed, Ec = exact.expected_statistics(layout, mu, theta, agg.n)
h, fd_mu, fd_theta = 1e-6, [], []
for k in range(layout.K):
    e = np.zeros(layout.K); e[k] = h
    fd_mu.append((loglik(mu + e, theta) - loglik(mu - e, theta)) / (2 * h))
    fd_theta.append((loglik(mu, theta + e) - loglik(mu, theta - e)) / (2 * h))
print("∂L/∂μ == d − E[D]:", np.allclose(fd_mu, agg.d - Ed, atol=1e-5))
print("∂L/∂θ == c − E[C]:", np.allclose(fd_theta, agg.c - Ec, atol=1e-5))
""", check=True),
md("""
So at the maximum of the likelihood the model reproduces the tables: $\\mathbb{E}[D] = d$ and
$\\mathbb{E}[C] = c$. The exact solver (`exact.fit_exact`) enumerates every state and maximises
$L$ with L-BFGS; with a tiny L2 penalty (the toy has an empty cell, (A, a), whose parameter would
otherwise run to $-\\infty$) the expected tables match the observed ones:
"""),
code("""
model = exact.fit_exact(agg, lambda_mu=1e-6, lambda_theta=1e-6)
Ed, Ec = exact.expected_statistics(layout, model.mu, model.theta, agg.n)
print("max |E[D] − d| < 0.05:", np.abs(Ed - agg.d).max() < 0.05)
print("max |E[C] − c| < 0.05:", np.abs(Ec - agg.c).max() < 0.05)
""", check=True),
md("""
**Max-ent, checked.** The five records themselves define a distribution $\\hat p$ (mass 1/5 on each
observed $(x, y)$) that matches the tables exactly. The fitted model $\\pi$ matches them too, so by the
derivation above $H(\\pi) - H(\\hat p) = \\mathrm{KL}(\\hat p\\,\\|\\,\\pi) \\ge 0$:
"""),
code("""
px, p1 = exact.state_probabilities(layout, model.mu, model.theta)     # π(x), π(Y=1|x) for the 8 states
pi = np.concatenate([px * (1 - p1), px * p1])                          # π(x, y): y = 0 block, then y = 1
index = {tuple(s): k for k, s in enumerate(states)}
p_hat = np.zeros(16)
for xi, yi in zip(X, y):
    p_hat[index[tuple(xi)] + 8 * yi] += 1 / len(y)

def entropy(p):
    p = p[p > 0]
    return -np.sum(p * np.log(p))

kl = np.sum(p_hat[p_hat > 0] * np.log(p_hat[p_hat > 0] / pi[p_hat > 0]))
print(f"H(p̂) = {entropy(p_hat):.2f} nats (5 equally likely records: log 5 = {np.log(5):.2f})")
print(f"H(π) = {entropy(pi):.2f} nats; uniform over 16 states: log 16 = {np.log(16):.2f}")
print("H(π) − H(p̂) == KL(p̂‖π) ≥ 0:", abs(entropy(pi) - entropy(p_hat) - kl) < 0.02 and kl >= 0)
""", check=True),
md("""
Here the two entropies are equal: the toy's pair tables leave nothing open (§1.4: Table 1 is the only
5-record dataset with these tables), so the max-ent model *is* the empirical distribution. With real
data the tables leave more open, and $H(\\pi) > H(\\hat p)$ (exercise 4).
"""),
code("""
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
for ax, obs, exp_, what in [(axes[0], agg.d, Ed, "counts"), (axes[1], agg.c, Ec, "label sums")]:
    ax.plot([0, 5.5], [0, 5.5], color="0.6", ls="--", label="E = observed")
    ax.scatter(obs, exp_, color="C0", zorder=3, label="one table row")
    ax.set_xlabel(f"observed {what} (records)")
    ax.set_ylabel(f"expected {what} under the fit (records)")
    ax.set_title(f"Max-ent fit reproduces the {what}")
    ax.legend(loc="upper left")
plt.show()
"""),
md("""
What does the fitted model predict for the five records? (Train = test here: 5 records only.)
With only five records the pair tables pin every label down: each record's label is already
determined by one of its pair rows (e.g. Feature 2 × Feature 3 = (B, a) holds two positives and no
negatives), so the model is certain. On real data the rows mix labels and the predictions are
proper probabilities.
"""),
code("""
pred = toy.train.copy()
pred["P(Y=1|x), max-ent"] = model.predict_proba(X)[:, 1].round(2)
pred
"""),
md("""
## 1.6 Naive Bayes is the single-table special case

Release only the single-feature tables. Then $\\varphi(x)\\cdot(\\mu + y\\theta) = \\sum_f (\\mu_f[x_f] + y\\,\\theta_f[x_f])$
(plus the intercept) and the model factorises:
$\\pi(x \\mid y) = \\prod_f \\pi(x_f \\mid y)$, the conditional independence of **naive Bayes**. The
maximum-entropy fit of the single tables is therefore naive Bayes with the empirical
$P(x_f \\mid y)$. Check it on 5 000 synthetic records with three features of 2, 3 and 4 values:
"""),
code("""
rng = np.random.default_rng(7)
Xs = np.column_stack([rng.integers(0, m, 5000) for m in (2, 3, 4)])
ys = (rng.random(5000) < 0.3 + 0.2 * (Xs[:, 0] == 1) + 0.1 * (Xs[:, 2] == 3)).astype(int)
singles = TableLayout.all_pairs([2, 3, 4], pairs=False)            # single tables only
nb_model = exact.fit_exact(aggregate(Xs, ys, singles))
grid = exact.all_states(singles)

def naive_bayes(x):
    joint = [np.mean(ys == v) * np.prod([np.mean(Xs[ys == v, f] == x[f]) for f in range(3)])
             for v in (0, 1)]
    return joint[1] / sum(joint)

p_nb = np.array([naive_bayes(x) for x in grid])
p_me = nb_model.predict_proba(grid)[:, 1]
print("max |max-ent − naive Bayes| < 1e-3:", np.abs(p_me - p_nb).max() < 1e-3)
""", check=True),
code("""
fig, ax = plt.subplots(figsize=(4.6, 4.2))
ax.plot([0, 1], [0, 1], color="0.6", ls="--", label="equal")
ax.scatter(p_nb, p_me, color="C1", zorder=3, label="one state x (24 states)")
ax.set_xlabel("naive Bayes P(Y=1|x)")
ax.set_ylabel("max-ent MRF P(Y=1|x), single tables")
ax.set_title("Single tables only: max-ent = naive Bayes")
ax.legend(loc="upper left")
plt.show()
"""),
md("""
With pair tables the model keeps every pairwise correlation that naive Bayes throws away: it is
a *generalisation* of naive Bayes. Notebook 2 trains it on data too large to enumerate, and
notebook 3 shows where even pairs are not enough.

## Exercises

(Each answer is in a collapsed block below the questions; "Run All" does not open it.)

1. Add the triple table (Feature 1, Feature 2, Feature 3) to the toy layout
   (`TableLayout(layout.n_modalities, layout.tables[1:] + [(0, 1, 2)], layout.feature_names)`).
   How many rows $K$ now? What does the max-ent model predict for the five records, and why?
2. Without looking at Table 1, show that the printed Table 2 cannot be right by summing label sums.
   Which single cell would you change in the printed F1 × F3 table?
3. In §1.4, are datasets A and B distinguishable from the *single* tables? From the pair tables of
   (X1, X2) alone? What is the smallest set of tables that separates them?
4. Compute $H(\\hat p)$ and $H(\\pi)$ for the 5 000 synthetic records of §1.6 (single tables). How large is the gap, and why?
"""),
answer("""
**1.** $K$ = 1 intercept + singles 2+2+2 + pairs 4+4+4 + triple 8 = 27 rows. The triple table is the full
joint of the features, so the max-ent model reproduces the empirical distribution: $P(Y=1\\mid x)$ is the
observed label rate of each state (1 where all its records have label 1, 0 where none do).
""", """
tri = TableLayout(layout.n_modalities, layout.tables[1:] + [(0, 1, 2)], layout.feature_names)
m3 = exact.fit_exact(aggregate(X, y, tri), lambda_mu=1e-4, lambda_theta=1e-4)
print("K =", tri.K)
print("P(Y=1|x):", m3.predict_proba(X)[:, 1].round(2), " labels:", y)
"""),
answer("""
**2.** Each table counts every record once, so each table's label sums add up to the number of
positives, 3, as the other printed tables do. The printed F1 × F3 label sums add up to 2: one of them is
1 too small. The cell ("2", a) holds record 4, which has label 1: change its label sum from 0 to 1.
"""),
answer("""
**3.** All pair tables of A and B are equal, and every table they determine (the single tables, the
intercept) is then equal too; so the single tables, or any one pair table alone, cannot separate them.
Only the triple table $(X_1, X_2, X_3)$, i.e. the records themselves, does:
""", """
singles3 = TableLayout.all_pairs([2, 2, 2], pairs=False)
triple3 = TableLayout.all_pairs([2, 2, 2], triples=True)
for name, lay in [("singles", singles3), ("all pairs", lay3), ("with the triple", triple3)]:
    a_ = aggregate(A[["X1", "X2", "X3"]].to_numpy(), A["y"].to_numpy(), lay)
    b_ = aggregate(B[["X1", "X2", "X3"]].to_numpy(), B["y"].to_numpy(), lay)
    print(f"{name:16s} tables equal: {np.array_equal(a_.d, b_.d) and np.array_equal(a_.c, b_.c)}")
"""),
answer("""
**4.** The 5 000 records spread over 48 states $(x, y)$, so $H(\\hat p)$ is at most $\\log 48$; the single tables fix only
the marginals of each feature given the label, and the max-ent model spreads the rest as evenly as those
allow. Here the records were drawn with independent features, so the gap is small: $\\hat p$ is already
close to the naive-Bayes distribution, and what remains is sampling noise (KL of a few thousandths).
""", """
px_s, p1_s = exact.state_probabilities(singles, nb_model.mu, nb_model.theta)
pi_s = np.concatenate([px_s * (1 - p1_s), px_s * p1_s])
idx_s = {tuple(s): k for k, s in enumerate(grid)}
p_hat_s = np.zeros(2 * len(grid))
for xi, yi in zip(Xs, ys):
    p_hat_s[idx_s[tuple(xi)] + len(grid) * yi] += 1 / len(ys)
print(f"H(p̂) = {entropy(p_hat_s):.4f}, H(π) = {entropy(pi_s):.4f} nats, log 48 = {np.log(48):.4f}")
"""),
]

if __name__ == "__main__":
    print(write(NAME, cells))
