"""The run controls and the Privacy and Training cards of the sidebar (Viewers of the store).

Each control is a widget bound to one setting of the store (``binding.Binder``); the
settings' domains, labels and help come from their one declaration (``settings.py``,
``help.py``).  Adding a control: bind it here, add it to its card's ``objects``.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn

from ...privacy.registry import REGISTRY
from ...settings import applies, setting
from .binding import STRETCH, Binder, log_grid
from .checkbox import LabeledCheckbox
from .noise_text import noise_text

__all__ = ["RunControls", "PrivacyCard", "TrainingCard", "PRESETS", "mechanism_options"]

PRESETS = {
    "— choose a preset —": None,
    "XOR counterexample (max-ent fails)": {"dataset": "xor", "mechanism": "none"},
    "Adult, paper settings (n' = 10 000)": {
        "dataset": "adult",
        "mechanism": "none",
        "n_gibbs": 10_000,
        "auto_defaults": True,
    },
    "Adult, Gaussian noise ε = 1, δ = 1e-7": {
        "dataset": "adult",
        "mechanism": "gaussian",
        "epsilon": 1.0,
        "delta": 1e-7,
    },
    "Toy Table 1, exact-size sampler": {"dataset": "toy", "mechanism": "none", "n_gibbs": 1000},
    "True gradient instead of rescaled": {"gradient": "true"},
}
BOX = dict(margin=(4, 10), **STRETCH)  # a checkbox: its text is its clickable label
# the mechanism's buttons on two rows (six do not fit the 330 px sidebar): none, Laplace,
# Gaussian, Local; then the discrete Laplace and Gaussian, each as wide as two
TWO_ROWS = """
.bk-btn-group { display: grid; grid-template-columns: repeat(4, auto); height: auto; }
.bk-btn-group > .bk-btn { border-radius: 0; margin: 0; }
.bk-btn-group > .bk-btn:nth-child(n + 5) { grid-column: span 2; }
.bk-btn-group > .bk-btn:nth-child(1) { border-top-left-radius: 4px; }
.bk-btn-group > .bk-btn:nth-child(4) { border-top-right-radius: 4px; }
.bk-btn-group > .bk-btn:nth-child(5) { border-bottom-left-radius: 4px; }
.bk-btn-group > .bk-btn:nth-child(6) { border-bottom-right-radius: 4px; }
"""


def mechanism_options() -> dict[str, str]:
    """{button text: mechanism} of every registered mechanism (``privacy.registry``, its
    ``label``): the float-noise ones and local first, the integer-noise ones last."""
    names = sorted(REGISTRY, key=lambda m: REGISTRY[m].discrete)
    return {REGISTRY[m].label: m for m in names}


def select_for(name: str, label: str) -> pn.widgets.Select:
    """A menu of every choice of setting ``name``, in its declared words."""
    return pn.widgets.Select(label=label, options=setting(name).option_words(), **STRETCH)


class RunControls(pn.viewable.Viewer):
    """Play / Pause, Step, Reset and the preset menu.

    ``toggle``, ``step``, ``reset``: the app's actions (run in ``binder.guard``);
    ``show_message``: where a refused preset says why.
    """

    def __init__(self, session, binder: Binder, toggle, step, reset, show_message: Callable):
        super().__init__()
        self.session = session
        self.binder = binder
        self.show_message = show_message
        guard = binder.guard
        self.play_button = pn.widgets.Button(label="▶ Play", color="success", **STRETCH)
        self.step_button = pn.widgets.Button(label="Step", color="primary", **STRETCH)
        self.reset_button = pn.widgets.Button(label="Reset", color="warning", **STRETCH)
        self.play_button.on_click(lambda e: guard(toggle))
        self.step_button.on_click(lambda e: guard(step))
        self.reset_button.on_click(lambda e: guard(reset))
        self.preset = pn.widgets.Select(label="Preset", options=list(PRESETS), **STRETCH)
        self.preset.param.watch(lambda e: guard(lambda: self.apply_preset(e.new)), "value")
        self.run_row = pn.Row(
            self.play_button,
            self.step_button,
            self.reset_button,
            css_classes=["aggmrf-run"],
            **STRETCH,
        )
        self.run_box = pn.Column(self.run_row, self.preset, **STRETCH)
        session.param.watch(self._on_busy, "busy")

    def __panel__(self):
        return self.run_box

    @property
    def buttons(self) -> tuple:
        return self.play_button, self.step_button, self.reset_button

    def show_running(self, running: bool) -> None:
        """The Play button says what it does next."""
        self.play_button.label = "❚❚ Pause" if running else "▶ Play"
        self.play_button.color = "danger" if running else "success"

    def _on_busy(self, event) -> None:
        """Play and Step stay pressable while data load (a press is an intent: it trains
        as soon as the data and the sampler are ready); Reset waits for the data (a load
        starts a fresh trainer anyway)."""
        self.reset_button.disabled = bool(event.new)

    def apply_preset(self, name: str) -> None:
        """Propose a preset's settings in order; the first refused one stops it (and says
        why); the menu goes back to its prompt."""
        values = PRESETS.get(name)
        if not values:
            return
        for k, v in values.items():
            msg = self.session.propose(k, v)
            if msg:
                self.show_message(f"preset {name!r}: {msg}")
                break
        with self.binder.hushed():
            self.preset.value = next(iter(PRESETS))


class PrivacyCard(pn.viewable.Viewer):
    """Mechanism, ε, δ, accounting, Gaussian calibration, σ and MRF-N.

    The discrete mechanisms take the same ε, δ (discrete Gaussian) and accounting as their
    continuous twins; the calibration is the continuous Gaussian's only (the discrete one
    is calibrated by its zCDP bound, ``privacy.make_mechanism``)."""

    def __init__(self, session, binder: Binder):
        super().__init__()
        self.session = session
        b = binder.bind
        self.w_mech = pn.widgets.RadioButtonGroup(
            label="Mechanism", options=mechanism_options(), stylesheets=[TWO_ROWS], **STRETCH
        )
        self.w_acc = select_for("accounting", "Accounting")
        self.w_cal = select_for("calibration", "Gaussian calibration")
        self.sigma = pn.pane.Markdown("", margin=(0, 10), css_classes=["aggmrf-sigma"], **STRETCH)
        self.w_aware = LabeledCheckbox(label="noise-aware training (MRF-N)", **BOX)
        self.w_noise_seed = pn.widgets.IntInput(label="Noise seed", start=0, **STRETCH)
        self.c_mech = b("mechanism", self.w_mech)
        eps_grid, delta_grid = log_grid(-2, 2), log_grid(-12, -2, (1,))
        self.c_eps = binder.log_slider("epsilon", "privacy budget ε (log scale)", eps_grid)
        self.c_delta = binder.log_slider("delta", "δ (log scale)", delta_grid)
        self.c_acc = b("accounting", self.w_acc)
        self.c_cal = b("calibration", self.w_cal)
        self.c_aware = b("noise_aware", self.w_aware)
        self.c_noise_seed = b("noise_seed", self.w_noise_seed)
        self.card = pn.Card(
            pn.pane.Markdown("**Noise mechanism**", margin=(0, 10)),
            self.c_mech,
            self.c_eps,
            self.c_delta,
            self.c_acc,
            self.c_cal,
            self.sigma,
            self.c_noise_seed,
            self.c_aware,
            title="Privacy",
            collapsed=False,
            **STRETCH,
        )
        session.param.watch(
            lambda *events: self.refresh_sigma(), ["epsilon", "delta", "accounting", "mechanism"]
        )
        session.param.watch(lambda e: self.show_mechanism(), "errors")  # (a link's bad seed)

    def __panel__(self):
        return self.card

    def refresh_sigma(self) -> None:
        """The noise's scale and budget in words (``noise_text.py``)."""
        self.sigma.object = noise_text(self.session)

    def show_mechanism(self) -> None:
        """Only the controls that apply to the chosen mechanism (``settings.applies``)."""
        values = {"mechanism": self.session.mechanism}
        controls = {
            "epsilon": self.c_eps,
            "delta": self.c_delta,
            "accounting": self.c_acc,
            "calibration": self.c_cal,
            "noise_aware": self.c_aware,
        }
        for name, control in controls.items():
            control.visible = applies(name, values)
        # the noise seed matters with noise only, but its refused value shows either way
        noisy = applies("noise_aware", values)
        self.c_noise_seed.visible = noisy or "noise_seed" in self.session.errors
        self.refresh_sigma()


