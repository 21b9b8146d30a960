"""The tool-choice eval: the case format (eval set v1, webmcp-evals' shape), the scores, the
runner against scripted models, and ``python -m pysite_agent eval`` (demo rules, a custom
function, and the proxy adapter over real HTTP on loopback)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from aio import run

import pysite_agent as sa
from pysite_agent.__main__ import main
from pysite_agent.agent.evals import arguments_match, key_score
from pysite_agent.core.instructions import build_instructions
from pysite_agent.core.signals import AbortController, AbortedError
from pysite_agent.core.types import ModelRequest

ROOT = Path(__file__).resolve().parents[1]
DEMO_SET = ROOT / "examples" / "demo-shop-evals.json"

TOOLS = [
    {
        "name": "add_to_cart",
        "description": "Add a product to the cart",
        "inputSchema": {
            "type": "object",
            "properties": {"product": {"type": "string"}, "quantity": {"type": "integer"}},
            "required": ["product", "quantity"],
        },
    },
    {"name": "checkout", "description": "Place the order", "inputSchema": None},
    {"name": "search", "description": "Search", "inputSchema": {"type": "object"}},
]


def case(text: str, *calls: tuple[str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "name": text,
        "messages": [{"role": "user", "type": "message", "content": text}],
        "expectedCall": [{"functionName": n, "arguments": a} for n, a in calls] or None,
        **extra,
    }


class Scripted:
    """A model that gives its replies in order and records every request."""

    name = "scripted"

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def respond(self, request: ModelRequest) -> Any:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool", "name": name, "arguments": arguments}


ANSWER = {"type": "answer", "text": "Hello."}

# -- the format --------------------------------------------------------------------------------


def test_a_set_in_webmcp_evals_shape_loads_with_its_history() -> None:
    data = [
        {
            "name": "direct only",
            "messages": [
                {"role": "user", "type": "message", "content": "price 300 to 800"},
                {"role": "model", "type": "functioncall", "name": "search", "arguments": {"a": 1}},
                # webmcp-evals' own files write the response with type "functioncall" too
                {
                    "role": "user",
                    "type": "functioncall",
                    "name": "search",
                    "response": {"result": "Filters updated."},
                },
                {"role": "model", "type": "message", "content": "Done."},
                {"role": "user", "type": "message", "content": "only direct"},
            ],
            "expectedCall": [{"functionName": "search", "arguments": {"stops": [0]}}],
        }
    ]
    eval_set = sa.load_eval_set(data, tools={"tools": TOOLS})
    (loaded,) = eval_set.cases
    assert [m["role"] for m in loaded.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert loaded.messages[1]["toolCall"] == {
        "id": "call_1",
        "name": "search",
        "arguments": {"a": 1},
    }
    assert loaded.messages[2]["toolCallId"] == "call_1"
    assert loaded.messages[2]["content"] == "Filters updated."
    assert [t["name"] for t in loaded.tools] == ["add_to_cart", "checkout", "search"]
    assert loaded.tools[1]["inputSchema"] == {"type": "object"}  # null: no arguments


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"tools": TOOLS, "cases": []}, "non-empty list"),
        ({"cases": [case("x", ("add_to_cart", {}))]}, "no tools"),
        ({"tools": TOOLS, "cases": [case("x", ("refund", {}))]}, "'refund' is not among"),
        (
            {"tools": TOOLS, "cases": [{"messages": [{"role": "user"}], "expectedCall": None}]},
            "cases[0].messages[0]",
        ),
        ({"tools": [{"name": ""}], "cases": [case("x")]}, "tools[0]"),
        ({"tools": TOOLS, "cases": [case("x")], "version": 2}, "version"),
        (
            {"tools": TOOLS, "cases": [{"message": "x", "expectedCall": [{"name": "a"}]}]},
            "functionName",
        ),
        ({"tools": TOOLS + TOOLS[:1], "cases": [case("x")]}, "unique"),
    ],
)
def test_a_set_that_does_not_follow_the_format_says_where(data: Any, words: str) -> None:
    with pytest.raises(sa.EvalSetError) as info:
        sa.load_eval_set(data)
    assert words in str(info.value)


# -- the scores --------------------------------------------------------------------------------


def test_exact_argument_match_is_canonical_json_with_numbers_by_value() -> None:
    assert arguments_match({"a": 2, "b": [1, {"c": "x"}]}, {"b": [1.0, {"c": "x"}], "a": 2.0})
    assert not arguments_match({"a": 1}, {"a": True})  # a boolean is not a number
    assert not arguments_match({"a": 1}, {"a": 1, "extra": 0})
    assert not arguments_match({"a": 1}, {})
    assert not arguments_match({"a": "1"}, {"a": 1})
    assert not arguments_match([1, 2], [2, 1])
    assert arguments_match(None, None) and not arguments_match(None, 0)


@pytest.mark.parametrize(
    ("constraint", "good", "bad"),
    [
        ({"$pattern": "(?i)^mug"}, "Mug classic", "a mug"),
        ({"$contains": "tote"}, "linen tote", "Tote"),
        ({"$gt": 1, "$lte": 3}, 3, 1),
        ({"$type": "array"}, [], {}),
        ({"$type": "number"}, 1.5, True),
        ({"$any": True}, "anything", None),
    ],
)
def test_webmcp_evals_constraints(constraint: dict[str, Any], good: Any, bad: Any) -> None:
    assert arguments_match({"a": constraint}, {"a": good})
    if bad is None:  # $any: the key must be there
        assert not arguments_match({"a": constraint}, {})
    else:
        assert not arguments_match({"a": constraint}, {"a": bad})


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({"$unknown": 1}, "cases[0].expectedCall[0].arguments.a: unknown constraint '$unknown'"),
        ({"$type": "integer"}, "$type 'integer' is not a JSON type"),
        ({"$pattern": "(?x)a"}, "inline flag"),
        ({"$pattern": "("}, "not a regular expression"),
    ],
)
def test_a_constraint_typo_is_refused_when_the_set_loads(value: Any, words: str) -> None:
    data = {"tools": TOOLS, "cases": [case("find", ("search", {"a": value}))]}
    with pytest.raises(sa.EvalSetError) as info:
        sa.load_eval_set(data)
    assert words in str(info.value) and str(info.value).startswith("case 'find': ")


def test_per_key_accuracy_counts_missing_and_extra_keys() -> None:
    expected = {"product": "mug", "quantity": 2}
    assert key_score(expected, {"product": "mug", "quantity": 2}) == 1.0
    assert key_score(expected, {"product": "mug", "quantity": 3}) == 0.5
    assert key_score(expected, {"product": "mug"}) == 0.5
    assert key_score(expected, {"product": "mug", "quantity": 2, "gift": True}) == pytest.approx(
        2 / 3
    )
    assert key_score({}, {}) == 1.0
    assert key_score({}, {"x": 1}) == 0.0
    assert key_score(expected, "mug") == 0.0


# -- running -----------------------------------------------------------------------------------


def test_scores_per_case_and_in_total_from_a_scripted_model() -> None:
    data = {
        "instructions": "Be brief.",
        "tools": TOOLS,
        "cases": [
            case("add two mugs", ("add_to_cart", {"product": "mug", "quantity": 2})),
            case("add a tote", ("add_to_cart", {"product": "tote", "quantity": 1})),
            case("check out", ("checkout", {})),
            case("hello"),
            case("find a mug", ("search", {"q": "mug"})),
        ],
    }
    model = Scripted(
        tool("add_to_cart", product="mug", quantity=2),  # right, exact
        ANSWER,
        tool("add_to_cart", product="tote", quantity=3),  # right tool, one key wrong
        ANSWER,
        tool("search", q="checkout"),  # wrong tool
        ANSWER,
        ANSWER,  # right: no tool
        sa.SiteAgentError("model-unavailable", "no model here"),  # an error fails its case
    )
    report = run(sa.run_eval(data, model))
    cases = report.to_json()["cases"]
    assert [c["outcome"] for c in cases] == ["pass", "fail", "fail", "pass", "error"]
    assert [c["toolChoice"] for c in cases] == [True, True, False, True, False]
    assert [c["argumentsExact"] for c in cases] == [True, False, False, True, False]
    assert [c["argumentKeys"] for c in cases] == [1.0, 0.5, 0.0, 1.0, 0.0]
    assert cases[4]["error"] == {"code": "model-unavailable", "message": "no model here"}
    assert cases[0]["trajectory"] == [
        {**tool("add_to_cart", product="mug", quantity=2), "result": "ok"},
        {"type": "answer", "text": "Hello."},
    ]
    assert report.summary() == {"tests": 5, "pass": 2, "fail": 2, "error": 1}
    assert report.pass_rate() == 0.4
    assert report.totals() == {
        "cases": 5,
        "toolChoice": 0.6,
        "argumentsExact": 0.4,
        "argumentKeys": 0.5,
        "errors": 1,
    }
    first = model.requests[0]
    assert first.instructions == build_instructions("Be brief.")  # as the agent sends them
    assert [t["name"] for t in first.tools] == ["add_to_cart", "checkout", "search"]
    assert first.messages == [{"role": "user", "content": "add two mugs"}]
    table = report.table()
    assert "add two mugs" in table and "error: model-unavailable" in table
    total_row = table.splitlines()[-3].split()
    assert total_row[3] == "40%" and total_row[-3:] == ["60%", "40%", "50%"]
    assert "tests 5, pass 2, fail 2, error 1" in table
    assert table.endswith("model: scripted")


def test_a_case_runs_as_a_trajectory_until_the_model_answers() -> None:
    expected = (("add_to_cart", {"product": "mug", "quantity": 1}), ("checkout", {}))
    data = {
        "tools": TOOLS,
        "cases": [
            case("mug then pay", *expected, results=["Added 1 mug."]),
            case("mug then pay again", *expected),
            case("just pay", ("checkout", {})),
        ],
    }
    model = Scripted(
        tool("add_to_cart", product="mug", quantity=1),
        tool("checkout"),
        ANSWER,
        tool("checkout"),  # the wrong order: the model goes on and the verdict sees it
        tool("add_to_cart", product="mug", quantity=1),
        ANSWER,
        tool("checkout"),
        tool("checkout"),  # one call more than expected
        ANSWER,
    )
    report = run(sa.run_eval(data, model))
    first, second, third = report.to_json()["cases"]
    assert first["outcome"] == "pass" and first["toolChoice"] and first["argumentsExact"]
    assert len(model.requests) == 9
    follow_up = model.requests[1].messages
    assert follow_up[1]["toolCall"]["name"] == "add_to_cart"
    assert follow_up[2]["content"] == "Added 1 mug."  # the recorded result, no tool ran
    assert model.requests[2].messages[4]["content"] == "ok"  # no recorded result: "ok"
    # The finer scores match by name (both tools were called), the verdict by order.
    assert second["outcome"] == "fail" and second["toolChoice"]
    assert [t.get("name") for t in second["trajectory"]] == ["checkout", "add_to_cart", None]
    assert third["outcome"] == "fail" and third["toolChoice"] and third["argumentsExact"]


def test_a_model_that_never_answers_stops_at_max_steps() -> None:
    data = {"tools": TOOLS, "cases": [case("find", ("search", {"q": "mug"}))]}
    model = Scripted(*[tool("search", q="mug")] * 3)
    report = run(sa.run_eval(data, model, max_steps=3))
    (only,) = report.to_json()["cases"]
    assert only["stopped"] == "max-steps" and len(only["trajectory"]) == 3
    assert only["outcome"] == "fail"  # two calls more than expected
    with pytest.raises(ValueError, match="max_steps"):
        run(sa.run_eval(data, model, max_steps=0))


def test_an_abort_stops_the_eval() -> None:
    controller = AbortController()

    class Stopping(Scripted):
        async def respond(self, request: ModelRequest) -> Any:
            controller.abort("stop")
            return await super().respond(request)

    data = {"tools": TOOLS, "cases": [case("a"), case("b")]}
    with pytest.raises(AbortedError):
        run(sa.run_eval(data, Stopping(ANSWER, ANSWER), signal=controller.signal))


def oracle(request: ModelRequest) -> dict[str, Any]:
    """Answers what the demo shop's eval set expects (a model that is always right)."""
    text = request.messages[-1].get("content", "")
    if request.messages[-1]["role"] == "tool":
        last_call = request.messages[-2]["toolCall"]["name"]
        if "then check out" in request.messages[0]["content"] and last_call != "checkout":
            return {"type": "tool", "name": "checkout", "arguments": {}}
        return ANSWER
    for word, reply in [
        ("Hello", ANSWER),
        ("two mugs", tool("add_to_cart", product="mug", quantity=2)),
        ("tote", tool("add_to_cart", product="Linen tote bag", quantity=1)),
        ("sticker", tool("add_to_cart", product="stickers", quantity=3)),
        ("red", tool("search_products", query="red")),
        ("coffee", tool("search_products", query="coffee")),
        ("tumbler", tool("get_reviews", product="tumbler")),
        ("check out and place", tool("checkout")),
        ("add two of them", tool("add_to_cart", product="tshirt", quantity=2)),
        ("classic mug", tool("add_to_cart", product="mug-classic", quantity=1)),
    ]:
        if word in text:
            return reply
    raise AssertionError(text)


