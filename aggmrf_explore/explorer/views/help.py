"""Help for every control of the explorer, and a "what to look for" note per tab.

A control of a declared setting (n', λ, α, the mechanism, ε, δ, the gradient, accounting,
calibration, seeds, MRF-N, preconditioning) shows the help of its one declaration,
``aggmrf_explore.settings.SETTINGS``; the explorer's own controls (dataset, tables,
default rule, …) take theirs from :data:`CONTROL_HELP`.  :func:`with_help` attaches the
text as the widget's tooltip (Panel's ``description``), or as a "?" icon beside a widget
that has none (sliders).

:data:`EXPLAIN` says what each view shows ("What am I seeing?").  Each tab's note says what to look for in words that stay true whatever the data, the
run or the noise: it describes what a change means, never what the plot shows now.
"""

from __future__ import annotations

import panel as pn

from ..store.params import declaration

BUTTON_GROUPS = (pn.widgets.RadioButtonGroup, pn.widgets.CheckButtonGroup)

__all__ = ["CONTROL_HELP", "TAB_NOTES", "EXPLAIN", "help_for", "with_help", "tab_note", "explain"]

CONTROL_HELP = {
    "dataset": "The data the released tables are computed from: small teaching sets "
    "(Toy, XOR, Synthetic), real census and bank data, or your own CSV.",
    "n_samples": "Records per split of a generated dataset: more records, smaller "
    "sampling noise in the tables.",
    "label_column": "The column of your CSV that the model predicts (two values).",
    "features": "Train on these features only (empty: all of them); every released table "
    "is built from the chosen ones.",
    "singles": "Release one table per feature: its count and label sum per value.",
    "pairs": "Release one table per pair of features: what the MRF learns interactions from.",
    "triples": "Also release the (X1, X2, X3) table of the XOR example: the one table "
    "that lets max-ent represent the truth.",
    "auto_defaults": "Set λ and the steps α from the number T of released tables "
    "(α = 1/T, λ_θ = min(T/2, 50)); changing one by hand turns the rule off.",
    "iters_per_tick": "The most iterations trained between two page updates: lower it "
    "to watch the first iterations one by one.",
    "keep_settings": "On a dataset switch, keep the λ, α, n' and seeds set by hand "
    "(else they go back to the defaults of the new data).",
    "table": "The released table shown below, beside the model's current estimates.",
    "data_seed": "Seed of the data: draws a generated dataset's records, or splits real "
    "data into training and test records.",
    "noise_seed": "Seed of the privacy noise draw (a simulation: a real release keeps its "
    "noise secret); another seed, another noisy release of the same tables.",
    "train_seed": "Seed of the Gibbs sampler: another seed, another random path of the "
    "same training.",
}

TAB_NOTES = {
    "Training": "**What to look for:** the MRF's test NLLH approaching the skyline. "
    "A curve that falls instead means the released tables cannot describe the labels "
    "(on XOR that fall is the lesson: see the XOR tab).",
    "Tables": "**What to look for:** the model's d̂ and ĉ next to the released d and c; "
    "training moves them together, up to the Monte-Carlo noise of n' samples.",
    "Privacy": "**What to look for:** how far each finished run lies below the skyline "
    "as ε shrinks: that gap is the price of privacy for this mechanism and learner.",
    "XOR": "**What to look for:** where the live MRF's bars (blue) end: with pair tables "
    "only, at the max-ent bars (red), not the truth (grey); with the triplet table, at the "
    "truth.",
    "Suppression": "**What to look for:** the model's d̂ of each cell the release left out "
    "staying in the green band 0 ≤ d̂ ≤ k: an absent cell is not a zero.",
}


