"""The browser side: entry points the ``<site-agent>`` element calls (``element``, ``event_loop``;
JS imports these by name) and their settings (``_config``). The Pyodide boundary is
:mod:`pysite_agent.ffi`. Importing this package needs no browser."""
