"""The small part of Playwright's sync ``Page`` API that the browser tests use, over Selenium.

Firefox (through geckodriver) and WebKitGTK (through ``WebKitWebDriver``) are driven with
WebDriver classic, the one protocol both speak here, so one :class:`EnginePage` serves both
engines, and the Chromium lanes' helpers (``tests/browser/element_support.py``: ``Shop``,
``EL``) run on it unchanged. What it offers:

- ``goto``, ``url``, ``evaluate(source, arg)`` (a function or an expression, awaited),
  ``wait_for_function(source, arg)``, ``wait_for_selector``, ``wait_for_url``, ``wait_for_timeout``;
- selectors in Playwright's piercing form, ``"site-agent >> .card"``: each part is a CSS
  selector searched in the light DOM and every open shadow root below the previous match;
  ``:nth=N`` is not supported, ``locator(...).nth(n)`` is;
- ``click``, ``fill``, ``inner_text``, ``input_value``, ``get_attribute``,
  ``eval_on_selector_all``, ``locator(...)`` (``click``, ``wait_for``, ``is_visible``,
  ``count``, ``inner_text``, ``all_inner_texts``, ``get_attribute``, ``locator``);
- ``keyboard.press/type`` and ``mouse.move`` as WebDriver actions (real input events);
- ``screenshot(path=...)``.

There are no init scripts in WebDriver classic: pages under test load ``/__engines/init.js``
first (see ``conftest.instrument``), which records the element's events and the page's
uncaught errors (``window.__pageErrors``).

Dynamic ``import(url)`` in a script is run as the page's own (``window.__import``, defined by
``init.js``): in Firefox a WebDriver script's own ``import()`` loads separate module instances.

Scripts are sent as WebDriver "execute async script" bodies, which the browser runs as the
automation's own code: a page's Content-Security-Policy does not stop them, so one helper works
on the strict-CSP page too.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

#: Finds elements by a piercing selector (``a >> b``); defined in every script that needs it.
DEEP = r"""
const __deep = (selector) => {
  let scopes = [document];
  for (const part of selector.split('>>').map((s) => s.trim())) {
    const found = [];
    const visit = (root) => {
      for (const el of root.querySelectorAll(part)) found.push(el);
      for (const el of root.querySelectorAll('*')) if (el.shadowRoot) visit(el.shadowRoot);
    };
    for (const scope of scopes) {
      if (scope !== document && scope.shadowRoot) visit(scope.shadowRoot);
      visit(scope);
    }
    scopes = [...new Set(found)];
  }
  return scopes;
};
const __visible = (el) => {
  if (!el || !el.isConnected) return false;
  const r = el.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) return false;
  return el.checkVisibility ? el.checkVisibility({ visibilityProperty: true }) : true;
};
"""

KEYS = {
    "Escape": "\ue00c",
    "Enter": "\ue007",
    "Tab": "\ue004",
    "Backspace": "\ue003",
    "ArrowDown": "\ue015",
    "ArrowUp": "\ue013",
    "Space": " ",
}


class EvaluationError(RuntimeError):
    """A script threw or rejected in the page; the message carries the page's stack."""


class Keyboard:
    def __init__(self, page: EnginePage) -> None:
        self._page = page

    def press(self, key: str) -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        ActionChains(self._page.driver).send_keys(KEYS.get(key, key)).perform()

    def type(self, text: str) -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        ActionChains(self._page.driver).send_keys(text).perform()


class Mouse:
    def __init__(self, page: EnginePage) -> None:
        self._page = page

    def move(self, x: float, y: float, steps: int = 1) -> None:
        from selenium.webdriver.common.actions.action_builder import ActionBuilder

        builder = ActionBuilder(self._page.driver, duration=50)
        start = self._page._pointer
        for i in range(1, max(1, steps) + 1):
            px = start[0] + (x - start[0]) * i / max(1, steps)
            py = start[1] + (y - start[1]) * i / max(1, steps)
            builder.pointer_action.move_to_location(int(max(0, px)), int(max(0, py)))
        builder.perform()
        self._page._pointer = (x, y)


class Locator:
    def __init__(self, page: EnginePage, selector: str, index: int = 0) -> None:
        self.page = page
        self.selector = selector
        self.index = index

    def _call(self, body: str, *args: Any) -> Any:
        return self.page.evaluate(
            f"""([selector, index, ...args]) => {{
                const el = __deep(selector)[index] || null;
                {body}
            }}""",
            [self.selector, self.index, *args],
        )

    def locator(self, selector: str) -> Locator:
        return Locator(self.page, f"{self.selector} >> {selector}")

    def nth(self, index: int) -> Locator:
        return Locator(self.page, self.selector, index)

    def count(self) -> int:
        return int(self.page.evaluate("(s) => __deep(s).length", self.selector))

    def is_visible(self) -> bool:
        return bool(self._call("return __visible(el);"))

    def wait_for(self, state: str = "visible", timeout: float = 10_000) -> None:
        tests = {
            "visible": "return __visible(el);",
            "attached": "return el !== null;",
            "detached": "return el === null;",
            "hidden": "return !__visible(el);",
        }
        deadline = time.monotonic() + timeout / 1000
        while not self._call(tests[state]):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.selector!r} did not become {state} in {timeout} ms")
            time.sleep(0.05)

    def element(self, timeout: float = 10_000) -> Any:
        """The WebDriver element (waits until it is visible)."""
        self.wait_for("visible", timeout)
        return self._call("return el;")

    def click(self, timeout: float = 10_000) -> None:
        self.element(timeout).click()

    def fill(self, text: str) -> None:
        element = self.element()
        element.clear()
        element.send_keys(text)

    def inner_text(self) -> str:
        self.wait_for("attached")
        return str(self._call("return el.innerText;"))

    def all_inner_texts(self) -> list[str]:
        texts: list[str] = self.page.evaluate(
            "(s) => __deep(s).map((e) => e.innerText)", self.selector
        )
        return texts

    def get_attribute(self, name: str) -> str | None:
        self.wait_for("attached")
        value = self._call("return el.getAttribute(args[0]);", name)
        return None if value is None else str(value)

    def input_value(self) -> str:
        self.wait_for("attached")
        return str(self._call("return el.value;"))


