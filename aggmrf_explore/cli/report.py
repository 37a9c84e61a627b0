"""What the command line shows: the progress bar, the ``error:`` / ``warning:`` lines, the
JSON noise summary and the text reports of ``run``, ``run --tables``, ``xor`` and ``sweep``.

Everything the user reads on stderr goes through :func:`error`, :func:`warn`, :func:`note`
or :class:`ProgressBar`; stdout carries the result (a table or one JSON object).
"""

from __future__ import annotations

import json
import sys

from ..errors import AggMRFError

__all__ = [
    "ProgressBar",
    "status",
    "error",
    "warn",
    "note",
    "print_json",
    "noise_summary",
    "print_run",
    "print_tables_run",
    "print_xor",
    "print_sweep",
]


QUIET = {"on": False}  # ``--quiet``: no progress bars (set once per command by cli.main)


class ProgressBar:
    """A progress bar on stderr (tqdm), drawn only when stderr is a terminal and the
    command is not ``--quiet``.

    Called as ``bar(done, total)`` (iterations or steps done out of ``total``); the report
    function of :class:`aggmrf_explore.callbacks.Progress` during training.
    """

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = (sys.stderr.isatty() and not QUIET["on"]) if enabled is None else enabled
        self._bar = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=self.label,
                file=sys.stderr,
                leave=True,
                unit="it",
                dynamic_ncols=True,
            )
        self._bar.total = total
        self._bar.update(done - self._bar.n)
        if done >= total:
            self._bar.close()