# "What am I seeing?": each view's explanation, under it
EXPLAIN = {
    "nllh": (
        "**What am I seeing?** The MRF's normalised log-likelihood on held-out records "
        "(1 − logloss / entropy of the label: 0 = base rate, higher is better) as it trains "
        "from the tables only. Dashed lines: the same metric for models fitted elsewhere — the "
        "*skyline* is a logistic regression on the full disaggregated records (pair features), "
        "*naive Bayes* uses the single-feature tables only, *best pair* the one most "
        "informative pair table. **pin 1, pin 2, …**: runs you pinned (faint), listed under "
        "the plots. A value below the axis gets a red ▼ marker with the value. On XOR the "
        "curve falls while the MRF fits the pair tables: that drop is the lesson."
    ),
    "predictions": (
        "**What am I seeing?** Each test record's P(Y=1|x) under the live MRF (vertical) "
        "against the logistic fitted on full data (horizontal). On the diagonal the tables "
        "told the MRF as much as the records told the logistic. With many records the points "
        "are binned into squares coloured by the share of positive labels."
    ),
    "convergence": (
        "**What am I seeing?** How far the model's expected tables d̂ (counts) and ĉ (label "
        "sums) are from the released ones, as relative L1 error on a log axis. It settles "
        "around the Monte-Carlo floor of n' Gibbs samples (dashed): the error that n' random "
        "samples leave even when the model is exact (it shrinks like 1/√n'). Single "
        "iterations dip below it by chance, the level they settle at does not; add samples "
        "to lower it."
    ),
    "dhat": (
        "**What am I seeing?** Every released table row: its target count d (horizontal) and "
        "the model's current estimate d̂ (vertical), log–log. Training pulls the points onto "
        "the diagonal; colour tells single-feature from pair tables. A log axis has no 0: a "
        'count of 0 is drawn at 0.5 ("0 shown as 0.5").'
    ),
    "tables": (
        "**What am I seeing?** One released table: a row per combination of modalities with its "
        "count and label sum (noisy if a mechanism is on, exact values beside them), and the "
        "model's current d̂ and ĉ for the same rows."
    ),
    "privacy": (
        "**What am I seeing?** Left: the noise added to every released count (histogram) and "
        "the mechanism's density (line; integer noise: the probability of each integer). "
        "Right: released vs true counts — the vertical "
        "spread around the diagonal is the price of privacy; small counts suffer most."
    ),
    "xor": (
        "**What am I seeing?** P(Y=1|x) for the four states that occur in the XOR example "
        "(X3 = X1 xor X2, P(Y=1|x) = 0.25 + 0.5·x3). **Why max-ent fails:** every pair table "
        "looks like independent, uniform features, so the maximum-entropy model spreads the "
        "records over all eight states, half of which never occur. The pairwise parameters "
        "that reproduce the label sums over those eight states give about 0.9 / 0.1 on the "
        "four real ones with many records (the title shows the exact values for this sample) "
        "instead of 0.75 / 0.25 — the live MRF converges to that max-ent answer, while the "
        "logistic, fitted on the full records, recovers the truth."
    ),
}


def help_for(name: str) -> str:
    """The help of the control of store setting ``name``: :data:`CONTROL_HELP`'s if it has
    one (the three seeds share one declaration but not one meaning), else its
    declaration's."""
    decl = declaration(name)
    return CONTROL_HELP.get(name) or (decl.help if decl is not None else "")


def with_help(widget, text: str):
    """``widget`` with ``text`` as its tooltip: its ``description`` when it shows one (a
    widget with a label), else a row of the widget and a "?" icon (sliders, and button
    groups: a group's description is a tooltip over the whole group, which stayed on the
    page over the plots after a click)."""
    if not text:
        return widget
    if "description" in widget.param and not isinstance(widget, BUTTON_GROUPS):
        widget.description = text
        return widget
    icon = pn.widgets.TooltipIcon(value=text, width=20, margin=(22, 4, 0, 0))
    return pn.Row(widget, icon, sizing_mode="stretch_width", margin=0)


def tab_note(tab: str) -> pn.pane.Markdown:
    return pn.pane.Markdown(
        TAB_NOTES[tab],
        css_classes=["aggmrf-look-for"],
        sizing_mode="stretch_width",
        margin=(0, 10),
    )


def explain(key: str) -> pn.pane.Markdown:
    """The longer explanation of a view (``EXPLAIN[key]``), in small print."""
    return pn.pane.Markdown(
        EXPLAIN[key],
        css_classes=["aggmrf-explain"],
        sizing_mode="stretch_width",
        margin=(0, 10),
    )
