"""CPython tests for the element's settings (``pysite_agent.browser._config``) and the demo
server (``pysite_agent.cli.demo``). No browser: these run in the CPython lane in a second."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pysite_agent.__main__ import main as cli_main
from pysite_agent.browser._config import ConfigError, ElementConfig, check_proxy_url, parse_config
from pysite_agent.cli import demo as _demo

# ---------------------------------------------------------------------------- settings


def test_defaults_are_chrome_or_chrome_then_proxy() -> None:
    assert parse_config({}) == ElementConfig(
        models=("chrome",),
        proxy_url=None,
        pre_approved=(),
        max_steps=6,
        instructions=None,
        tool_timeout_ms=30_000,
        max_result_chars=4_000,
    )
    with_proxy = parse_config({"proxyUrl": " /api/agent "})
    assert with_proxy.models == ("chrome", "proxy")
    assert with_proxy.proxy_url == "/api/agent"


@pytest.mark.parametrize(
    ("raw", "models"),
    [
        ("demo", ("demo",)),
        ("Chrome, demo", ("chrome", "demo")),
        (["demo", "chrome demo"], ("demo", "chrome")),
        ("  ", ("chrome",)),
    ],
)
def test_model_tokens(raw: Any, models: tuple[str, ...]) -> None:
    assert parse_config({"models": raw}).models == models


def test_attribute_strings_and_option_values() -> None:
    config = parse_config(
        {
            "preApproved": "add_to_cart, wishlist  add_to_cart",
            "maxSteps": " 12 ",
            "instructions": "Be brief.",
            "toolTimeoutMs": 5000.0,
        }
    )
    assert config.pre_approved == ("add_to_cart", "wishlist")
    assert config.max_steps == 12
    assert config.instructions == "Be brief."
    assert config.tool_timeout_ms == 5000
    assert parse_config({"preApproved": ["a", "b c"]}).pre_approved == ("a", "b", "c")
    assert parse_config({"instructions": "   "}).instructions is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"models": "gpt"}, "unknown model name(s) gpt"),
        ({"models": "proxy"}, 'models includes "proxy" but proxy-url is not set'),
        ({"maxSteps": "0"}, "max-steps must be from 1 to 50, got 0"),
        ({"maxSteps": 51}, "max-steps must be from 1 to 50, got 51"),
        ({"maxSteps": "six"}, "max-steps must be a whole number"),
        ({"maxSteps": True}, "max-steps must be a whole number"),
        ({"maxSteps": 2.5}, "max-steps must be a whole number"),
        ({"toolTimeoutMs": 0}, "toolTimeoutMs must be at least 1"),
        ({"preApproved": [1]}, "pre-approved must list names as strings"),
        ({"preApproved": 3}, "pre-approved must be a string or a list"),
        ({"proxyUrl": 5}, "proxy-url must be a URL string"),
        ({"instructions": ["x"]}, "instructions must be text"),
    ],
)
def test_bad_settings_say_what_is_wrong(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(raw)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://proxy.example/api/agent", "https://proxy.example/api/agent"),
        ("HTTP://127.0.0.1:8787/", "HTTP://127.0.0.1:8787/"),
        (" http://localhost:8787/\n", "http://localhost:8787/"),
        ("/api/agent", "/api/agent"),
        ("api/agent", "api/agent"),
        ("../agent?x=1", "../agent?x=1"),
        ("//proxy.example/agent", "//proxy.example/agent"),
        ("/api/agent:v1", "/api/agent:v1"),  # a colon after a slash is not a scheme
    ],
)
def test_proxy_url_http_https_or_relative(raw: str, expected: str) -> None:
    assert check_proxy_url(raw) == expected
    assert check_proxy_url(raw, "https://shop.example/page") == expected
    config = parse_config({"proxyUrl": raw, "baseUrl": "http://localhost:5180/"})
    assert config.proxy_url == expected and config.models == ("chrome", "proxy")


@pytest.mark.parametrize(
    ("raw", "scheme"),
    [
        ("javascript:alert(1)", "javascript"),
        ("JavaScript:alert(1)", "javascript"),
        ("  javascript:alert(1)", "javascript"),
        ("\x01javascript:alert(1)", "javascript"),  # browsers drop C0 controls at the ends
        ("java\tscript:alert(1)", "javascript"),  # ... and tabs and newlines anywhere
        ("java\nscript:alert(1)", "javascript"),
        ('data:application/json,{"type":"answer","text":"hi"}', "data"),
        ("file:///etc/passwd", "file"),
        ("blob:http://localhost/uuid", "blob"),
        ("ftp://example.com/x", "ftp"),
        ("localhost:8787/api", "localhost"),  # the browser reads "localhost:" as a scheme
    ],
)
def test_proxy_url_other_schemes_are_a_configuration_error(raw: str, scheme: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"proxyUrl": raw, "models": "proxy"})
    message = str(info.value)
    assert message.startswith("proxy-url must be an http(s) URL or a relative URL")
    assert f"{scheme}: URLs are not allowed" in message


@pytest.mark.parametrize("raw", ["http://", "https:///path", "http:example.com", "https:?x"])
def test_proxy_url_http_without_a_host(raw: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_proxy_url(raw)
    assert "has no host" in str(info.value)


@pytest.mark.parametrize("base", ["file:///home/me/shop.html", "about:blank", "data:text/html,x"])
def test_a_relative_proxy_url_needs_an_http_page(base: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"proxyUrl": "/api/agent", "baseUrl": base})
    assert "is relative, and this page's address is not http(s)" in str(info.value)
    # An absolute http(s) URL is fine on such a page.
    assert check_proxy_url("http://127.0.0.1:8787/", base) == "http://127.0.0.1:8787/"


def test_a_blank_proxy_url_is_no_proxy_url() -> None:
    assert check_proxy_url(None) is None
    assert check_proxy_url("  ") is None
    assert check_proxy_url("\t\n") is None
    assert parse_config({"proxyUrl": "  "}).models == ("chrome",)


# ---------------------------------------------------------------------------- demo server


@pytest.fixture
def overlay(tmp_path: Path) -> Iterator[_demo.DemoServer]:
    first, second = tmp_path / "bundle", tmp_path / "examples"
    (first / "web").mkdir(parents=True)
    second.mkdir()
    (first / "loader.js").write_text("// bundle loader")
    (first / "web" / "x.wasm").write_bytes(b"\0asm")
    (second / "loader.js").write_text("// shadowed")
    (second / "demo-shop.html").write_text("<title>shop</title>")
    (second / "demo-shop.js").write_text("// page")
    (tmp_path / "secret.txt").write_text("secret")

    def echo(body: bytes, headers: Any) -> tuple[int, Any]:
        return 201, {"got": json.loads(body)}

    server = _demo.DemoServer([first, second], port=0, post_routes={"/echo": echo}).start()
    yield server
    server.stop()


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers["Content-Type"], b""


def test_overlay_root_is_the_shop_and_the_first_folder_wins(overlay: _demo.DemoServer) -> None:
    base = f"http://127.0.0.1:{overlay.server_address[1]}/"
    assert get(base) == (200, "text/html; charset=utf-8", b"<title>shop</title>")
    assert get(base + "loader.js")[2] == b"// bundle loader"
    assert get(base + "demo-shop.js")[2] == b"// page"
    assert get(base + "web/x.wasm")[1] == "application/wasm"
    assert overlay.url.startswith("http://localhost:")


@pytest.mark.parametrize("path", ["../secret.txt", "%2e%2e/secret.txt", "web/", "nope.js"])
def test_nothing_outside_the_folders_and_no_listings(overlay: _demo.DemoServer, path: str) -> None:
    base = f"http://127.0.0.1:{overlay.server_address[1]}/"
    assert get(base + path)[0] == 404


def test_post_routes(overlay: _demo.DemoServer) -> None:
    base = f"http://127.0.0.1:{overlay.server_address[1]}/"
    request = urllib.request.Request(
        base + "echo", data=b'{"a": 1}', headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 201
        assert json.loads(response.read()) == {"got": {"a": 1}}
    missing = urllib.request.Request(base + "nope", data=b"{}")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(missing, timeout=5)
    assert info.value.code == 404
    info.value.close()


def test_demo_command_reports_a_busy_port(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(_demo, "build_demo_bundle", lambda *a, **k: tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli_main(["demo", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"port {port} is already in use on 127.0.0.1: pass another --port" in err


def test_demo_command_needs_a_checkout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import pysite_agent.bundle as bundle

    monkeypatch.setattr(bundle, "checkout_root", lambda: None)
    assert cli_main(["demo", "--no-build"]) == 2
    assert "the demo needs a checkout" in capsys.readouterr().err