@pytest.mark.parametrize(
    "path", sorted((ROOT / "examples").glob("*evals.json")), ids=lambda p: p.name
)
def test_every_example_eval_set_loads_and_names_only_its_tools(path: Path) -> None:
    eval_set = sa.load_eval_set(json.loads(path.read_text(encoding="utf-8")))
    assert len(eval_set.cases) >= 5
    for case in eval_set.cases:
        names = {tool["name"] for tool in case.tools}
        assert {call.name for call in case.calls} <= names, case.name
    assert any(not case.calls for case in eval_set.cases)  # one case needs no tool


def test_the_demo_shops_eval_set_loads_and_a_perfect_model_scores_everything() -> None:
    data = json.loads(DEMO_SET.read_text(encoding="utf-8"))
    eval_set = sa.load_eval_set(data)
    assert len(eval_set.cases) >= 10
    report = run(sa.run_eval(eval_set, sa.custom(oracle, name="oracle")))
    assert report.pass_rate() == 1.0
    assert report.totals() == {
        "cases": len(eval_set.cases),
        "toolChoice": 1.0,
        "argumentsExact": 1.0,
        "argumentKeys": 1.0,
        "errors": 0,
    }


# -- the command -------------------------------------------------------------------------------


def test_the_command_runs_demo_rules_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    assert main(["eval", str(DEMO_SET), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "model: demo rules (not AI)" in printed and "total (10 cases)" in printed
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["model"] == "demo rules (not AI)" and report["version"] == 1
    assert len(report["cases"]) == report["total"]["cases"] == 10
    assert 0 < report["total"]["toolChoice"] < 1  # keyword matching gets some, not all
    assert main(["eval", str(DEMO_SET), "--min-tool-choice", "1"]) == 1


def scripted_fn(request: ModelRequest) -> dict[str, Any]:
    return tool("checkout")


def test_the_command_takes_a_custom_function_and_separate_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "evals.json"
    cases.write_text(json.dumps([case("pay", ("checkout", {})), case("hi")]), encoding="utf-8")
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"tools": TOOLS}), encoding="utf-8")
    code = main(
        [
            "eval",
            str(cases),
            "--tools",
            str(schema),
            "--custom",
            "test_eval:scripted_fn",
            "--json",
            "-",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] == "test_eval:scripted_fn"
    assert report["total"]["toolChoice"] == 0.5


def test_the_command_refuses_unusable_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["eval", str(bad)]) == 2
    assert "not JSON" in capsys.readouterr().err
    no_tools = tmp_path / "no-tools.json"
    no_tools.write_text(json.dumps([case("pay", ("checkout", {}))]), encoding="utf-8")
    assert main(["eval", str(no_tools)]) == 2
    assert "no tools" in capsys.readouterr().err
    assert main(["eval", str(DEMO_SET), "--custom", "nowhere"]) == 2
    assert main(["eval", str(DEMO_SET), "--custom", "pysite_agent.models:demo_rules"]) == 2
    assert "your own module" in capsys.readouterr().err
    assert main(["eval", str(tmp_path / "missing.json")]) == 2


