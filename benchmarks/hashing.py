"""Feature hashing of crossed features (the paper's section 4.3): NLLH and memory against H.

    python benchmarks/hashing.py                   # H = 2^10, 2^12, 2^14 (defaults below)
    python benchmarks/hashing.py --H 1024 16384 --sites 20000 --advertisers 3000 --json

Each H runs ``python -m aggmrf_explore.highcard`` (:func:`aggmrf_explore.highcard.hashed_compare`)
in its own subprocess, so that the peak RSS (``ru_maxrss``) belongs to that run alone.  The
MRF is trained on the aggregates of hashed tables (every table holding ``site`` or
``advertiser`` hashed into H rows, the small tables exact) and a logistic regression on
the same hashed φ_H(x).  The table printed at the end shows: both test NLLHs and the
truth's, K (table rows), ``dense`` = Σ_t Π_{f∈t} M_f (rows the exact tables would need),
the chain's and the parameters' memory, and the peak RSS after building the data and
after training the MRF (the difference is what training costs).  Last, unless ``--no-exact``,
the same data with *exact* tables (``python -m aggmrf_explore.highcard --exact``: layout,
aggregates, a trainer and one iteration, the dense ``gibbs.py`` chain) shows the memory
that hashing avoids: K = Σ Π M_f and its peak RSS.

Measured (defaults: n = 100 000, 5 000 sites, 1 000 advertisers, n' = 1 000, 200
iterations; 2 cores shared with other jobs, load ≈ 5, so the seconds are pessimistic)::

          H        K       dense  NLLH MRF  logistic   truth  RSS data  RSS MRF  MRF s
       1024    11732     5240468    0.0920    0.1028  0.1952       315      368    149
       4096    45524     5240468    0.1066    0.1143  0.1952       315      361    100
      16384   180692     5240468    0.1080    0.1237  0.1952       315      386    224
      exact  5240468     5240468         -         -       -       236     1951      -

(chain + parameters: 0.6, 1.6 and 5.7 MiB for the hashed runs, 320 MiB exact; "RSS data"
of the hashed runs includes scikit-learn, imported before the data.)  The generator's
full sizes, ``python -m aggmrf_explore.highcard --H 4096 --sites 20000 --advertisers
3000``: K = 45 524 instead of Σ Π M_f = 60 920 468, NLLH MRF 0.0771, logistic 0.0863,
truth 0.1871, peak RSS 316 → 378 MiB, MRF 399 s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--H", type=int, nargs="+", default=[2**10, 2**12, 2**14])
    ap.add_argument("--n", type=int, default=100_000, help="training records")
    ap.add_argument("--sites", type=int, default=5_000)
    ap.add_argument("--advertisers", type=int, default=1_000)
    ap.add_argument("--n-gibbs", type=int, default=1_000)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-exact", action="store_true", help="skip the exact-tables run")
    ap.add_argument("--json", action="store_true", help="one JSON object per run, nothing else")
    a = ap.parse_args()
    common = ["--n", str(a.n), "--sites", str(a.sites), "--advertisers", str(a.advertisers),
              "--n-gibbs", str(a.n_gibbs), "--seed", str(a.seed)]  # fmt: skip

    def run(args: list[str]) -> dict:
        cmd = [sys.executable, "-m", "aggmrf_explore.highcard", *args, *common]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        res = json.loads(out.strip().splitlines()[-1])
        if a.json:
            print(json.dumps(res), flush=True)
        return res

    rows = [run(["--H", str(H), "--iterations", str(a.iterations)]) for H in a.H]
    exact = None if a.no_exact else run(["--exact"])
    if a.json:
        return
    print(
        f"n = {a.n}, M_site = {a.sites}, M_advertiser = {a.advertisers}, "
        f"n' = {a.n_gibbs}, {a.iterations} iterations"
    )
    head = (
        f"{'H':>7} {'K':>8} {'dense':>11} {'NLLH MRF':>9} {'logistic':>9} {'truth':>7} "
        f"{'chain MB':>9} {'param MB':>9} {'RSS data':>9} {'RSS MRF':>8} {'MRF s':>6}"
    )
    print(head)
    for r in rows:
        nl = r["nllh_test"]
        print(
            f"{r['H']:>7} {r['K']:>8} {r['dense_rows']:>11} {nl['mrf_hashed']:>9.4f} "
            f"{nl['logistic_hashed']:>9.4f} {nl['truth']:>7.4f} {r['chain_mb']:>9.2f} "
            f"{r['parameters_mb']:>9.2f} {r['peak_rss_mb_after_data']:>9.0f} "
            f"{r['peak_rss_mb_after_mrf']:>8.0f} {r['mrf_seconds']:>6.0f}"
        )
    if exact is not None:
        print(
            f"{'exact':>7} {exact['K']:>8} {exact['K']:>11} {'-':>9} {'-':>9} {'-':>7} "
            f"{exact['chain_mb']:>9.2f} {exact['parameters_mb']:>9.2f} "
            f"{exact['peak_rss_mb_after_data']:>9.0f} {exact['peak_rss_mb_end']:>8.0f} {'-':>6}"
        )


if __name__ == "__main__":
    main()
