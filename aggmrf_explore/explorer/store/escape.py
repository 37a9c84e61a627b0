"""Escaping of user-supplied text (column names, file names, values from a URL, lesson
text) before the page shows it.

Every view that shows a string the user (or a shared link, or an uploaded file) chose goes
through one of these, so a column named ``<img src=x onerror=alert(1)>`` is shown as those
characters and never parsed as HTML:

- :func:`escape_html` for widgets that render HTML (Choices.js option labels of a
  ``MultiChoice``, Tabulator column titles, ``HTML`` panes);
- :func:`escape_markdown` for ``Markdown`` / ``Alert`` panes (HTML-escaped, and the
  Markdown punctuation backslash-escaped so ``[x](javascript:…)`` is no link);
- :func:`shorten` caps a string (a 100 000-character URL value must not fill the page).
"""

from __future__ import annotations

import html
import re

__all__ = ["escape_html", "escape_markdown", "shorten", "MAX_SHOWN"]

MAX_SHOWN = 300  # characters of a user-supplied string shown at most
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:$^])")


def shorten(text: object, limit: int = MAX_SHOWN) -> str:
    """``str(text)`` cut to ``limit`` characters (an ellipsis and the full length appended)."""
    s = str(text)
    return s if len(s) <= limit else f"{s[:limit]}… ({len(s):,} characters)"


def escape_html(text: object, limit: int = MAX_SHOWN) -> str:
    """``text`` as HTML that displays exactly those characters (quotes included), shortened."""
    return html.escape(shorten(text, limit), quote=True)


def escape_markdown(text: object, limit: int = MAX_SHOWN) -> str:
    """``text`` as Markdown that displays exactly those characters: no HTML, links,
    emphasis or maths (Markdown punctuation backslash-escaped, then HTML-escaped)."""
    return html.escape(_MARKDOWN_SPECIAL.sub(r"\\\1", shorten(text, limit)), quote=True)
