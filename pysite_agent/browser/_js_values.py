"""What the element builds its agent from: the site's JS values and the element's settings.

``options.model`` (a JS object) as :class:`JsModel`, ``options.confirm`` (a JS function) as
:func:`js_confirm`, the model chain of the ``models`` attribute (:func:`build_model`) and the
tool source (:func:`build_tools`, wrapped in :class:`TitledSource`). Used by
:mod:`pysite_agent.browser.element`, which re-exports these names; every JS crossing goes
through :mod:`pysite_agent.ffi`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from pysite_agent import demo_rules, ffi, first_available
from pysite_agent.browser._config import ConfigError, ElementConfig
from pysite_agent.core.errors import SiteAgentError
from pysite_agent.core.signals import AbortSignal
from pysite_agent.core.types import (
    ConfirmRequest,
    ModelAdapter,
    ModelRequest,
    RegisteredTool,
    ToolSource,
)
from pysite_agent.models.base import CustomModel

__all__ = ["JsModel", "TitledSource", "build_model", "build_tools", "close_source", "js_confirm"]


class JsModel(CustomModel):
    """A model adapter over a JS object: ``respond(request)``, optional ``name``,
    ``availability()`` and ``prepare({onProgress, signal})``.

    ``respond`` receives ``{instructions, messages, tools, signal}`` as plain JS data and must
    return (or resolve to) ``{type: "tool", name, arguments, id?, meta?}`` or
    ``{type: "answer", text}``.

    Errors raised by :meth:`respond`: ``SiteAgentError("bad-reply")`` when the reply cannot
    cross to Python (``DataCloneError``: a function in it, or nested deeper than the worker
    channel's ``MAX_DEPTH`` in web/runtime/channel.js); other JS errors as the agent reports
    them (``model-error``).
    """

    def __init__(self, obj: Any) -> None:
        if not callable(ffi.field(obj, "respond")):
            raise ConfigError("options.model must be an object with a respond(request) method")
        self._obj = obj
        name = ffi.field(obj, "name")
        has_availability = ffi.field(obj, "availability") is not None
        super().__init__(
            self._respond,
            name=name if isinstance(name, str) and name else "custom",
            availability=self._availability if has_availability else None,
        )

    @property
    def can_prepare(self) -> bool:
        return ffi.field(self._obj, "prepare") is not None

    async def _availability(self) -> Any:
        return ffi.json_to_py(await ffi.maybe_await(self._obj.availability()))

    async def _respond(self, request: ModelRequest) -> Any:
        with ffi.JsAbortLink(request.signal, for_js=ffi.is_js(self._obj)) as link:
            payload = ffi.json_to_js(
                {
                    "instructions": request.instructions,
                    "messages": list(request.messages),
                    "tools": list(request.tools),
                },
                signal=link.signal,
            )
            reply = self._obj.respond(payload)
            try:
                return ffi.json_to_py(await ffi.call_abortable(link, ffi.maybe_await(reply)))
            except Exception as exc:
                if ffi.error_name(exc) != "DataCloneError":
                    raise
                error = ffi.from_js_error(exc)
                detail = getattr(error, "message", "") or str(error)
                raise SiteAgentError(
                    "bad-reply", f"the model's reply could not be passed on: {detail}"
                ) from None

    async def prepare(
        self, on_progress: Callable[[float], Any] | None = None, signal: AbortSignal | None = None
    ) -> None:
        """Call the JS ``prepare({onProgress, signal})`` if the object has one."""
        if not self.can_prepare:
            return

        def progress(fraction: Any) -> None:
            if on_progress is not None and isinstance(fraction, int | float):
                on_progress(float(fraction))

        owned = ffi.callback(progress, self._obj)
        try:
            with ffi.JsAbortLink(signal, for_js=ffi.is_js(self._obj)) as link:
                options = ffi.to_js({"onProgress": owned.value, "signal": link.signal})
                await ffi.call_abortable(link, ffi.maybe_await(self._obj.prepare(options)))
        finally:
            owned.destroy()


def js_confirm(fn: Any) -> Callable[[ConfirmRequest], Any]:
    """A ``confirm`` over a JS function ``(request, {signal}) => boolean | Promise<boolean>``.

    Only a JS ``true`` allows; anything else (and a throw) denies.
    """

    async def confirm(request: ConfirmRequest) -> bool:
        with ffi.JsAbortLink(request.signal, for_js=ffi.is_js(fn)) as link:
            answer = fn(ffi.to_js(request.to_json()), ffi.to_js({"signal": link.signal}))
            answer = await ffi.call_abortable(link, ffi.maybe_await(answer))
        return answer is True

    return confirm


def build_model(
    config: ElementConfig,
    js_model: Any,
    language_model: Any = None,
    document: Any = None,
    tool_types: Any = None,
    local_engine: Any = None,
) -> ModelAdapter:
    """The model chain: ``options.model`` if given, else the ``models`` tokens in order.

    ``chrome`` is Chrome's built-in model (``language_model``: the ``LanguageModel`` object to
    use, default the page's global; ``document``: whose ``visibilitychange`` ends its sessions,
    default the page's own; ``tool_types``: an object with the Prompt API's three tool-use
    classes, default the page's globals), ``proxy`` posts protocol v1 to ``proxy_url``,
    ``local`` is the GGUF model the site hosts, run in the page (``local_engine``: the
    bridge's ``localEngine(options)`` factory of ``web/runtime/local-model.js``), ``demo`` is
    demo rules (not AI). More than one token: :func:`first_available`.
    """
    if js_model is not None:
        return JsModel(js_model)
    models: list[ModelAdapter] = []
    for token in config.models:
        if token == "chrome":
            from pysite_agent.models.chrome import TOOL_TYPE_NAMES, chrome_built_in

            types = None
            if tool_types is not None:
                types = {name: ffi.field(tool_types, name) for name in TOOL_TYPE_NAMES}
            models.append(
                chrome_built_in(language_model=language_model, document=document, tool_types=types)
            )
        elif token == "local":
            from pysite_agent.models.local import local_model

            assert config.local_model_url is not None  # parse_config checked it
            models.append(
                local_model(
                    config.local_model_url,
                    sha256=config.local_model_sha256,
                    size=config.local_model_size,
                    engine_factory=local_engine,
                    match_tools=config.local_model_match_tools,
                    ground_arguments=config.local_model_ground_arguments,
                )
            )
        elif token == "proxy":
            from pysite_agent.models.proxy import proxy

            assert config.proxy_url is not None  # parse_config checked it
            models.append(proxy(config.proxy_url))
        else:
            models.append(demo_rules())
    return models[0] if len(models) == 1 else first_available(*models)


def build_tools(js_tools: Any, model_context: Any = None, *, debugging_tools: bool = False) -> Any:
    """``options.tools`` (a JS object with ``getTools``/``executeTool``) as a tool source,
    else ``model_context`` (the page's tools seen from a worker), else the page's
    ``document.modelContext``; ``debugging_tools`` also offers the tools annotated
    ``debugging: true`` (attribute ``debugging-tools``)."""
    from pysite_agent.tools.model_context import ModelContextSource

    if js_tools is None:
        return ModelContextSource(model_context=model_context, debugging_tools=debugging_tools)
    if ffi.field(js_tools, "getTools") is None or ffi.field(js_tools, "executeTool") is None:
        raise ConfigError("options.tools must have getTools() and executeTool(tool, args)")
    return ModelContextSource(model_context=js_tools, debugging_tools=debugging_tools)


class TitledSource:
    """A tool source that remembers the titles of the tools it listed last (by name), so the
    element can write "Add to cart" where the model called ``add_to_cart``. Everything else is
    the wrapped source's."""

    def __init__(self, inner: ToolSource) -> None:
        self.inner = inner
        self.titles: dict[str, str] = {}

    @property
    def revision(self) -> object:
        return self.inner.revision

    async def get_tools(self) -> Sequence[RegisteredTool]:
        tools = await self.inner.get_tools()
        self.titles = {t.name: t.title for t in tools if t.title}
        return tools

    async def execute_tool(
        self,
        tool: RegisteredTool,
        args: dict[str, Any],
        *,
        signal: AbortSignal | None = None,
    ) -> Any:
        return await self.inner.execute_tool(tool, args, signal=signal)

    def on_change(self, callback: Callable[[], Any]) -> Callable[[], None]:
        return self.inner.on_change(callback)

    def close(self) -> None:
        close_source(self.inner)


def close_source(source: Any) -> None:
    """``source.close()`` (or ``destroy()``) when it has one; an error in it is ignored."""
    for name in ("close", "destroy"):
        method = getattr(source, name, None)
        if callable(method):
            with contextlib.suppress(Exception):
                method()
            return
