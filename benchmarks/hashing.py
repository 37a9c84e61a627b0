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
after training the MRF (the difference is what training costs).
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
    ap.add_argument("--json", action="store_true", help="one JSON object per H, nothing else")
    a = ap.parse_args()
    rows = []
    for H in a.H:
        cmd = [sys.executable, "-m", "aggmrf_explore.highcard", "--H", str(H), "--n", str(a.n),
               "--sites", str(a.sites), "--advertisers", str(a.advertisers),
               "--n-gibbs", str(a.n_gibbs), "--iterations", str(a.iterations),
               "--seed", str(a.seed)]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        res = json.loads(out.strip().splitlines()[-1])
        rows.append(res)
        if a.json:
            print(json.dumps(res), flush=True)
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


if __name__ == "__main__":
    main()
