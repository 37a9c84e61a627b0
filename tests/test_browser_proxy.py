"""``aggmrf-explore serve --prefix`` behind a reverse proxy that keeps the path, in chromium.

Course hubs (JupyterHub with jupyter-server-proxy, a university's reverse proxy) put the
explorer under a path such as ``/user/alice/proxy/5006/``.  Here a few lines of Tornado
(:class:`PrefixProxy`) play that proxy on loopback: every HTTP request and the websocket are
forwarded, path unchanged, to ``aggmrf-explore serve --prefix /user/alice/proxy/5006``.
The browser is only ever given the proxy's address, and every URL it asks for is recorded:
the test checks that the page, its scripts, the websocket (plots drawn, Play trains) and
both downloads work through the proxy, and that no request goes anywhere else.

The helpers (:func:`start_serve`, :func:`check_explorer`, :class:`RecordingPage`) also
drive the installed wheel in ``tests/test_packaging.py``.
"""

# ruff: noqa: F811  (the browser fixture of tests/test_browser.py is imported, then requested)
from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from tests.test_browser import Page, browser, slack  # noqa: F401 - fixture
from tests.test_browser_plots import train_until, wait_series

pytestmark = pytest.mark.browser

PREFIX = "/user/alice/proxy/5006"
URL_LINE = "The explorer is at "  # what `aggmrf-explore serve` prints, then the URL


def start_serve(
    command: list[str], cwd: str | os.PathLike, timeout: float = 120.0, env: dict | None = None
) -> tuple[subprocess.Popen, str]:
    """Start ``command`` (an ``aggmrf-explore serve --port 0 …`` command line) in ``cwd``;
    returns the process and the URL it printed, once the server answers a static file."""
    log = tempfile.NamedTemporaryFile("w+", prefix="aggmrf-serve-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "AGGMRF_EXPLORER_LOG": "1", **(env or {})},
        start_new_session=True,  # its own process group: stop_serve ends its children
    )
    proc.log_path = log.name
    t0 = time.perf_counter()
    url = ""
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"{command} exited early:\n{Path(log.name).read_text()}")
        if not url:
            for line in Path(log.name).read_text().splitlines():
                if line.startswith(URL_LINE):
                    url = line[len(URL_LINE) :].strip()
        if url:  # a static file: a GET of the app would build a session nobody uses
            static = url.rsplit("/", 1)[0] + "/static/js/bokeh.min.js"
            try:
                with urllib.request.urlopen(static, timeout=30) as r:
                    if r.status == 200:
                        return proc, url
            except OSError:
                pass
        time.sleep(0.1)
    stop_serve(proc)
    raise RuntimeError(
        f"{command} did not serve within {timeout:.0f} s:\n{Path(log.name).read_text()}"
    )


def stop_serve(proc: subprocess.Popen) -> None:
    """Stop a server started by :func:`start_serve`, with the processes it forked (its
    process group): SIGTERM, then SIGKILL to what is left after 10 s."""

    def group_alive() -> bool:
        proc.poll()  # reap the parent: a zombie still counts as a member of the group
        try:
            os.killpg(proc.pid, 0)
            return True
        except ProcessLookupError:
            return False

    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not group_alive():
            break
        os.killpg(proc.pid, sig)
        t0 = time.perf_counter()
        while group_alive() and time.perf_counter() - t0 < 10:
            time.sleep(0.1)


class _RecordingBrowser:
    """A browser whose new contexts record every URL their pages ask for."""

    def __init__(self, browser, asked: list[str]) -> None:
        self._browser, self._asked = browser, asked

    def new_context(self, **kwargs):
        ctx = self._browser.new_context(accept_downloads=True, **kwargs)
        ctx.on("request", lambda r: self._asked.append(r.url))
        ctx.on("page", lambda pg: pg.on("websocket", lambda ws: self._asked.append(ws.url)))
        return ctx


class RecordingPage(Page):
    """A served explorer page (tests/test_browser.Page) that also records, in ``asked``,
    every URL the browser requested: documents, scripts, fetches and websockets."""

    def __init__(self, browser, url: str, **kwargs) -> None:
        self.asked: list[str] = []
        super().__init__(_RecordingBrowser(browser, self.asked), url, **kwargs)


