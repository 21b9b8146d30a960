"""Screenshots of the confirmation card as visitors see it, and how much of it they see.

Opens the demo shop in headless Chromium in each of these set-ups, asks for a form tool with a
long note (a tall card: heading, description, the note, the reason, Deny and Allow) and takes
a screenshot of the page while the card waits:

- ``desktop``: 1280x800;
- ``phone``: 375x740, touch, mobile viewport; ``phone-landscape``: 740x375;
- ``zoom-200`` / ``zoom-400``: a 1280x800 screen at 200 % / 400 % browser zoom (a 640x400 /
  320x200 CSS-pixel viewport at 2x / 4x device pixels, which is what zoom amounts to);
- ``forced-colors``: 1280x800 with ``forced-colors: active`` (Windows high contrast);
- ``dark``: 1280x800 with ``prefers-color-scheme: dark``.

For each it prints the share of the card's height that is on screen (inside the panel's
scrolling area and the viewport), and whether Allow is on screen. The PNG files go to
``benchmarks/results/screenshots/`` (git-ignored): look at them, never commit them.

Usage: python benchmarks/browser_screenshots.py [--only NAME[,NAME]]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from browser_common import RESULTS, chromium, save, site

NOTE = (
    "send feedback: the red enamel mug arrived with a chipped rim and the box was soaked, "
    "please send a new one to the same address and tell the courier to ring twice, because "
    "the bell in the hallway is broken and nobody hears a knock from the kitchen upstairs"
)

SETUPS: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {
        "viewport": {"width": 375, "height": 740},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
    "phone-landscape": {
        "viewport": {"width": 740, "height": 375},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
    "zoom-200": {"viewport": {"width": 640, "height": 400}, "device_scale_factor": 2},
    "zoom-400": {"viewport": {"width": 320, "height": 200}, "device_scale_factor": 4},
    "forced-colors": {"viewport": {"width": 1280, "height": 800}, "forced_colors": "active"},
    "dark": {"viewport": {"width": 1280, "height": 800}, "color_scheme": "dark"},
}

MEASURE = """() => {
  const el = document.querySelector('site-agent');
  const card = el.shadowRoot.querySelector('.card');
  const body = el.shadowRoot.querySelector('.body');
  const allow = card.querySelector('.allow');
  const c = card.getBoundingClientRect();
  const b = body.getBoundingClientRect();
  const top = Math.max(c.top, b.top, 0);
  const bottom = Math.min(c.bottom, b.bottom, innerHeight);
  const a = allow.getBoundingClientRect();
  const allowSeen = a.top >= Math.max(b.top, 0) && a.bottom <= Math.min(b.bottom, innerHeight)
    && a.left >= 0 && a.right <= innerWidth;
  return { visible: Math.max(0, bottom - top) / c.height, cardHeight: c.height,
           hiddenAbove: Math.max(0, Math.max(b.top, 0) - c.top), allowSeen };
}"""


def shoot(browser: Any, base_url: str, name: str, options: dict[str, Any]) -> dict[str, Any]:
    context = browser.new_context(**options)
    page = context.new_page()
    page.goto(base_url)
    page.wait_for_selector("html[data-ready=true]")
    page.click("site-agent >> .launcher")
    page.wait_for_function(
        "document.querySelector('site-agent').state === 'ready'", timeout=120_000
    )
    page.evaluate("(text) => { document.querySelector('site-agent').ask(text); }", NOTE)
    page.locator("site-agent >> .card").wait_for(timeout=20_000)
    page.wait_for_timeout(400)  # the panel's animation and the scroll
    shots = RESULTS / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    path = shots / f"card-{name}.png"
    page.screenshot(path=str(path))
    seen: dict[str, Any] = page.evaluate(MEASURE)
    context.close()
    return {**seen, "screenshot": str(path.relative_to(RESULTS.parent.parent))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated set-up names")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(SETUPS)
    results = {}
    with site() as server, chromium() as browser:
        for name in names:
            row = shoot(browser, server.url, name, SETUPS[name])
            results[name] = row
            print(
                f"{name:16} card on screen {row['visible'] * 100:5.1f} %  "
                f"hidden above {row['hiddenAbove']:5.0f} px  Allow on screen: {row['allowSeen']}  "
                f"-> {row['screenshot']}",
                flush=True,
            )
    path = save("browser_screenshots", {"setups": results})
    print(f"written: {path}")
    print(json.dumps({k: round(v["visible"], 3) for k, v in results.items()}))


if __name__ == "__main__":
    main()