def status(message: str) -> None:
    """One line on stderr saying what a long step without a bar is doing ("preparing the
    data…"); shown, like the bars, only on a terminal and without ``--quiet``."""
    if sys.stderr.isatty() and not QUIET["on"]:
        print(f"{message}…", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- stderr lines
def error(exc: AggMRFError | str) -> int:
    """Print the one ``error: …`` line of a failed command; returns its exit status, 2."""
    from .channel import one_line

    print(f"error: {one_line(exc)}", file=sys.stderr)
    return 2


def warn(message: str) -> None:
    """One ``warning: …`` line on stderr (the command goes on)."""
    from .channel import one_line

    print(f"warning: {one_line(message)}", file=sys.stderr)


def note(message: str) -> None:
    """One ``note: …`` line on stderr (an option that has no effect here, …)."""
    print(f"note: {message}", file=sys.stderr)


# ---------------------------------------------------------------------- stdout
def print_json(out: dict, **kwargs) -> None:
    """The command's result as one indented JSON object on stdout."""
    print(json.dumps(out, indent=2, **kwargs))


def noise_summary(mech, accounting: str, generator: str | None = None) -> dict:
    """The JSON "noise" object of a mechanism (or of no noise: ``mech`` None): its
    ``to_dict()`` (σ for every mechanism), ``accounting`` and, for a release, ``generator``."""
    if mech is None:
        return {"mechanism": "none"}
    out = {**mech.to_dict(), "accounting": accounting}
    if generator is not None:
        out["generator"] = generator
    return out


def budget_text(noise: dict) -> str:
    """ "ε=1 δ=1e-07", or "ε, δ unknown" for a release that declares only its noise level."""
    if noise.get("epsilon") is None:
        return "ε, δ unknown"
    return f"ε={noise['epsilon']:g} δ={noise['delta']:g}"


def print_run(out: dict) -> None:
    """The text report of ``run``: data, noise, settings, then one line per model."""
    print(
        f"dataset {out['dataset']}: {out['n_train']} train / {out['n_test']} test records, "
        f"{out['n_features']} features, {out['n_tables']} tables, {out['n_rows']} rows"
    )
    noise = out["noise"]
    if noise["mechanism"] != "none":
        print(
            f"noise: {noise['mechanism']} {budget_text(noise)} "
            f"σ={noise['sigma']:.2f} ({noise['accounting']} accounting)"
        )
    whole = out.get("privacy")
    if whole:  # a release's own statement: counts and schema together
        print(
            f"release: ε={whole['epsilon']:g} δ={whole['delta']:g} in total "
            f"(schema {whole['schema']['source']}: ε={whole['schema']['epsilon']:g})"
        )
    s = out["settings"]
    print(
        f"MRF: {s['iterations']} iterations, n'={s['n_gibbs']}, λμ={s['lambda_mu']:g}, "
        f"λθ={s['lambda_theta']:g}, αμ={s['step_mu']:.4g}, αθ={s['step_theta']:.4g}, "
        f"{s['gradient']} gradient{', noise-aware' if s['noise_aware'] else ''}"
    )
    width = max([16, *(len(name) + 2 for name in out["models"])])  # the longest name + 2
    print(f"\n{'model':<{width}}{'test NLLH':>10}{'seconds':>10}")
    for name, m in out["models"].items():
        score = m.get("nllh_test")
        shown = f"{score:>10.4f}" if score is not None and score == score else f"{'—':>10}"
        print(f"{name:<{width}}{shown}{m['seconds']:>10.1f}")


def print_tables_run(out: dict) -> None:
    """The text report of ``run --tables``: :func:`print_run` (test NLLH "—" without test
    records), then the aggregated-only validation scores and the λθ-auto grid if any."""
    m = out["models"]["mrf"]
    printable = dict(out)
    printable["models"] = {"mrf": {"nllh_test": m.get("nllh_test"), "seconds": m["seconds"]}}
    print_run(printable)
    sup = out.get("suppression")
    if sup:  # rows absent from tables with a threshold, trained as 0 ≤ d ≤ k
        print(
            f"suppressed rows: {sup['suppressed_rows']} of {sup['rows']} in "
            f"{sup['tables_with_threshold']} table(s) with a threshold "
            "(absent ⇔ true count ≤ k; trained as 0 ≤ d ≤ k)"
        )
        if "outside" in sup:
            print(
                f"  the model's d̂ on them: {sup['outside']} outside [0, k] "
                f"(largest d̂/k = {sup['max_ratio']:.2f})"
            )
        for name, v in list(sup["tables"].items())[:8]:
            extra = f", d̂ > k on {v['outside']}" if "outside" in v else ""
            print(
                f"  {name:<28} k = {v['threshold']:g}: {v['suppressed']} of {v['rows']} rows{extra}"
            )
        if len(sup["tables"]) > 8:
            print(f"  … and {len(sup['tables']) - 8} more tables (--json lists every one)")
    if "validation_csv" in out:
        v = out["validation_csv"]
        print(
            f"chosen on the labelled sample ({v['n_sample']} records): λθ = "
            f"{v['lambda_theta']:g}, {v['iterations']} iterations "
            f"(sample NLLH {v['sample_nllh']:.4f})"
        )
    if "aggregated_nllh" in m:
        print("aggregated-only validation on the second release (see aggmrf_explore.selection):")
        print(f"  cross-fit NLLH   {m['cross_fit_nllh']:.4f}  (estimates the record-level NLLH)")
        print(f"  cell-level NLLH  {m['aggregated_nllh']:.4f}  (label sums of its table cells)")
    if "lambda_theta_auto" in out:
        a = out["lambda_theta_auto"]
        print(f"λθ auto ({a['method']}): {a['lambda_theta']:g} in {a['seconds']:.0f}s")
        for row in a["grid"]:
            print(f"  λθ={row['lambda_theta']:<10.4g} score {row['score']:.4f}")


def print_xor(out: dict) -> None:
    """The text report of ``xor``: P(y = 1 | x) per state for truth, max-ent (infinite data
    and the n records' own tables), MRF, logistic; then the two gaps over the states that occur."""
    print(
        f"{'x':<10}{'P(x)':>6}{'truth':>8}{'max-ent':>9}{'max-ent (tables)':>18}{'MRF':>8}"
        f"{'logistic':>10}"
    )
    for s in out["states"]:
        print(
            f"{str(s['x']):<10}{s['p_x']:>6.2f}{s['truth']:>8.3f}{s['maxent_exact']:>9.3f}"
            f"{s['maxent_tables']:>18.3f}{s['mrf']:>8.3f}{s['logistic']:>10.3f}"
        )
    seen = [s for s in out["states"] if s["p_x"] > 0]
    pcd = max(abs(s["mrf"] - s["maxent_tables"]) for s in seen)
    sampling = max(abs(s["maxent_tables"] - s["maxent_exact"]) for s in seen)
    print(
        "(states with P(x) = 0 never occur; the max-ent and MRF values there are extrapolations)\n"
        f"MRF (PCD) against the exact max-ent of the same tables: max |ΔP| {pcd:.1e} over the "
        f"states that occur;\nthose tables' max-ent against infinite data's: {sampling:.1e} "
        f"(the sampling error of {out['n']:,} records)."
    )


def print_sweep(frame, csv_path, png_path) -> None:
    """The text report of ``sweep``: its rows (a DataFrame; a missing value, such as the sd
    of a single run, shows as "–") and the files written."""
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep="–"))
    print(f"\nwrote {csv_path} and {png_path}")