class ProxyStub(http.server.BaseHTTPRequestHandler):
    """A protocol v1 endpoint on loopback: tool calls for cart messages, else an answer."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).seen.append({"body": body, "auth": self.headers.get("authorization")})
        text = body["messages"][-1].get("content", "")
        if "mugs" in text:
            reply: dict[str, Any] = tool("add_to_cart", product="mug", quantity=2)
        else:
            reply = {"type": "answer", "text": "Hi."}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def proxy_url() -> Iterator[str]:
    ProxyStub.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ProxyStub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/agent"
    finally:
        server.shutdown()
        server.server_close()


def test_the_command_reaches_a_proxy_over_http(
    proxy_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "evals.json"
    data = {
        "tools": TOOLS,
        "cases": [
            case("add two mugs", ("add_to_cart", {"product": "mug", "quantity": 2})),
            case("hello"),
            case("check out", ("checkout", {})),
        ],
    }
    cases.write_text(json.dumps(data), encoding="utf-8")
    code = main(
        [
            "eval",
            str(cases),
            "--proxy",
            proxy_url,
            "--header",
            "Authorization: Bearer site-token",
            "--json",
            "-",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] == f"proxy ({proxy_url})"
    assert [c["toolChoice"] for c in report["cases"]] == [True, True, False]
    assert len(ProxyStub.seen) == 4  # the call's result goes back; then the proxy answers
    assert ProxyStub.seen[1]["body"]["messages"][-1]["content"] == "ok"
    first = ProxyStub.seen[0]
    assert first["auth"] == "Bearer site-token"
    assert first["body"]["version"] == 1
    assert [t["name"] for t in first["body"]["tools"]] == ["add_to_cart", "checkout", "search"]


def test_the_command_refuses_bad_options_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each is a clear message and exit 2, never a traceback or a run that ignores the option.
    missing_dir = tmp_path / "no-such-dir" / "report.json"
    assert main(["eval", str(DEMO_SET), "--json", str(missing_dir)]) == 2
    err = capsys.readouterr().err
    assert "--json" in err and "no-such-dir" in err
    assert main(["eval", str(DEMO_SET), "--custom", "os:sep"]) == 2  # a string, not callable
    assert "--custom os:sep" in capsys.readouterr().err
    for fraction in ("5", "-0.1", "nan"):
        assert main(["eval", str(DEMO_SET), "--min-tool-choice", fraction]) == 2
        assert "--min-tool-choice" in capsys.readouterr().err
    for seconds in ("0", "-1", "nan"):
        assert main(["eval", str(DEMO_SET), "--timeout-s", seconds]) == 2
        assert "--timeout-s" in capsys.readouterr().err


def test_the_command_refuses_a_proxy_url_it_cannot_reach(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A relative or scheme-less URL is fine in a page, not on the command line: one clear
    # message before any case runs, not ten failed cases.
    for url in ("notaurl", "/api/agent", "ftp://127.0.0.1/x", "http://"):
        assert main(["eval", str(DEMO_SET), "--proxy", url]) == 2
        captured = capsys.readouterr()
        assert "--proxy" in captured.err and "total (" not in captured.out


def test_a_live_page_lists_its_tools_before_every_request() -> None:
    # A page may register tools as it goes (webmcp-evals' doors demo): the expected tool need
    # not be there when the set loads, and each request carries the tools of that moment.
    data = {"cases": [case("open, then talk", ("open_door", {}), ("talk", {}))]}
    with pytest.raises(sa.EvalSetError, match="'talk' is not among"):
        sa.load_eval_set(data, tools=[{"name": "open_door", "description": "d"}])
    eval_set = sa.load_eval_set(
        data, tools=[{"name": "open_door", "description": "d"}], check_tools=False
    )
    listings = iter([["open_door"], ["talk"], ["talk"]])

    async def list_tools() -> list[dict[str, Any]]:
        return [{"name": n, "description": n} for n in next(listings)]

    async def execute(name: str, arguments: dict[str, Any]) -> Any:
        return {"opened": True} if name == "open_door" else "Hello."

    model = Scripted(tool("open_door"), tool("talk"), ANSWER)
    report = run(sa.run_eval(eval_set, model, execute=execute, list_tools=list_tools))
    assert [[t["name"] for t in r.tools] for r in model.requests] == [
        ["open_door"],
        ["talk"],
        ["talk"],
    ]
    (only,) = report.to_json()["cases"]
    assert only["outcome"] == "pass" and only["trajectory"][0]["result"] == {"opened": True}


def test_a_page_that_fails_ends_its_case_with_page_error() -> None:
    from pysite_agent.agent.evals import PageError

    async def execute(name: str, arguments: dict[str, Any]) -> Any:
        raise PageError("the page failed: Target closed")

    data = {"tools": TOOLS, "cases": [case("pay", ("checkout", {})), case("hello")]}
    report = run(sa.run_eval(data, Scripted(tool("checkout"), ANSWER), execute=execute))
    paid, hello = report.to_json()["cases"]
    assert paid["outcome"] == "error" and paid["stopped"] == "error"
    assert paid["error"] == {"code": "page-error", "message": "the page failed: Target closed"}
    assert hello["outcome"] == "pass"  # the next case runs