class EnginePage:
    """One browsing context of a Selenium ``WebDriver``, with Playwright's method names."""

    def __init__(self, driver: Any, engine: str) -> None:
        self.driver = driver
        self.engine = engine
        self.keyboard = Keyboard(self)
        self.mouse = Mouse(self)
        self._pointer: tuple[float, float] = (0.0, 0.0)
        #: Uncaught errors of documents already left (read before each navigation).
        self.past_errors: list[str] = []
        #: Regexes (re.search) of uncaught errors the current test expects.
        self.allowed_errors: list[str] = []
        driver.set_script_timeout(180)
        driver.set_page_load_timeout(60)

    # ---- navigation

    @property
    def url(self) -> str:
        return str(self.driver.current_url)

    def goto(self, url: str) -> None:
        self.past_errors.extend(self.page_errors())
        self.driver.get(url)

    def reload(self) -> None:
        self.past_errors.extend(self.page_errors())
        self.driver.refresh()

    def page_errors(self) -> list[str]:
        """Uncaught errors and unhandled rejections of the current document so far."""
        try:
            errors = self.driver.execute_script("return window.__pageErrors || []")
        except Exception:  # noqa: BLE001 - no document (yet): nothing recorded
            return []
        return [str(e) for e in errors or []]

    # ---- scripts

    def evaluate(self, source: str, arg: Any = None) -> Any:
        """Run ``source`` (a function, called with ``arg``, or an expression); awaited."""
        source = re.sub(r"\bimport\(", "(window.__import || ((u) => import(u)))(", source)
        script = (
            "const __done = arguments[arguments.length - 1];\n"
            + DEEP
            + "(async () => {\n const __v = ("
            + source
            + ");\n return typeof __v === 'function' ? await __v(arguments[0]) : await __v;\n})()"
            + ".then((value) => __done({ ok: true, value: value === undefined ? null : value }),"
            + " (e) => __done({ ok: false, error: String((e && e.stack) || e),"
            + " message: String((e && e.message) || e) }));"
        )
        outcome = self.driver.execute_async_script(script, arg)
        if not isinstance(outcome, dict) or "ok" not in outcome:
            raise EvaluationError(f"no result from the page: {outcome!r}")
        if not outcome["ok"]:
            raise EvaluationError(f"{outcome['message']}\n{outcome['error']}")
        return outcome["value"]

    def wait_for_function(
        self, source: str, arg: Any = None, timeout: float = 10_000, polling: float = 50
    ) -> Any:
        deadline = time.monotonic() + timeout / 1000
        while True:
            value = self.evaluate(source, arg)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"not true after {timeout} ms: {source}")
            time.sleep(polling / 1000)

    def wait_for_selector(self, selector: str, timeout: float = 10_000) -> None:
        self.locator(selector).wait_for("attached", timeout)

    def wait_for_url(self, pattern: str, timeout: float = 10_000) -> None:
        regex = re.compile(
            "^" + ".*".join(re.escape(p) for p in pattern.replace("**", "*").split("*")) + "$"
        )
        deadline = time.monotonic() + timeout / 1000
        while not regex.match(self.url):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the URL {self.url} does not match {pattern}")
            time.sleep(0.05)

    def wait_for_timeout(self, ms: float) -> None:
        time.sleep(ms / 1000)

    # ---- elements

    def locator(self, selector: str) -> Locator:
        return Locator(self, selector)

    def click(self, selector: str, timeout: float = 10_000) -> None:
        self.locator(selector).click(timeout)

    def fill(self, selector: str, text: str) -> None:
        self.locator(selector).fill(text)

    def inner_text(self, selector: str) -> str:
        return self.locator(selector).inner_text()

    def input_value(self, selector: str) -> str:
        return self.locator(selector).input_value()

    def get_attribute(self, selector: str, name: str) -> str | None:
        return self.locator(selector).get_attribute(name)

    def eval_on_selector_all(self, selector: str, source: str) -> Any:
        return self.evaluate(f"(s) => ({source})(__deep(s))", selector)

    def content(self) -> str:
        return str(self.driver.page_source)

    def title(self) -> str:
        return str(self.driver.title)

    def screenshot(self, path: str, timeout: float = 0) -> None:
        self.driver.save_screenshot(path)


def as_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
