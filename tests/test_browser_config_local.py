"""The element's settings for ``models="local"`` (``local-model-url``, ``local-model-sha256``,
``options.localModelSize``), checked by :func:`pysite_agent.browser._config.parse_config`."""

from __future__ import annotations

from typing import Any

import pytest

from pysite_agent.browser._config import ConfigError, parse_config

SHA = "B179C9523D0E6A0F98A330C7562B682750A6F8C8C15E5BC70EA373728110DB53"
BASE = "https://shop.example/shop/index.html"


def config(**raw: Any) -> Any:
    return parse_config({"models": "chrome local", "baseUrl": BASE, **raw})


def test_a_relative_url_is_resolved_against_the_page_and_the_hash_lowered() -> None:
    cfg = config(localModelUrl="models/m.gguf", localModelSha256=SHA, localModelSize="98362432")
    assert cfg.models == ("chrome", "local")
    assert cfg.local_model_url == "https://shop.example/shop/models/m.gguf"
    assert cfg.local_model_sha256 == SHA.lower()
    assert cfg.local_model_size == 98362432
    assert config(localModelUrl="/m.gguf").local_model_url == "https://shop.example/m.gguf"


def test_the_shortlist_and_grounding_are_on_unless_an_option_turns_them_off() -> None:
    on = config(localModelUrl="/m.gguf")
    assert on.local_model_match_tools is True and on.local_model_ground_arguments is True
    off = config(
        localModelUrl="/m.gguf", localModelMatchTools=False, localModelGroundArguments=False
    )
    assert off.local_model_match_tools is False and off.local_model_ground_arguments is False


def test_settings_are_ignored_when_local_is_not_used() -> None:
    cfg = parse_config({"models": "demo", "localModelUrl": "javascript:alert(1)"})
    assert cfg.local_model_url is None


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({}, "local-model-url is not set"),
        ({"localModelUrl": "javascript:alert(1)"}, "local-model-url must be an http"),
        ({"localModelUrl": "/m.gguf", "localModelSha256": "abc"}, "64 hexadecimal digits"),
        ({"localModelUrl": "/m.gguf", "localModelSize": 0}, "localModelSize"),
        ({"localModelUrl": "/m.gguf", "localModelMatchTools": "no"}, "localModelMatchTools"),
        ({"localModelUrl": "/m.gguf", "localModelGroundArguments": 0}, "localModelGroundArguments"),
        ({"localModelUrl": 7}, "must be a URL string"),
    ],
)
def test_unusable_settings_say_what_to_fix(raw: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        config(**raw)


def test_local_is_a_model_name_in_the_error_for_unknown_names() -> None:
    with pytest.raises(ConfigError, match="chrome, local, proxy, demo"):
        parse_config({"models": "gpt"})
