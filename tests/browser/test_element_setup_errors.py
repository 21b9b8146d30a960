"""``<site-agent>`` with settings it cannot use, end to end in headless Chromium (both lanes):
the setup box says what is wrong, the status line says the assistant is not set up (not
"Starting the assistant…" or "Stopped."), Send is disabled, and fixing the attribute brings the
assistant back. ``proxy-url`` takes only http(s) URLs and relative ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from element_support import EL, RECORDER, Shop, start_site

pytestmark = pytest.mark.browser

CONFIG_STATUS = "Not available: the assistant is not set up correctly."


@pytest.fixture(scope="module")
def site() -> Iterator[Any]:
    server = start_site()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shop(page: Any, site: Any) -> Shop:
    """The demo shop, opened with ``max-steps="abc"`` already set when Python starts."""
    page.add_init_script(RECORDER)
    shop = Shop(page, site.url).open(boot=False)
    page.evaluate(f"{EL}.setAttribute('max-steps', 'abc')")
    page.click("site-agent >> .launcher")
    shop.wait_state("ready")
    return shop


def setup_state(shop: Shop) -> dict[str, Any]:
    """What the visitor sees: the setup box, the status line, whether Send works."""
    return dict(
        shop.page.evaluate(
            f"""() => {{
            const root = {EL}.shadowRoot;
            return {{
              box: root.querySelector('.setup .config')?.innerText ?? null,
              status: root.querySelector('.status').textContent,
              sendDisabled: root.querySelector('.send').disabled,
            }};
        }}"""
        )
    )


def set_attributes(shop: Shop, **attributes: str | None) -> None:
    """Set (or remove, with ``None``) attributes; the element reconfigures soon after."""
    shop.page.evaluate(
        """(attrs) => {
            const el = document.querySelector('site-agent');
            for (const [name, value] of Object.entries(attrs)) {
              if (value === null) el.removeAttribute(name); else el.setAttribute(name, value);
            }
        }""",
        {k.replace("_", "-"): v for k, v in attributes.items()},
    )


def wait_box(shop: Shop, message: str) -> dict[str, Any]:
    """The setup state once the configuration box says ``message``."""
    shop.page.wait_for_function(
        """(message) => document.querySelector('site-agent').shadowRoot
            .querySelector('.setup .config')?.innerText.includes(message)""",
        arg=message,
        timeout=10_000,
    )
    return setup_state(shop)


def fixed(shop: Shop) -> None:
    """Back to good settings: the box goes, the status line says Ready."""
    set_attributes(shop, max_steps=None, models="demo", proxy_url=None)
    shop.page.wait_for_function(
        f"""() => {{
            const root = {EL}.shadowRoot;
            return !root.querySelector('.setup .config')
              && root.querySelector('.status').textContent === 'Ready.';
        }}""",
        timeout=10_000,
    )
    state = setup_state(shop)
    assert state == {"box": None, "status": "Ready.", "sendDisabled": False}


def test_a_bad_setting_at_start_shows_in_the_status_line(shop: Shop) -> None:
    state = setup_state(shop)
    assert state["box"] is not None and "max-steps must be a whole number" in state["box"]
    assert state["status"] == CONFIG_STATUS
    assert state["sendDisabled"] is True
    fixed(shop)


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"max_steps": "abc"}, "max-steps must be a whole number, got 'abc'"),
        ({"max_steps": "0"}, "max-steps must be from 1 to 50, got 0"),
        ({"max_steps": "99"}, "max-steps must be from 1 to 50, got 99"),
        ({"max_steps": "-1"}, "max-steps must be from 1 to 50, got -1"),
        ({"max_steps": "2.5"}, "max-steps must be a whole number, got '2.5'"),
        ({"models": "nonsense"}, "unknown model name(s) nonsense"),
        ({"models": "proxy"}, 'models includes "proxy" but proxy-url is not set'),
        (
            {"models": "proxy", "proxy_url": "javascript:alert(1)"},
            "javascript: URLs are not allowed",
        ),
        (
            {"models": "proxy", "proxy_url": "data:application/json,{}"},
            "data: URLs are not allowed",
        ),
        ({"models": "proxy", "proxy_url": "file:///etc/passwd"}, "file: URLs are not allowed"),
        ({"proxy_url": " JAVA\tSCRIPT:alert(1)"}, "javascript: URLs are not allowed"),
    ],
)
def test_each_bad_setting_shows_in_the_box_and_the_status_line(
    shop: Shop, attributes: dict[str, str], message: str
) -> None:
    set_attributes(shop, **attributes)
    state = wait_box(shop, message)
    assert state["box"].startswith("This assistant is not set up correctly:")
    assert state["status"] == CONFIG_STATUS
    assert state["sendDisabled"] is True
    fixed(shop)


def test_a_bad_setting_after_a_stopped_run_replaces_stopped(shop: Shop) -> None:
    shop.reset()
    shop.ask("add two mugs to my cart")
    shop.card()
    shop.page.click("site-agent >> .stop")
    assert shop.last_ask()["result"]["status"] == "aborted"
    assert shop.page.inner_text("site-agent >> .status") == "Stopped."
    set_attributes(shop, max_steps="0")
    state = wait_box(shop, "max-steps must be from 1 to 50")
    assert state["status"] == CONFIG_STATUS
    # Asking now fails with the configuration error; the status line keeps saying so.
    error = shop.page.evaluate(
        f"() => {EL}.ask('find mugs').then(() => null, (e) => ({{ code: e.code }}))"
    )
    assert error == {"code": "config"}
    assert setup_state(shop)["status"] == CONFIG_STATUS
    fixed(shop)
    assert shop.ask_and_wait("find red mugs")["status"] == "answered"


def test_relative_and_http_proxy_urls_are_accepted(shop: Shop) -> None:
    for url in ("/api/agent", "api/agent", "//127.0.0.1:9/api", "HTTP://127.0.0.1:9/api"):
        set_attributes(shop, models="proxy", proxy_url=url)
        # A relative one is resolved against the page (document.baseURI) before it is used.
        shop.page.wait_for_function(
            f"""(url) => {EL}.agent.model === `proxy (${{
              /^[a-z][a-z0-9+.-]*:/i.test(url) ? url : new URL(url, document.baseURI).href}})`""",
            arg=url,
            timeout=10_000,
        )
        state = setup_state(shop)
        assert state["box"] is None, (url, state)
        assert state["status"] != CONFIG_STATUS
        fixed(shop)
