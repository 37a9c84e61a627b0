"""The argparse parser of ``aggmrf-explore``: one sub-parser per command, option groups shared.

Only the shape of the command line lives here (flags, types, defaults, help); every number
is range-checked while parsing (:mod:`.numbers`); what the values mean and whether they fit
together is checked in :mod:`.args`.  A parse error raises :class:`UsageError` (one
``error:`` line from ``main``), never argparse's usage + exit.
"""

from __future__ import annotations

import argparse

from .. import __version__
from ..datasets.catalog import DATASET_NAMES
from ..errors import AggMRFError
from ..settings import setting
from ..tables.budget import DEFAULT_MAX_ROWS
from . import numbers

__all__ = ["build_parser", "lambda_theta_arg", "UsageError", "Parser", "INPUTS", "input_paths"]

lambda_theta_arg = numbers.lambda_theta
BIG = 10**9
#: the flags (argparse destinations) naming files or directories a command reads
INPUTS = (
    "csv",
    "test_csv",
    "tables",
    "validation_tables",
    "validation_csv",
    "schema",
    "model",
    "pairs",
    "singles",
)


def input_paths(args: argparse.Namespace) -> list[str]:
    """The paths a parsed command line reads (its :data:`INPUTS` that were given)."""
    return [str(v) for k in INPUTS if (v := getattr(args, k, None))]


class UsageError(AggMRFError):
    """A command line argparse cannot parse (unknown flag, bad value, missing argument)."""


