"""The served page: one per browser session, under ``panel serve apps/explorer.py`` (a clone)
or ``aggmrf-explore serve`` (an installed package); both call :func:`explorer_document`.

This module imports Panel but not HoloViews: a server's first request pays every import
the page needs, and Panel's ``pn.extension`` imports HoloViews' Bokeh plotting whenever
``holoviews`` is imported already (≈ 0.2 s, with matplotlib, whose ``matplotlib.figure``
Panel's pane detection then imports for each slider, ≈ 0.25 s more).  So
:func:`build_app` calls ``pn.extension`` before it imports the view (which imports
HoloViews), and the plotting imports run in a background thread once the first page is
built, while the browser loads its scripts (:func:`runtime.import_in_background`).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable, Iterator

import panel as pn
from tornado.web import RedirectHandler

from . import runtime
from .closed_tabs import quiet_closed_sockets
from .environment import check_environment, environment_problem
from .one_process import (
    ONE_LOOP,
    ONE_PROCESS,
    PANEL_COMMAND,
    check_num_procs,
    forked_server,
    one_process_message,
    threaded_server,
)

__all__ = [
    "build_app",
    "explorer_document",
    "refusal_document",
    "frozen_document",
    "serve",
    "APP_NAME",
    "PAGE_EXTENSIONS",
    "PLOTTING_MODULES",
]

PAGE_EXTENSIONS = ("tabulator", "filedropper")  # Panel's extras the page uses
PLOTTING_MODULES = ("holoviews.plotting.bokeh", "matplotlib.figure")  # imported afterwards
APP_NAME = "explorer"  # the page's path: /explorer, as ``panel serve apps/explorer.py`` names it
FAVICON = "/static/extensions/panel/images/favicon.ico"  # Panel's icon, under the server's prefix


@contextlib.contextmanager
def frozen_document() -> Iterator[None]:
    """Defer the session document's model bookkeeping to the end of the block.

    Bokeh re-walks every model of a document each time one is added or gets a JS
    callback (~0.15 s for the explorer's ~400 models, a dozen times while the page is
    built); inside this block it does so once, at the end.
    """
    doc = pn.state.curdoc
    with doc.models.freeze() if doc is not None else contextlib.nullcontext():
        yield


def after_response(callback: Callable[[], None]) -> None:
    """Run ``callback`` on the server's event loop once the request under way has been
    answered (at once outside a server): a thread started earlier would slow the
    rendering of the page down, as Python runs one thread at a time."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        callback()
        return
    loop.call_soon(callback)


def serve_resources_locally() -> None:
    """Point the session's stylesheets at this server, never at Panel's CDN.

    Panel points them at its server only when it renders the page's HTML (the document's
    ``dist_url``).  A session built from a websocket request instead (a page whose session
    the server no longer had, or, before it was refused, ``--num-procs`` above 1 with the
    websocket reaching another process) had no such HTML and sent CDN addresses: offline,
    the page missed its styles (a console error each).  Set before the page's models are
    made, the same local address is used in every case.
    """
    doc = pn.state.curdoc
    if doc is None or doc.session_context is None:
        return
    from panel.io.resources import LOCAL_DIST

    rel = pn.state.rel_path
    # (the page template's variables: Panel reads "dist_url" from them for every model)
    doc.template_variables.setdefault("dist_url", f"{rel}/{LOCAL_DIST}" if rel else LOCAL_DIST)


def full_page(limit: int) -> pn.viewable.Viewable:
    """The page of a session past the server's cap: the class is full (nothing loads)."""
    text = (
        "## The class is full\n\n"
        f"This explorer server already has **{limit}** open pages, its limit. Try again "
        "in a minute (a closed page frees its place within about 30 s), or ask your "
        "teacher for another server.\n\n"
        "*Teacher: `AGGMRF_MAX_SESSIONS` sets the limit, e.g. "
        "`AGGMRF_MAX_SESSIONS=60 panel serve apps/explorer.py`.*"
    )
    alert = pn.pane.Alert(text, alert_type="warning", css_classes=["aggmrf-full"], margin=20)
    return pn.template.BootstrapTemplate(
        title="aggmrf explorer", main=[alert], header_background="#1f4e79", busy_indicator=None
    )