def download(p: Page, label: str) -> str:
    """Click the download button ``label`` (in the "Save & share" card); the file's text."""
    button = p.button(label)
    if not button.is_visible():
        p.page.locator(".card-header").filter(has_text="Save & share").first.click()
        button.wait_for(state="visible", timeout=10_000)
    with p.page.expect_download(timeout=30_000) as dl:
        button.click()
    return Path(dl.value.path()).read_text(encoding="utf-8")


def check_explorer(browser, url: str) -> RecordingPage:
    """Open the explorer at ``url`` on XOR and check that it works end to end: the page
    loads, Play trains, the training plot is drawn from the run's own points, and both
    downloads (settings JSON, history CSV) hold this run.  Returns the (open) page."""
    p = RecordingPage(browser, url + "?dataset=xor&n_gibbs=2000", ready="XOR", timeout=180)
    try:
        it = train_until(p, 30, timeout=90 * slack())  # Play trains (then Pause)
        assert it >= 30, f"Play reached only iteration {it} ({p.status()!r})"

        def drawn(data) -> bool:
            return "MRF" in data and np.isfinite(data["MRF"][1]).sum() >= 5

        data = wait_series(p, drawn, timeout=30)
        assert drawn(data), f"the NLLH plot holds no run: {sorted(data)}"
        x, _ = data["MRF"]
        assert np.nanmax(x) >= it - 10, f"the plot ends at {np.nanmax(x)}, the run at {it}"
        assert p.page.locator(".aggmrf-plots canvas").filter(visible=True).count() >= 1

        settings = json.loads(download(p, "Download settings (JSON)"))
        assert settings["dataset"] == "xor" and settings["n_gibbs"] == 2000, settings
        rows = list(csv.DictReader(io.StringIO(download(p, "Download history (CSV)"))))
        assert rows and int(float(rows[-1]["iteration"])) >= 30, rows[-1:] or "no rows"
        assert not p.errors, p.errors
        return p
    except BaseException:
        p.close()
        raise


class PrefixProxy:
    """A reverse proxy on 127.0.0.1 (its own thread and event loop, a free port: ``port``)
    that forwards every request, path unchanged, to ``backend`` (``host:port``): HTTP through
    Tornado's client, websockets message by message.  ``forwarded`` lists the paths it
    carried."""

    HOP = {
        "connection",
        "content-length",
        "content-encoding",
        "transfer-encoding",
        "x-consumed-content-encoding",
    }

    def __init__(self, backend: str = "") -> None:
        import tornado.httpserver
        import tornado.ioloop
        import tornado.netutil
        import tornado.web

        self.backend = backend  # host:port, may be set after the proxy listens
        self.forwarded: list[str] = []
        sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
        self.port = sockets[0].getsockname()[1]
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(asyncio.new_event_loop())
            routes = [
                (r".*/ws", _WebSocketProxy, {"proxy": self}),
                (r".*", _HTTPProxy, {"proxy": self}),
            ]
            server = tornado.httpserver.HTTPServer(tornado.web.Application(routes))
            server.add_sockets(sockets)
            self.loop = tornado.ioloop.IOLoop.current()
            started.set()
            self.loop.start()
            server.stop()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        started.wait(10)

    def stop(self) -> None:
        self.loop.add_callback(self.loop.stop)
        self.thread.join(10)