class Parser(argparse.ArgumentParser):
    """argparse, with its errors raised as :class:`UsageError` instead of usage + exit 2."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} — see `{self.prog} --help`.")


def _add_data_options(p: argparse.ArgumentParser, unseen: str = "other") -> None:
    """The data flags; ``unseen``: the default of ``--unseen`` (it is stored in a release's
    schema: ``predict`` then maps a new value to "(other)" and warns)."""
    g = p.add_argument_group("data")
    src = g.add_mutually_exclusive_group()
    src.add_argument("--dataset", help=", ".join(DATASET_NAMES))
    src.add_argument("--csv", help="your own CSV file (needs --label)")
    g.add_argument(
        "--label",
        help="label column of --csv (binary: 0/1, yes/no, true/false, …); "
        "with --tables: which label of a release with several, or 'all'",
    )
    g.add_argument("--test-csv", help="a separate test CSV (default: split --csv)")
    g.add_argument(
        "--test-fraction",
        type=numbers.fraction,
        default=0.3,
        help="test share when splitting, between 0 and 1 (0.3)",
    )
    g.add_argument("--features", help="comma-separated feature columns to keep")
    g.add_argument("--drop-features", help="comma-separated feature columns to drop")
    g.add_argument(
        "--n",
        type=numbers.integer(1, BIG),
        default=None,
        help="records (generated data) or a subsample",
    )
    g.add_argument(
        "--bins",
        type=numbers.integer(2, 1000),
        default=10,
        help="bins for numeric columns (deciles: 10)",
    )
    g.add_argument(
        "--min-count",
        type=numbers.integer(1, BIG),
        default=1,
        help="--csv: merge values seen fewer times into '(other)' (1: off)",
    )
    g.add_argument(
        "--max-rows",
        type=numbers.integer(1, 10**12),
        default=DEFAULT_MAX_ROWS,
        help=f"size budget: refuse tables with more rows ({DEFAULT_MAX_ROWS:,})",
    )
    g.add_argument(
        "--unseen",
        choices=("error", "other"),
        default=unseen,
        help="--csv: a value never seen in training counts as '(other)', with a "
        f"warning, or is an error (default: {unseen})",
    )
    g.add_argument("--no-singles", action="store_true", help="do not release single-feature tables")
    g.add_argument("--no-pairs", action="store_true", help="do not release pair tables")
    _setting_flag(g, "seed", default=0)


def _setting_flag(g, name: str, extra: str = "", **kw) -> None:
    """The flag of setting ``name``: its type, help and metavar from its one declaration
    (:data:`aggmrf_explore.settings.SETTINGS`); ``extra`` is appended to the help."""
    decl = setting(name)
    if decl.kind == "choice":
        kw.setdefault("metavar", "{" + ",".join(decl.choices) + "}")
    help_text = f"{decl.help} {decl.domain().capitalize()}.{' ' + extra if extra else ''}"
    g.add_argument(decl.flag, type=numbers.of(name), help=help_text, **kw)


def _add_train_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "training (each default follows a documented rule: mrf.default_settings)"
    )
    _setting_flag(
        g, "iterations", "Default max(3000, ⌈6/α_θ⌉): 3 000 on Adult and Bank.", default=None
    )
    _setting_flag(g, "n_gibbs", "Default min(n, max(10 000, min(⌈n/10⌉, 400 000))).", default=None)
    _setting_flag(g, "lambda_mu", default=None)
    g.add_argument(
        "--lambda-theta",
        type=lambda_theta_arg,
        default=None,
        help=f"{setting('lambda_theta').help} A number ≥ 0 and ≤ 1e+06, or 'auto' "
        "(chosen from the tables alone, run only).",
    )
    _setting_flag(g, "step_mu", default=None)
    _setting_flag(g, "step_theta", default=None)
    _setting_flag(g, "gradient", default=None)
    g.add_argument(
        "--no-precondition",
        action="store_true",
        help=f"turn off {setting('precondition').label}: {setting('precondition').help}",
    )


def _add_noise_options(p: argparse.ArgumentParser, sweep: bool = False) -> None:
    g = p.add_argument_group("privacy noise (a simulation: the noise is drawn from --seed)")
    from ..privacy import central_names

    # every registered mechanism (a sweep: the central noisy ones)
    takes = central_names()[1:] if sweep else setting("mechanism").choices
    g.add_argument(
        "--mechanism",
        type=numbers.of("mechanism", takes),
        metavar="{" + ",".join(takes) + "}",
        default="gaussian" if sweep else "none",
        help="laplace, gaussian: float noise; discrete_*: integer noise, as a release for "
        "others gets (see `aggregate`)"
        + ("" if sweep else "; local: randomized response on every record (ε per person, no δ)"),
    )
    _add_budget_options(g, sweep)
    if not sweep:
        g.add_argument(
            "--noise-aware",
            action=argparse.BooleanOptionalAction,
            default=None,
            help=f"{setting('noise_aware').help} Default: on when a release "
            "(--tables) declares its noise, else off.",
        )


def _add_budget_options(g, sweep: bool = False) -> None:
    """ε, δ, accounting and calibration: shared by the simulations and `aggregate`."""
    if not sweep:
        _setting_flag(g, "epsilon", default=None)
    _setting_flag(g, "delta", "Default 1e-7.", default=None)
    # (no default here: a flag given where its mechanism does not use it is refused;
    # cli.args.accounting_of gives the declared default)
    _setting_flag(g, "accounting", default=None)
    _setting_flag(g, "calibration", "The discrete Gaussian is calibrated by its zCDP bound.")


def _add_publish_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "privacy noise (integer noise from the operating system's secure generator)"
    )
    from ..privacy.registry import release_names

    g.add_argument(
        "--mechanism",
        choices=release_names(),
        default="none",
        help="laplace: discrete Laplace (ε-DP); gaussian: discrete Gaussian "
        "((ε, δ)-DP); none: the exact tables, not private",
    )
    _add_budget_options(g)
    g.add_argument(
        "--earlier-release",
        action="append",
        default=[],
        metavar="RELEASE",
        help="a release of the same records made before (its release.json or "
        "directory; repeatable): the report adds up the privacy spent",
    )
    g.add_argument(
        "--insecure-seed",
        type=numbers.seed,
        default=None,
        help="draw the noise from this seed instead: anyone who knows or guesses "
        "it recovers every count. For tests and classroom demonstrations only; "
        "the release says it is insecure",
    )
    g.add_argument("--noise-aware", action="store_true", help=argparse.SUPPRESS)


def _add_release_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("training on a release (no records needed)")
    g.add_argument(
        "--tables",
        help="train on an aggregated release (directory or long CSV), "
        "no records; --test-csv scores it on records if you have some",
    )
    g.add_argument("--validation-tables", help="a second release: aggregated-only validation")
    g.add_argument(
        "--lenient", action="store_true", help="inconsistent tables are warnings, not errors"
    )
    g.add_argument("--export-model", help="write the fitted model (.json or .csv)")
    g.add_argument(
        "--validation-csv",
        help="a small labelled granular sample: choose λθ and the iteration count "
        "on it (instead of the records-free split); run --tables only",
    )


def _add_scale_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("bigger data: samplers and a Dask cluster")
    decl = setting("sampler")
    g.add_argument(
        decl.flag,
        type=numbers.of("sampler"),
        metavar="{" + ",".join(decl.choices) + "}",
        default=decl.default,
        help=decl.help,
    )
    g.add_argument(
        "--scheduler",
        default=None,
        help="shard the Gibbs samples on Dask: local:N (a LocalCluster of N worker "
        "processes) or tcp://HOST:PORT (an existing scheduler); --sampler means "
        "the same as without it, so the model is the same",
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command: run, aggregate, predict, xor, sweep, import-criteo, serve,
    lessons (``args.command``)."""
    parser = Parser(
        prog="aggmrf-explore",
        description="Learn a logistic model from aggregated (and privacy-noised) contingency tables.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    quiet = Parser(add_help=False)
    quiet.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bars on stderr (they are off anyway when stderr is not a terminal)",
    )

    run = sub.add_parser(
        "run", help="train the MRF and the baselines, report test NLLH", parents=[quiet]
    )
    _add_data_options(run)
    _add_train_options(run)
    _add_noise_options(run)
    run.add_argument("--no-baselines", action="store_true", help="skip the baselines")
    run.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    _add_release_options(run)
    _add_scale_options(run)

    agg = sub.add_parser(
        "aggregate", help="aggregate records into a release (tables + release.json)"
    )
    _add_data_options(agg)
    _add_publish_options(agg)
    agg.add_argument(
        "--out", required=True, help="output directory (or FILE.csv with --format long)"
    )
    agg.add_argument(
        "--format",
        choices=("dir", "long"),
        default="dir",
        help="dir: one CSV per table + release.json; long: one CSV + FILE.json",
    )
    agg.add_argument(
        "--schema",
        help="the schema to publish: a declared-schema JSON file (categories and bin edges "
        "from public knowledge, see the README) or an earlier release (its release.json); "
        "default: the dataset's declared schema (Adult, Bank), else one chosen with "
        "differential privacy (--schema-epsilon)",
    )
    agg.add_argument(
        "--schema-epsilon",
        type=numbers.number(0.0, 1e4, lo_open=True),
        default=None,
        help="ε spent choosing the schema from the records when none is declared "
        "(default: half of --epsilon; added to the release's total in release.json)",
    )
    agg.add_argument(
        "--schema-from-records",
        action="store_true",
        help="fit the schema on the records WITHOUT privacy (bin edges and categories "
        "depend on single records; the file says it is not private)",
    )

    pr = sub.add_parser("predict", help="probabilities of records under an exported model")
    pr.add_argument("--model", required=True, help="model file written by run --export-model")
    pr.add_argument("--csv", required=True, help="records (CSV with the feature columns)")
    pr.add_argument("--out", help="write the probabilities here (default: stdout)")
    pr.add_argument("--label", help="label column: also report the NLLH on stderr")
    pr.add_argument(
        "--max-rows",
        type=numbers.integer(1, 10**12),
        default=DEFAULT_MAX_ROWS,
        help=f"size budget of the model's tables ({DEFAULT_MAX_ROWS:,} rows)",
    )

    xor = sub.add_parser("xor", help="the XOR counterexample, state by state")
    xor.add_argument(
        "--n",
        type=numbers.integer(100, BIG),
        default=100_000,
        help="records for PCD and logistic (≥ 100)",
    )
    _setting_flag(xor, "iterations", default=600)
    _setting_flag(xor, "seed", default=0)
    xor.add_argument("--json", action="store_true")

    ic = sub.add_parser(
        "import-criteo", help="the AdKDD'21 challenge files → a release (click and sale)"
    )
    ic.add_argument("pairs", help="aggregated_pairs.csv of the challenge")
    ic.add_argument("singles", help="aggregated_singles.csv of the challenge")
    ic.add_argument("--out", required=True, help="output release directory")
    ic.add_argument(
        "--max-modalities",
        type=numbers.integer(2, BIG),
        default=None,
        help=f"keep at most this many values per feature, an integer from 2 to {BIG:,} (the "
        "most frequent); the others become '(other)' (default: keep all)",
    )
    ic.add_argument(
        "--suppression",
        type=numbers.number(0.0),
        default=10.0,
        help="pair rows with true count ≤ this were dropped (10)",
    )
    ic.add_argument(
        "--sigma",
        type=numbers.number(0.0, lo_open=True),
        default=17.0,
        help="the declared Gaussian noise σ (17)",
    )
    ic.add_argument(
        "--max-file-mib",
        type=numbers.integer(1, 2**30),
        default=None,
        help="refuse a file larger than this many MiB (4096)",
    )
    ic.add_argument(
        "--max-line-bytes",
        type=numbers.integer(1, 2**30),
        default=None,
        help="refuse a line longer than this many bytes (4096)",
    )
    ic.add_argument(
        "--max-lines",
        type=numbers.integer(1, 10**12),
        default=None,
        help="refuse a file with more rows (30,000,000)",
    )
    ic.add_argument("--json", action="store_true", help="print the import report as JSON")

    sw = sub.add_parser(
        "sweep", help="MRF and MRF-N over a list of ε: CSV and PNG", parents=[quiet]
    )
    _add_data_options(sw)
    _add_train_options(sw)
    _add_noise_options(sw, sweep=True)
    sw.add_argument(
        "--epsilons", default=None, help="comma-separated ε values (0.5,1,2,5,10; --quick: 1,10)"
    )
    sw.add_argument(
        "--noise-seeds",
        type=numbers.integer(1, 1000),
        default=None,
        help="independent releases per ε, for error bars (3; --quick: 2)",
    )
    sw.add_argument(
        "--quick", action="store_true", help="a small sweep: ε 1,10, 2 noise seeds, 150 iterations"
    )
    sw.add_argument(
        "--privacy",
        default="central",
        help="comma-separated central,local: central (noisy tables, the default) "
        "and/or local (randomized response on every record); with local, "
        "MRF and MRF-N per privacy model",
    )
    sw.add_argument(
        "--sizes",
        default=None,
        help="train on nested random subsamples of the training records: fractions "
        "(0.25,0.5,1) or record counts (1000,10000); with central,local also writes "
        "PREFIX_records.csv/.png, the records local privacy needs for the same NLLH "
        "(default 0.25,0.5,1 with central,local; else 1)",
    )
    sw.add_argument(
        "--out", default="sweep", help="output prefix: writes PREFIX.csv and PREFIX.png"
    )
    sw.add_argument("--json", action="store_true", help="also print the rows as JSON")

    sv = sub.add_parser("serve", help="serve the live explorer (Panel's server); prints its URL")
    sv.add_argument(
        "--port",
        type=numbers.integer(0, 65535),
        default=5006,
        help="port to listen on (5006; 0: any free port)",
    )
    sv.add_argument(
        "--address",
        default="localhost",
        help="interface to listen on (localhost; 0.0.0.0: every interface)",
    )
    sv.add_argument(
        "--allow-websocket-origin",
        action="append",
        metavar="HOST[:PORT]",
        help="a host the page may be opened from (a proxy's, or this machine's "
        "name on the network); repeat for several (default: localhost:PORT)",
    )
    sv.add_argument(
        "--prefix",
        default="",
        help="serve under this URL path, for a reverse proxy that keeps the path "
        "(/user/alice/proxy/5006 → …/user/alice/proxy/5006/explorer)",
    )
    sv.add_argument(
        "--num-procs",
        type=numbers.any_integer,
        default=1,
        help="server processes: 1 only, any other value is refused (the explorer is one "
        "process that trains on every core itself)",
    )
    sv.add_argument("--show", action="store_true", help="open the page in a browser")

    ls = sub.add_parser("lessons", help="copy the six classroom notebooks into a directory")
    ls.add_argument("directory", metavar="DIR", help="where to write them (created if missing)")
    ls.add_argument(
        "--force", action="store_true", help="overwrite lessons changed since they were written"
    )
    return parser
