"""pysite_agent.ffi on CPython: the parts that do not need JavaScript (the Pyodide side is
``tests/pyodide/test_browser_ffi.py``)."""

from __future__ import annotations

import pytest
from aio import run

from pysite_agent import ffi
from pysite_agent.core.signals import AbortController


class JsLike(Exception):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


def test_outside_pyodide_conversions_are_plain_copies() -> None:
    if ffi.IN_PYODIDE:
        pytest.skip("CPython behaviour")
    data = {"a": [1, {"b": None}]}
    copy = ffi.to_js(data)
    assert copy == data and copy is not data and copy["a"] is not data["a"]
    assert ffi.to_py(data) == data
    assert not ffi.is_js(data)
    assert ffi.global_object("fetch") is None


def test_field_reads_mappings_and_attributes() -> None:
    class Obj:
        x = 1

    assert ffi.field({"x": 1}, "x") == 1
    assert ffi.field(Obj(), "x") == 1
    assert ffi.field(Obj(), "y") is None
    assert ffi.field(None, "x") is None


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("AbortError", "aborted"),
        ("NotAllowedError", "model-unavailable"),
        ("QuotaExceededError", "model-error"),
        ("NotSupportedError", "model-unavailable"),
        ("SyntaxError", "model-error"),
        ("NotReadableError", "model-error"),
        ("NetworkError", "model-error"),
        ("InvalidStateError", "model-error"),
        ("UnknownError", "model-error"),
        ("BrandNewError", "model-error"),
    ],
)
def test_one_table_maps_names_to_codes(name: str, code: str) -> None:
    error = ffi.site_error(JsLike(name, "details"), what="create()")
    assert error.code == code
    assert f"(create(): {name}: details)" in error.message


def test_overrides_win() -> None:
    rule = ffi.ErrorRule("model-download-required", "Click first.")
    error = ffi.site_error(
        JsLike("NotAllowedError", "x"), what="create()", overrides={"NotAllowedError": rule}
    )
    assert error.code == "model-download-required" and error.message.startswith("Click first.")


def test_a_dom_exception_wrapped_by_pyodide_is_read_back() -> None:
    # What Pyodide 314 in Chromium raises for a DOMException thrown synchronously (measured).
    wrapped = JsLike(
        "Error",
        "A value of type object with tag [object DOMException] was thrown as an error!\n"
        'String interpolation of the thrown value gives """QuotaExceededError: too big""".\n'
        'The thrown value\'s toString method returns """QuotaExceededError: too big""".',
    )
    assert ffi.error_name(wrapped) == "QuotaExceededError"
    assert ffi.site_error(wrapped, what="prompt()").code == "model-error"
    assert "too big" in ffi.site_error(wrapped, what="prompt()").message


def test_python_abort_link_and_callbacks() -> None:
    controller = AbortController()
    with ffi.JsAbortLink(controller.signal, for_js=False) as link:
        controller.abort("stop")
        assert link.aborted and link.signal.reason == "stop"
    baseline = ffi.live_callbacks()
    owned = ffi.callback(lambda: 1, object())
    assert owned.value() == 1 and ffi.live_callbacks() == baseline + 1
    owned.destroy()
    assert owned.destroyed and ffi.live_callbacks() == baseline
    signal, release = ffi.signal_from_js(None)
    assert not signal.aborted
    release()


def test_maybe_await() -> None:
    async def coro() -> int:
        return 2

    assert run(ffi.maybe_await(1)) == 1
    assert run(ffi.maybe_await(coro())) == 2


def test_promise_of_for_a_python_caller_is_the_running_task() -> None:
    async def work() -> str:
        return "done"

    async def failing() -> str:
        raise ValueError("no")

    async def main() -> tuple[str, str]:
        task = ffi.promise_of(work(), for_js=False)
        assert hasattr(task, "add_done_callback")  # an asyncio.Future, already scheduled
        bad = ffi.promise_of(failing(), for_js=False)
        with pytest.raises(ValueError, match="no"):
            await bad
        return await task, "ok"

    assert run(main()) == ("done", "ok")
    assert not ffi._pending  # finished tasks are not kept