def _handlers():
    """The proxy's two Tornado handlers (imported lazily: Tornado comes with Panel)."""
    from tornado.httpclient import AsyncHTTPClient, HTTPRequest
    from tornado.web import RequestHandler
    from tornado.websocket import WebSocketClosedError, WebSocketHandler, websocket_connect

    class HTTPProxy(RequestHandler):
        SUPPORTED_METHODS = ("GET", "HEAD", "POST")

        def initialize(self, proxy: PrefixProxy) -> None:
            self.proxy = proxy

        async def _forward(self) -> None:
            self.proxy.forwarded.append(self.request.path)
            method = self.request.method
            resp = await AsyncHTTPClient().fetch(
                HTTPRequest(
                    f"http://{self.proxy.backend}{self.request.uri}",
                    method=method,
                    headers=self.request.headers,
                    follow_redirects=False,
                    body=self.request.body if method == "POST" else None,
                ),
                raise_error=False,
            )
            self.set_status(502 if resp.code == 599 else resp.code, resp.reason or "Bad Gateway")
            for k, v in resp.headers.get_all():
                if k.lower() not in PrefixProxy.HOP:
                    self.add_header(k, v)
            if resp.body and method != "HEAD":
                self.write(resp.body)

        get = head = post = _forward

    class WebSocketProxy(WebSocketHandler):
        def initialize(self, proxy: PrefixProxy) -> None:
            self.proxy, self.upstream = proxy, None

        def select_subprotocol(self, subprotocols):
            self.subprotocols = list(subprotocols)  # Bokeh's: ["bokeh", <session token>]
            return subprotocols[0] if subprotocols else None

        async def open(self, *args) -> None:
            self.proxy.forwarded.append(self.request.path)
            headers = {k: v for k, v in self.request.headers.items() if k in ("Origin", "Cookie")}
            self.upstream = await websocket_connect(
                HTTPRequest(f"ws://{self.proxy.backend}{self.request.uri}", headers=headers),
                on_message_callback=self._from_server,
                subprotocols=getattr(self, "subprotocols", None),
            )

        def _from_server(self, message) -> None:
            try:
                if message is None:
                    self.close()
                else:
                    self.write_message(message, binary=isinstance(message, bytes))
            except WebSocketClosedError:
                pass

        def on_message(self, message) -> None:
            self.upstream.write_message(message, binary=isinstance(message, bytes))

        def on_close(self) -> None:
            if self.upstream is not None:
                self.upstream.close()

    return HTTPProxy, WebSocketProxy


_HTTPProxy, _WebSocketProxy = _handlers()


def test_explorer_behind_a_path_prefix_proxy(browser, tmp_path):
    """The page, its scripts and stylesheets, and its websocket all come through the proxy,
    under the prefix (one server process: ``--num-procs`` other than 1 is refused,
    tests/test_num_procs.py)."""
    from aggmrf_explore.kernels import warm_up

    warm_up()  # numba's on-disk cache: the server loads, not compiles, the kernels
    proxy = PrefixProxy()  # listening first: the server must accept the proxy's origin
    try:
        proc, direct = start_serve(
            [
                sys.executable,
                "-m",
                "aggmrf_explore.cli",
                "serve",
                "--port",
                "0",
                "--address",
                "127.0.0.1",
                "--prefix",
                PREFIX,
                "--allow-websocket-origin",
                f"127.0.0.1:{proxy.port}",
            ],
            cwd=tmp_path,
        )
        try:
            assert direct.endswith(f"{PREFIX}/explorer"), direct
            proxy.backend = direct.split("/")[2]  # 127.0.0.1:PORT
            url = f"http://127.0.0.1:{proxy.port}{PREFIX}/explorer"
            origin = f"127.0.0.1:{proxy.port}{PREFIX}/"
            p = check_explorer(browser, url)
            p.close()
            outside = [
                u
                for u in p.asked
                if not u.startswith(("data:", "blob:"))
                and u.split("://", 1)[-1][: len(origin)] != origin
            ]
            assert not outside, f"requests that did not go through the proxy: {outside[:10]}"
            # through the proxy: the page, Bokeh's and Panel's scripts, and the websocket
            assert f"{PREFIX}/explorer" in proxy.forwarded
            assert any(
                f.startswith(f"{PREFIX}/static/") and f.endswith(".js") for f in proxy.forwarded
            )
            assert f"{PREFIX}/explorer/ws" in proxy.forwarded, sorted(set(proxy.forwarded))[:20]
            assert "Traceback" not in Path(proc.log_path).read_text()
        finally:
            stop_serve(proc)
    finally:
        proxy.stop()