class TrainingCard(pn.viewable.Viewer):
    """n', the default rule, λ_μ, λ_θ, steps, gradient, preconditioning, speed, keep."""

    def __init__(self, session, binder: Binder):
        super().__init__()
        b = binder.bind
        self.w_gibbs = pn.widgets.IntInput(label="Gibbs samples n'", step=1000, **STRETCH)
        self.w_auto = LabeledCheckbox(
            label="default rule for λ and α (α = 1/T, λ_θ = min(T/2, 50))", **BOX
        )
        self.w_step_mu = pn.widgets.FloatInput(
            label="step α_μ", step=0.01, format="0.0000", **STRETCH
        )
        self.w_step_theta = pn.widgets.FloatInput(
            label="step α_θ", step=0.01, format="0.0000", **STRETCH
        )
        self.w_grad = pn.widgets.RadioButtonGroup(
            label="Gradient", options=setting("gradient").option_words()
        )
        self.w_precond = LabeledCheckbox(label="preconditioning (diagonal Hessian)", **BOX)
        self.w_ipt = pn.widgets.IntSlider(
            label="Max iterations per tick", start=1, end=200, **STRETCH
        )
        self.w_keep = LabeledCheckbox(label="keep my λ, α, n' and seeds on a dataset switch", **BOX)
        self.w_train_seed = pn.widgets.IntInput(label="Sampler seed", start=0, **STRETCH)
        self.c_gibbs = b("n_gibbs", self.w_gibbs)
        self.c_auto = b("auto_defaults", self.w_auto)
        self.c_lmu = binder.log_slider(
            "lambda_mu", "λ_μ (L2 on μ, log scale)", log_grid(-2, 3, zero=True)
        )
        self.c_ltheta = binder.log_slider(
            "lambda_theta", "λ_θ (L2 on θ, log scale)", log_grid(-2, 4, zero=True)
        )
        self.c_step_mu = b("step_mu", self.w_step_mu)
        self.c_step_theta = b("step_theta", self.w_step_theta)
        self.c_grad = b("gradient", self.w_grad)
        self.c_precond = b("precondition", self.w_precond)
        self.c_ipt = b("iters_per_tick", self.w_ipt)
        self.c_keep = b("keep_settings", self.w_keep)
        self.c_train_seed = b("train_seed", self.w_train_seed)
        self.card = pn.Card(
            self.c_gibbs,
            self.c_auto,
            self.c_lmu,
            self.c_ltheta,
            self.c_step_mu,
            self.c_step_theta,
            pn.pane.Markdown("**Gradient**", margin=(0, 10)),
            self.c_grad,
            self.c_precond,
            self.c_ipt,
            self.c_train_seed,
            self.c_keep,
            title="Training",
            **STRETCH,
        )

    def __panel__(self):
        return self.card
