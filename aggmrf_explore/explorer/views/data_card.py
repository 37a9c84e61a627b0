"""The Data card of the sidebar: dataset, upload, label, n, seed, features, released tables
(a Viewer of the store).

An uploaded CSV is registered with ``problems.register_upload`` (size-checked there; the
picker refuses larger files before sending) and offered by its columns; the store loads
it once a label is chosen.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn

from ...errors import error_message
from ..store.caches import UPLOAD_MAX_BYTES, format_bytes
from ..store.escape import escape_html, escape_markdown
from ..store.problems import (
    DATASET_MENU,
    GENERATED,
    SEEDED,
    register_upload,
    upload_columns,
    upload_name,
)
from .binding import STRETCH, Binder
from .checkbox import LabeledCheckbox
from .upload_widget import UploadPicker

__all__ = ["DataCard"]

BOX = dict(margin=(4, 10), **STRETCH)


class DataCard(pn.viewable.Viewer):
    """The data controls; ``show_message`` is where a refused upload says why."""

    def __init__(self, session, binder: Binder, show_message: Callable):
        super().__init__()
        self.session = session
        self.binder = binder
        self.show_message = show_message
        guard = binder.guard
        self.w_dataset = pn.widgets.Select(label="Dataset", options=DATASET_MENU, **STRETCH)
        self.w_n = pn.widgets.IntInput(
            label="Sample size n (per split)", value=session.n_samples, **STRETCH
        )
        self.w_seed = pn.widgets.IntInput(label="Seed", value=session.data_seed, **STRETCH)
        self.regenerate = pn.widgets.Button(label="Regenerate data", **STRETCH)
        self.regenerate.on_click(lambda e: guard(self._regenerate))
        self.w_upload = UploadPicker(layout="compact", height=90, **STRETCH)
        self.w_upload.param.watch(lambda e: guard(lambda: self._on_upload(e.new)), "value")
        self.w_upload.param.watch(lambda e: self._show_upload_refusal(e.new), "refused")
        self.upload_info = pn.pane.Markdown(
            f"CSV with a header line, up to **{format_bytes(UPLOAD_MAX_BYTES)}**; "
            "larger files are refused before sending.",
            css_classes=["aggmrf-upload-info"],
            margin=(0, 10),
            **STRETCH,
        )
        self.w_label = pn.widgets.Select(label="Label column", options=[""], **STRETCH)
        self.w_features = pn.widgets.MultiChoice(
            label="Features (empty = all)", options=[], placeholder="choose features…", **STRETCH
        )
        self.w_singles = LabeledCheckbox(label="single-feature tables", **BOX)
        self.w_pairs = LabeledCheckbox(label="pair tables", **BOX)
        b = binder.bind
        self.c_dataset = b("dataset", self.w_dataset)
        self.c_n = b("n_samples", self.w_n)
        self.c_seed = b("data_seed", self.w_seed)
        self.c_label = b("label_column", self.w_label)
        self.c_features = b("features", self.w_features)
        self.c_singles = b("singles", self.w_singles)
        self.c_pairs = b("pairs", self.w_pairs)
        self.card = pn.Card(
            self.c_dataset,
            self.w_upload,
            self.upload_info,
            self.c_label,
            self.c_n,
            self.c_seed,
            self.regenerate,
            self.c_features,
            pn.pane.Markdown("**Released tables**", margin=(0, 10)),
            self.c_singles,
            self.c_pairs,
            title="Data",
            **STRETCH,
        )

    def __panel__(self):
        return self.card

    def show_dataset(self) -> None:
        """Only the controls the chosen dataset uses."""
        ds = self.session.dataset
        self.w_upload.visible = self.c_label.visible = ds == "upload"
        self.upload_info.visible = ds == "upload"
        self.c_n.visible = self.regenerate.visible = ds in GENERATED  # drawn from (n, seed)
        self.c_seed.visible = ds in SEEDED

    def show_options(self, bundle) -> None:
        """The feature (and, for an upload, label) choices of newly loaded data."""
        s = self.session
        with self.binder.hushed():
            # Choices.js renders option labels as HTML: labels escaped, values raw
            self.w_features.options = {escape_html(f): f for f in bundle.all_features}
            # the value a link set before the options existed never reached the browser's
            # Choices.js widget: send it again now that its options are there
            self.w_features.value = []
            self.w_features.value = list(s.features)
            if s.dataset == "upload" and s.upload_hash:
                self.w_label.options = [""] + upload_columns(s.upload_hash)
                self.w_label.value = s.label_column

    def _regenerate(self) -> None:
        """New records: the n and seed typed (the next seed if neither changed)."""
        s = self.session
        n, seed = self.w_n.value, self.w_seed.value
        if n == s.n_samples and seed == s.data_seed:
            seed = int(seed or 0) + 1
        if s.propose("n_samples", n) is None:
            s.propose("data_seed", seed)

    def _on_upload(self, files: dict | None) -> None:
        """A file arrived ({its own name: content}): register it, offer its columns.
        The messages of an earlier upload go away."""
        if not files:
            return
        name, data = next(reversed(files.items()))
        data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        self.show_message("")
        s = self.session
        s.clear_errors(("dataset", "label_column", "features"))
        try:
            h = register_upload(data, name)
        except Exception as exc:  # noqa: BLE001 - over the size limit
            self._show_upload_refusal(error_message(exc))
            return
        cols = upload_columns(h)
        self.w_label.options = [""] + cols
        self.upload_info.object = (
            f"Uploaded **{escape_markdown(upload_name(h))}** ({format_bytes(len(data))}, "
            f"{len(cols)} columns); files up to {format_bytes(UPLOAD_MAX_BYTES)}."
        )
        s.use_upload(h)  # (a switch to "upload" shows its controls: the app watches dataset)

    def _show_upload_refusal(self, text: str) -> None:
        if text:
            self.show_message(f"upload refused: {text}")
            self.upload_info.object = f"⚠ {escape_markdown(text)}"
