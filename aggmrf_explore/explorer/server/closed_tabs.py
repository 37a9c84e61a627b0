"""A closed tab's last messages: dropped with one log line, never a traceback.

When a browser tab closes while the server still writes to it (a refresh of a training
page, the first drawing of a page), the writes fail with Tornado's
``WebSocketClosedError`` (or ``StreamClosedError``).  Panel cancels the pending writes of
a destroyed page, but a write that has already failed cannot be cancelled: nobody reads
its exception, and asyncio prints it with a traceback when the future is collected
("Future exception was never retrieved").  Nothing is lost (the tab is gone), so
:func:`quiet_closed_sockets` installs an exception handler on the server's event loop
that logs these as one line and passes every other exception to the handler before it.
"""

from __future__ import annotations

import asyncio
import logging

__all__ = ["quiet_closed_sockets", "is_closed_socket", "closed_socket_handler"]

log = logging.getLogger("aggmrf.explorer")


def is_closed_socket(exc: BaseException | None) -> bool:
    """The exception says only that a websocket or stream was closed."""
    from tornado.iostream import StreamClosedError
    from tornado.websocket import WebSocketClosedError

    return isinstance(exc, WebSocketClosedError | StreamClosedError)


def closed_socket_handler(previous):
    """An asyncio exception handler: closed sockets → one line; the rest → ``previous``
    (None: the loop's default handler)."""

    def handler(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        if is_closed_socket(context.get("exception")):
            log.info("a closed tab's last messages were dropped")
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    handler.quiets_closed_sockets = True
    return handler


def quiet_closed_sockets() -> None:
    """Install :func:`closed_socket_handler` on the running event loop (once; no loop: nothing)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    previous = loop.get_exception_handler()
    if not getattr(previous, "quiets_closed_sockets", False):
        loop.set_exception_handler(closed_socket_handler(previous))