REFUSAL_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="icon" href="data:,">
<style>
body {{ font-family: system-ui, sans-serif; max-width: 46em; margin: 3em auto; padding: 0 1em;
       line-height: 1.5; color: #212529; }}
.aggmrf-refusal {{ border: 1px solid #f1aeb5; background: #f8d7da; color: #58151c;
                   border-radius: 6px; padding: 1em 1.5em; }}
code {{ font-size: 1.05em; }}
</style>
</head>
<body>
<div class="aggmrf-refusal" role="alert">
<h1>{heading}</h1>
<p>It was started with <code>{said}</code>, which the explorer does not support: {why}.</p>
<p>Teacher: stop this server (Ctrl-C) and start it again without <code>{option}</code>:
<code>{command}</code> (or <code>aggmrf-explore serve</code>).</p>
</div>
</body>
</html>
"""


def refusal_document(said: str, option: str, command: str, why: str, heading: str) -> None:
    """The page of every session of a server started with an option the explorer refuses:
    the refusal instead of the explorer, also printed once per process on stderr.

    ``said``: how the page names what the server was started with (``--num-procs other
    than 1``, ``--num-threads``, ``PANEL_NUM_THREADS=4``); ``option``: what to start it
    without; ``command``: how; ``why``: :data:`ONE_PROCESS` or :data:`ONE_LOOP`.

    A plain HTML page (the session document's template, no Bokeh model, no script): it asks
    for nothing (not even a favicon), opens no websocket (which might reach another process),
    and a plain HTTP client reads the message.  The session Bokeh made for it is never
    connected and expires by itself.
    """
    import html

    import jinja2

    fix = f"stop this server and start it again without {option}: {command}"
    message = one_process_message(f"panel serve {said}", fix, why)
    if said not in runtime.RUNTIME.reported:
        runtime.RUNTIME.reported.add(said)
        print(f"aggmrf explorer: error: {message}", file=sys.stderr, flush=True)
    title = f"aggmrf explorer: start it without {option}"
    words = dict(title=title, heading=heading, said=said, option=option, command=command, why=why)
    page = REFUSAL_HTML.format(**{k: html.escape(v) for k, v in words.items()})
    doc = pn.state.curdoc
    if doc is not None:
        doc.title = title
        doc.template = jinja2.Template("{% raw %}" + page + "{% endraw %}")


def build_app(max_sessions: int | None = None) -> pn.viewable.Viewable:
    """The served explorer page (one :class:`~.app.Explorer` per browser session).

    With ``max_sessions`` sessions open already (default :func:`runtime.max_sessions`:
    ``AGGMRF_MAX_SESSIONS``, else 40) the page says the class is full instead.
    """
    t0 = time.perf_counter()
    quiet_closed_sockets()  # (a tab closed mid-write: one log line, not a traceback)
    runtime.limit_malloc_arenas()  # (the first page: before any worker thread starts)
    serve_resources_locally()
    limit = runtime.max_sessions() if max_sessions is None else max(1, int(max_sessions))
    if len(runtime.RUNTIME.sessions) >= limit:
        pn.extension(notifications=False)
        runtime.say(f"a new page was told the class is full ({limit} sessions open)")
        return full_page(limit)
    # a first start: the child compiling the parallel sampler starts now; the warm-up
    # thread (the serial sampler, or loading numba's cache, and the default data) starts
    # once this first page is shown (``Explorer._initial_load``): it would slow its building
    if runtime.first_start():
        runtime.start_parallel_compile()
    pn.extension(*PAGE_EXTENSIONS, notifications=False)  # first: before HoloViews (above)
    from ..views.app import Explorer

    runtime.one_kernel_thread()  # (the event loop's own kernels: the test records' rows)

    page = Explorer(load_now=True).template()
    after_response(lambda: runtime.import_in_background(PLOTTING_MODULES))
    runtime.log(f"session page built in {time.perf_counter() - t0:.2f} s")
    return page


def page_path_from_websocket() -> None:
    """Give a session that a websocket request made the page's own path.

    A session the server no longer has (or, before ``--num-procs`` above 1 was refused, one
    whose websocket reached another server process than its page) is built anew from the
    websocket's request: Panel then takes the page's path to be ``…/explorer/ws``, counts
    one directory too many, and points the page's stylesheets one level up (``../static/…``: not found under a path prefix, measured
    through a proxy).  Setting the path before the page is built keeps them at ``static/…``.
    """
    doc = pn.state.curdoc
    request = doc.session_context.request if doc and doc.session_context else None
    path = getattr(request, "path", None) or ""
    if path.endswith("/ws"):
        pn.state.location.pathname = path[: -len("/ws")]


def explorer_document() -> None:
    """Build the explorer page into the current session's document (``pn.state.curdoc``).

    The one entry of both servers: ``apps/explorer.py`` calls it as a script, and
    :func:`serve` hands it to Panel as the function that makes each session's page (which
    returns None: the page is in the document already, as under ``panel serve``).
    """
    page_path_from_websocket()
    if forked_server():  # ``panel serve --num-procs N``: the refusal, not the explorer
        heading = "This explorer server runs in several processes"
        refusal_document(
            "--num-procs other than 1", "--num-procs", PANEL_COMMAND, ONE_PROCESS, heading
        )
        return
    threads = threaded_server()  # ``--num-threads N`` or ``PANEL_NUM_THREADS``: likewise
    if threads is not None:
        refusal_document(*threads, ONE_LOOP, "This explorer server runs its callbacks in threads")
        return
    bad = environment_problem()  # an environment variable with a bad value: likewise
    if bad is not None:
        said, message = bad
        name = said.split("=", 1)[0]
        refusal_document(
            said,
            name,
            f"env -u {name} {PANEL_COMMAND}",
            message.split(" — ")[0],
            "This explorer server was started with a bad environment variable",
        )
        return
    with frozen_document():  # the page's ~400 Bokeh models are indexed once, not a dozen times
        build_app().servable()


MAX_REQUEST_BYTES = 2**20  # request headers `serve` reads (Tornado's default: 64 KiB)


def serve(
    port: int = 5006,
    address: str = "localhost",
    allow_websocket_origin: list[str] | None = None,
    prefix: str = "",
    num_procs: int = 1,
    show: bool = False,
    on_start: Callable[[str], None] | None = None,
) -> None:
    """Serve the explorer with Panel's server until it is stopped (Ctrl-C); returns then.

    ``port`` 0 picks a free port.  ``address``: the interface to listen on (``0.0.0.0``: all).
    ``allow_websocket_origin``: the ``host[:port]`` values a browser may open the page from
    (a reverse proxy's, or the machine's name on the network); default: ``localhost:PORT``.
    ``prefix``: a path the page is served under (``/user/alice/proxy/5006`` serves
    ``…/user/alice/proxy/5006/explorer``), for a reverse proxy that keeps the path.
    ``num_procs``: 1, the only value (one process trains on every core; any other raises
    :class:`AggMRFError` before anything listens, see :func:`check_num_procs`).
    ``show`` opens the page in the default browser.  ``on_start(url)`` is called once the server
    listens, with the page's URL on this machine.
    """
    from ...errors import AggMRFError

    check_num_procs(num_procs)
    check_environment()  # (one error: line naming a variable with a bad value)
    prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
    # Bokeh answers /favicon.ico without the prefix, the page asks for it under the prefix:
    # an extra route (Bokeh adds the prefix to it) sends it to Panel's icon
    extra_patterns = [("/favicon.ico", RedirectHandler, {"url": prefix + FAVICON})]
    try:
        server = pn.serve(
            {APP_NAME: explorer_document},
            port=port,
            address=address,
            websocket_origin=list(allow_websocket_origin or []) or None,
            prefix=prefix,
            num_procs=1,
            show=False,
            start=False,
            verbose=False,
            extra_patterns=extra_patterns if prefix else [],
            # a link longer than Tornado's 64 KiB of headers reaches the page, which says
            # it is too long (explorer.url.MAX_LINK_CHARS), instead of an empty response
            http_server_kwargs={"max_header_size": MAX_REQUEST_BYTES},
        )
    except OSError as exc:  # the port is taken, or the address is not this machine's
        raise AggMRFError(
            f"cannot listen on {address}:{port}: {exc.strerror or exc} — choose another "
            "--port (0: any free port) or --address."
        ) from exc
    except ValueError as exc:  # Bokeh's check of the websocket origins
        raise AggMRFError(
            f"--allow-websocket-origin: {exc} — give HOST or HOST:PORT, e.g. myhost:5006."
        ) from exc
    host = address if address not in ("", "0.0.0.0", "::") else "localhost"
    host = f"[{host.replace('%', '%25')}]" if ":" in host else host  # IPv6 needs brackets
    url = f"http://{host}:{server.port}{prefix}/{APP_NAME}"
    server.start()
    if on_start is not None:
        on_start(url)
    if show:
        server.io_loop.add_callback(server.show, f"/{APP_NAME}")
    server.io_loop.start()
