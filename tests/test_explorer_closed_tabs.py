"""A closed tab's failed writes are one log line, never a traceback; other exceptions
still reach the event loop's handler."""

from __future__ import annotations

import asyncio
import logging

from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError

from aggmrf_explore.explorer.server.closed_tabs import closed_socket_handler, quiet_closed_sockets


def test_closed_socket_errors_are_one_line_and_others_pass_on(caplog):
    seen = []
    handler = closed_socket_handler(lambda loop, ctx: seen.append(ctx))
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.INFO, logger="aggmrf.explorer"):
            for exc in (WebSocketClosedError(), StreamClosedError()):
                ctx = {"message": "Future exception was never retrieved", "exception": exc}
                handler(loop, ctx)
        assert seen == []
        assert [r.getMessage() for r in caplog.records] == [
            "a closed tab's last messages were dropped"
        ] * 2
        other = {"message": "boom", "exception": ValueError("boom")}
        handler(loop, other)
        assert seen == [other]
    finally:
        loop.close()


def test_installed_once_on_the_running_loop():
    async def main():
        quiet_closed_sockets()
        first = asyncio.get_running_loop().get_exception_handler()
        quiet_closed_sockets()
        return first, asyncio.get_running_loop().get_exception_handler()

    first, second = asyncio.run(main())
    assert first is second and first.quiets_closed_sockets
    quiet_closed_sockets()  # no running loop: nothing to do
