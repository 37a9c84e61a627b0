"""The explorer's file picker: a size-limited, chunked ``FileDropper``.

The browser refuses a file over the limit before sending a byte (FilePond's size check,
shown in the picker as "File is too large"), and sends accepted files in chunks far below
the websocket's message limit, so an upload never closes the connection.  The server
checks the size again while the chunks arrive (a client can bypass the page): a file over
the limit is dropped at the first chunk past it, and ``refused`` says so.
"""

from __future__ import annotations

import panel as pn
import param

from ..store.caches import UPLOAD_CHUNK_BYTES, UPLOAD_MAX_BYTES, format_bytes

__all__ = ["UploadPicker", "size_limit_text"]


def size_limit_text(max_bytes: int = UPLOAD_MAX_BYTES) -> str:
    """The limit as FilePond writes it ("10MB", "750KB")."""
    if max_bytes % 2**20 == 0:
        return f"{max_bytes // 2**20}MB"
    return f"{max(1, max_bytes // 2**10)}KB"


class UploadPicker(pn.widgets.FileDropper):
    """A FileDropper for one CSV of at most ``max_bytes``; ``refused`` holds a message
    when the server dropped a file (too large), "" otherwise."""

    max_bytes = param.Integer(default=UPLOAD_MAX_BYTES, bounds=(1, None))
    refused = param.String(default="")

    # server-side only (Panel merges ``_rename`` along the class hierarchy)
    _rename = {"max_bytes": None, "refused": None}

    def __init__(self, **params) -> None:
        max_bytes = params.get("max_bytes", UPLOAD_MAX_BYTES)
        params.setdefault("max_file_size", size_limit_text(max_bytes))
        params.setdefault("chunk_size", UPLOAD_CHUNK_BYTES)
        params.setdefault("accepted_filetypes", [".csv", "text/csv", "text/plain"])
        params.setdefault("multiple", False)
        super().__init__(**params)
        self._received: dict[str, int] = {}
        self._dropped: set[str] = set()

    def _process_event(self, event) -> None:
        data = event.data
        if event.event_name == "upload_event":
            name = data["name"]
            if data["chunk"] == 1:
                self._received[name] = 0
                self._dropped.discard(name)
            elif name in self._dropped:
                return  # the rest of a file refused already
            self._received[name] = self._received.get(name, 0) + len(data["data"] or b"")
            if self._received[name] > self.max_bytes:
                self._file_buffer.pop(name, None)
                self._received.pop(name, None)
                self._dropped.add(name)
                self.refused = (
                    f"{name} is larger than {format_bytes(self.max_bytes)}: not uploaded."
                )
                return
            if data["chunk"] == data["total_chunks"]:
                self._received.pop(name, None)
                self.refused = ""
        super()._process_event(event)
