"""The explorer's page: Panel views of one store, and the pure plot functions they draw.

- ``app.py``: ``Explorer``, which composes the views around one store;
- the views (Viewers taking the store): ``controls.py``, ``data_card.py``,
  ``share_card.py`` (the sidebar's cards), ``training_tab.py``, ``privacy_tab.py``,
  ``small_tabs.py`` with ``table_view.py`` and ``suppression_view.py`` (the tabs),
  ``messages.py`` (status line, notices, warnings, errors);
- ``binding.py`` (a widget bound to a store setting), ``settle.py``, ``checkbox.py``,
  ``upload_widget.py``, ``shortcuts.py``, ``url_sync.py`` (the page's URL and the store),
  ``page_fixes.py`` (a script in the page's head), ``help.py``, ``noise_text.py``;
- ``plots.py`` and ``privacy_plots.py``: pure functions → HoloViews (with ``series.py``'s
  downsampling); ``liveplots.py``: those figures drawn once and refreshed in place.
"""
