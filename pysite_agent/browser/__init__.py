"""The browser side: entry points the ``<site-agent>`` element calls, and :mod:`._ffi`, the one
helper module for the Pyodide boundary. Importing this package needs no browser."""
