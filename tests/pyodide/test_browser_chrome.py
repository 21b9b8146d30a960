"""chrome_built_in() inside Pyodide.

- A faithful JS fake of the Prompt API's ``LanguageModel`` (availability with the languages
  options, create with ``monitor`` and ``downloadprogress``, prompt with ``responseConstraint`` and
  ``signal``, ``QuotaExceededError``, and ``NotAllowedError`` from ``create()`` while the model is
  ``downloadable`` and there is no user activation, checked with ``navigator.userActivation``):
  on Node and in Chromium. In Chromium the user activation comes from a real click (Playwright).
- Chromium's real ``LanguageModel``, which reports ``"unavailable"`` on this machine: the
  unavailable path and the fallback of ``first_available``.
"""

from __future__ import annotations

from typing import Any

import pytest
from pytest_pyodide import get_global_config, run_in_pyodide

_config = get_global_config()
_config.add_node_extra_globals(
    g
    for g in ("EventTarget", "Event", "DOMException", "ReadableStream")
    if g not in _config.get_node_extra_globals()
)

FAKE_LANGUAGE_MODEL = r"""
(() => {
  const LANGUAGES = ['en', 'es', 'ja'];
  const state = {
    availability: 'available', replies: [], quota: 100000, log: [],
    sessions: 0, clones: 0, destroyed: 0, activation: false, lastAvailabilityOptions: null,
  };
  // Chromium: navigator.userActivation; Node has none, so a test flag stands in.
  const activated = () => (globalThis.navigator?.userActivation
    ? navigator.userActivation.isActive : state.activation);
  const progressEvent = (loaded) => {
    if (typeof ProgressEvent === 'function') {
      return new ProgressEvent('downloadprogress', {loaded, total: 1});
    }
    const event = new Event('downloadprogress');
    Object.defineProperty(event, 'loaded', {value: loaded});
    return event;
  };
  const languagesOk = (options) => ['expectedInputs', 'expectedOutputs'].every((key) =>
    (options?.[key] ?? []).every((e) => (e.languages ?? []).every((l) => LANGUAGES.includes(l))));

  // Native tool use (Chrome, behind prompt-api-tool-use): value classes; plain objects are
  // refused as tool responses, and a null anywhere in a result ends the turn.
  class LanguageModelToolCall {
    constructor(init) {
      this.callID = init.callID; this.name = init.name; this.arguments = init.arguments;
    }
  }
  class LanguageModelToolSuccess {
    constructor(init) {
      if (!('callID' in init && 'name' in init && 'result' in init)) {
        throw new TypeError('LanguageModelToolSuccess requires callID, name, and result.');
      }
      this.callID = init.callID; this.name = init.name; this.result = init.result;
    }
  }
  class LanguageModelToolError {
    constructor(init) {
      this.callID = init.callID; this.name = init.name; this.errorMessage = init.errorMessage;
    }
  }
  const hasNull = (v) => v === null || (typeof v === 'object' && Object.values(v).some(hasNull));
  const checkInput = (input) => {
    if (typeof input === 'string') return;
    for (const message of input) {
      if (typeof message.content === 'string') continue;
      for (const part of message.content) {
        if (part.type === 'tool-response') {
          const v = part.value;
          if (!(v instanceof LanguageModelToolSuccess || v instanceof LanguageModelToolError)) {
            throw new TypeError("The value must be a LanguageModelToolSuccess or " +
              "LanguageModelToolError for type:'tool-response'");
          }
          if (message.role !== 'user') throw new TypeError('tool responses use the user role');
          if (v instanceof LanguageModelToolSuccess && hasNull(v.result)) {
            throw new DOMException('Failed to serialize tool result.', 'UnknownError');
          }
        } else if (part.type === 'tool-call' && !(part.value instanceof LanguageModelToolCall)) {
          throw new TypeError('tool-call values must be LanguageModelToolCall');
        }
      }
    }
  };
  const streamOf = (chunks, signal) => {
    const queue = chunks.map((c) => (c && typeof c === 'object' && 'call' in c)
      ? {type: 'tool-call', value: new LanguageModelToolCall({callID: '', ...c.call})} : c);
    return new ReadableStream({
      async pull(controller) {
        await new Promise((r) => setTimeout(r, 1));
        if (signal?.aborted) { controller.error(signal.reason); return; }
        if (!queue.length) { controller.close(); return; }
        controller.enqueue(queue.shift());
      },
    });
  };

  class LanguageModelSession {
    #options; #destroyed = false;
    contextWindow = Infinity; contextUsage = 10;
    constructor(options) { this.#options = options; }
    #check() {
      if (this.#destroyed) {
        throw new DOMException('The session was destroyed.', 'InvalidStateError');
      }
    }
    async clone(options = {}) {
      this.#check();
      options.signal?.throwIfAborted();
      state.clones++;
      return new LanguageModelSession(this.#options);
    }
    async measureContextUsage(input) { this.#check(); return JSON.stringify(input).length / 4; }
    #log(input, options) {
      state.log.push({
        input: typeof input === 'string' ? input : JSON.stringify(input),
        constraint: JSON.stringify(options.responseConstraint),
        constraintIsMap: options.responseConstraint instanceof Map,
        hasSignal: options.signal instanceof AbortSignal,
        initialPrompts: JSON.stringify(this.#options.initialPrompts),
        expectedInputs: JSON.stringify(this.#options.expectedInputs),
        tools: JSON.stringify(this.#options.tools ?? null),
      });
    }
    async prompt(input, options = {}) {
      this.#check();
      options.signal?.throwIfAborted();
      this.#log(input, options);
      if (input.length > state.quota) {
        throw new DOMException('The input is too large.', 'QuotaExceededError');
      }
      const reply = state.replies.shift();
      if (reply === 'WAIT') {
        return new Promise((_, reject) => options.signal.addEventListener(
          'abort', () => reject(options.signal.reason), {once: true}));
      }
      // (instanceof Error fails across realms, e.g. Node's DOMException in a vm context)
      if (typeof reply === 'object' && reply !== null && 'message' in reply) throw reply;
      return typeof reply === 'string' ? reply : JSON.stringify(reply);
    }
    promptStreaming(input, options = {}) {
      this.#check();
      checkInput(input);
      this.#log(input, options);
      const reply = state.replies.shift();
      if (Array.isArray(reply)) return streamOf(reply, options.signal);
      const text = typeof reply === 'string' ? reply : JSON.stringify(reply);
      const chunks = [];
      for (let i = 0; i < text.length; i += 5) chunks.push(text.slice(i, i + 5));
      return streamOf(chunks, options.signal);
    }
    destroy() { if (!this.#destroyed) { this.#destroyed = true; state.destroyed++; } }
  }

  return {
    state,
    toolTypes: {LanguageModelToolCall, LanguageModelToolSuccess, LanguageModelToolError},
    async availability(options = {}) {
      state.lastAvailabilityOptions = JSON.stringify(options);
      if (!languagesOk(options)) return 'unavailable';
      return state.availability;
    },
    async create(options = {}) {
      options.signal?.throwIfAborted();
      if ((options.tools ?? []).some((t) => 'execute' in t || hasNull(t))) {
        throw new TypeError('tools are declared without execute, and without null');
      }
      if (!languagesOk(options)) {
        throw new DOMException('Unsupported language.', 'NotSupportedError');
      }
      if (state.availability === 'unavailable') {
        throw new DOMException('The model is not available.', 'NotSupportedError');
      }
      if (state.availability === 'downloadable' || state.availability === 'downloading') {
        if (!activated()) {
          throw new DOMException(
            'Requires a user gesture when availability is "downloadable" or "downloading".',
            'NotAllowedError');
        }
        const monitor = new EventTarget();
        options.monitor?.(monitor);
        for (const loaded of [0, 0.25, 0.75, 1]) {
          await new Promise((r) => setTimeout(r, 5));
          options.signal?.throwIfAborted();
          monitor.dispatchEvent(progressEvent(loaded));
        }
        state.availability = 'available';
      }
      state.sessions++;
      const session = new LanguageModelSession(options);
      // Aborting create()'s signal after it resolved destroys the session.
      options.signal?.addEventListener('abort', () => session.destroy(), {once: true});
      return session;
    },
  };
})()
"""


@pytest.fixture(scope="module")
def fake_lm() -> str:
    return FAKE_LANGUAGE_MODEL


def needs_chromium(selenium: Any) -> None:
    if selenium.browser != "chrome":
        pytest.fail("needs Chromium; this runtime is " + selenium.browser)


@run_in_pyodide(packages=["pysite-agent"])
async def test_availability_and_a_constrained_step(selenium, fake_lm):
    import json

    from pyodide.code import run_js

    from pysite_agent import ffi
    from pysite_agent.core.types import ModelRequest
    from pysite_agent.models.chrome import chrome_built_in

    lm = run_js(fake_lm)
    model = chrome_built_in(languages=("en", "es"), language_model=lm)
    assert await model.availability() == "available"
    options = json.loads(lm.state.lastAvailabilityOptions)
    expected = [{"type": "text", "languages": ["en", "es"]}]
    assert options == {"expectedInputs": expected, "expectedOutputs": expected}
    assert await chrome_built_in(languages=("zh",), language_model=lm).availability() == (
        "unavailable"
    )

    count = ffi.pyproxy_tracing(True)
    try:
        baseline = count()
        lm.state.replies = ffi.to_js(
            [{"type": "tool", "name": "add_to_cart", "arguments": {"id": "mug", "qty": 2}}]
        )
        request = ModelRequest(
            instructions="You help on this shop.",
            messages=[{"role": "user", "content": "add two mugs"}],
            tools=[
                {
                    "name": "add_to_cart",
                    "description": "Add a product",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}},
                        "required": ["id"],
                        "additionalProperties": False,
                    },
                }
            ],
        )
        reply = await model.respond(request)
        assert reply == {
            "type": "tool",
            "name": "add_to_cart",
            "arguments": {"id": "mug", "qty": 2},
        }
        assert count() == baseline
    finally:
        ffi.pyproxy_tracing(False)
    (entry,) = lm.state.log
    assert entry.constraintIsMap is False and entry.hasSignal is True
    constraint = json.loads(entry.constraint)
    assert constraint["anyOf"][1]["properties"]["name"] == {"const": "add_to_cart"}
    assert constraint["anyOf"][1]["properties"]["arguments"]["required"] == ["id"]
    assert json.loads(entry.initialPrompts) == [
        {"role": "system", "content": "You help on this shop."}
    ]
    assert json.loads(entry.expectedInputs) == expected
    assert "add two mugs" in entry.input
    assert lm.state.sessions == 1 and lm.state.clones == 1 and lm.state.destroyed == 1


@run_in_pyodide(packages=["pysite-agent"])
async def test_errors_are_mapped_and_sessions_destroyed(selenium, fake_lm):
    import asyncio

    import pytest
    from pyodide.code import run_js

    from pysite_agent.core.errors import SiteAgentError
    from pysite_agent.core.signals import AbortController, AbortedError
    from pysite_agent.core.types import ModelRequest
    from pysite_agent.models.chrome import chrome_built_in

    lm = run_js(fake_lm)
    model = chrome_built_in(language_model=lm)

    def request(signal=None):
        return ModelRequest(
            instructions="i",
            messages=[{"role": "user", "content": "hello " * 30}],
            tools=[],
            signal=signal,
        )

    lm.state.quota = 100
    with pytest.raises(SiteAgentError) as info:
        await model.respond(request())
    assert info.value.code == "model-error" and "too long" in info.value.message
    assert "QuotaExceededError" in info.value.message
    lm.state.quota = 100000

    lm.state.replies = run_js("[new DOMException('filtered', 'NotReadableError'), 'not json']")
    with pytest.raises(SiteAgentError) as info:
        await model.respond(request())
    assert info.value.code == "model-error" and "filtered" in info.value.message
    with pytest.raises(SiteAgentError) as info:
        await model.respond(request())
    assert info.value.code == "bad-reply"

    lm.state.replies = run_js("['WAIT']")
    controller = AbortController()
    asyncio.get_running_loop().call_later(0.05, controller.abort, "stop")
    with pytest.raises(AbortedError):
        await model.respond(request(controller.signal))
    assert lm.state.sessions == 1  # one base session, cloned for each step
    assert lm.state.clones == lm.state.destroyed == 4

    for state, code in [
        ("downloadable", "model-download-required"),
        ("downloading", "model-download-required"),
        ("unavailable", "model-unavailable"),
    ]:
        lm.state.availability = state
        with pytest.raises(SiteAgentError) as info:
            await model.respond(request())
        assert info.value.code == code
    assert lm.state.sessions == 1  # never created a session (or a download) by itself


@run_in_pyodide(packages=["pysite-agent"])
async def test_native_tool_use_one_base_session_and_streamed_text(selenium, fake_lm):
    import json

    from pyodide.code import run_js

    import pysite_agent as sa
    from pysite_agent import ffi
    from pysite_agent.models.chrome import NULL_PLACEHOLDER, chrome_built_in

    lm = run_js(fake_lm)
    types = {name: getattr(lm.toolTypes, name) for name in lm.toolTypes.object_keys()}
    model = chrome_built_in(language_model=lm, tool_types=types)
    ran = []

    def view_cart(args):
        ran.append(args)
        return json.dumps({"items": ["mug", None], "coupon": None})

    schema = {
        "type": "object",
        "$defs": {"id": {"type": "string", "enum": ["mug", "tote"]}},
        "properties": {"id": {"$ref": "#/$defs/id"}},
    }
    tool = sa.Tool("view_cart", "What is in the cart", view_cart, schema, {"readOnlyHint": True})
    agent = sa.create_site_agent(model=model, tools=[tool])
    lm.state.replies = run_js(
        """[['Let me look. ', {call: {name: 'view_cart', arguments: {id: 'mug'}}},
            {call: {name: 'other', arguments: {}}}],
           ['You have ', 'a mug.'],
           ['Still ', 'a mug.']]"""
    )
    count = ffi.pyproxy_tracing(True)
    try:
        baseline = count()
        run = agent.run("what is in my cart?")
        result = await run.done
        assert result.status == "answered" and result.answer == "You have a mug."
        second = await agent.run("and now?").done
        assert second.answer == "Still a mug."
        assert count() == baseline, "a native step left PyProxies behind"
    finally:
        ffi.pyproxy_tracing(False)
    assert ran == [{"id": "mug"}]
    assert model.last_mode == "native"
    deltas = [e.text for e in run.events if e.type == "text-delta"]
    assert deltas == ["Let me look. ", "You have ", "a mug."]
    # one base session for the page's tools, a clone per step, each clone destroyed
    assert lm.state.sessions == 1 and lm.state.clones == 3 and lm.state.destroyed == 3
    log = [entry.to_py() for entry in lm.state.log]
    (declared,) = json.loads(log[0]["tools"])
    assert declared["inputSchema"]["properties"]["id"]["enum"] == ["mug", "tote"]
    assert log[0]["constraint"] is None
    second_input = json.loads(log[1]["input"])
    response = second_input[-1]["content"][0]
    assert response["type"] == "tool-response"
    assert response["value"]["result"] == [
        {"type": "object", "value": {"items": ["mug", NULL_PLACEHOLDER]}}
    ]
    agent.reset()
    assert lm.state.destroyed == 4  # the base session too


@pytest.mark.runtimes("node")
@run_in_pyodide(packages=["pysite-agent"])
async def test_prepare_needs_activation_then_reports_progress(selenium, fake_lm):
    import pytest
    from pyodide.code import run_js

    from pysite_agent import ffi
    from pysite_agent.core.errors import SiteAgentError
    from pysite_agent.models.chrome import chrome_built_in

    if run_js("!!globalThis.navigator?.userActivation"):
        pytest.fail("a browser: the activation test with a real click covers it")
    lm = run_js(fake_lm)
    lm.state.availability = "downloadable"
    model = chrome_built_in(language_model=lm)
    count = ffi.pyproxy_tracing(True)
    try:
        baseline = count()
        with pytest.raises(SiteAgentError) as info:
            await model.prepare()
        assert info.value.code == "model-download-required"
        assert "click" in info.value.message and "NotAllowedError" in info.value.message
        lm.state.activation = True
        progress = []
        await model.prepare(progress.append)
        assert progress == [0.0, 0.25, 0.75, 1.0]
        assert await model.availability() == "available"
        assert count() == baseline, "prepare() left PyProxies behind"
    finally:
        ffi.pyproxy_tracing(False)
    assert lm.state.sessions == lm.state.destroyed == 1


@run_in_pyodide(packages=["pysite-agent"])
async def _prepare_in_chromium(selenium, fake_lm, activated):
    import asyncio
    import json

    import pytest
    from pyodide.code import run_js

    from pysite_agent import ffi
    from pysite_agent.core.errors import SiteAgentError
    from pysite_agent.models.chrome import chrome_built_in

    if not activated:
        lm = run_js(fake_lm)
        run_js("(lm) => { globalThis.__fakeLM = lm; }")(lm)
        # Playwright's evaluate() (how pytest-pyodide starts this code) counts as a user
        # gesture; Chromium's transient activation lasts 5 s: wait until it has expired.
        for _ in range(80):
            if not run_js("navigator.userActivation.isActive"):
                break
            await asyncio.sleep(0.1)
    lm = run_js("globalThis.__fakeLM")
    lm.state.availability = "downloadable"
    assert run_js("navigator.userActivation.isActive") is activated
    model = chrome_built_in(language_model=lm)
    count = ffi.pyproxy_tracing(True)
    try:
        baseline = count()
        progress = []
        if not activated:
            with pytest.raises(SiteAgentError) as info:
                await model.prepare(progress.append)
            assert info.value.code == "model-download-required"
            assert "click" in info.value.message
            assert progress == []
        else:
            await model.prepare(progress.append)
            assert progress == [0.0, 0.25, 0.75, 1.0]
            assert json.loads(run_js("JSON.stringify(globalThis.__fakeLM.state.sessions)")) == 1
        assert count() == baseline, "prepare() left PyProxies behind"
    finally:
        ffi.pyproxy_tracing(False)


@pytest.mark.runtimes("chrome")
def test_prepare_with_a_real_click_in_chromium(selenium: Any, fake_lm: str) -> None:
    needs_chromium(selenium)
    page = selenium.driver  # the Playwright page of pytest-pyodide's playwright runner
    page.evaluate(
        """() => {
        const b = document.createElement('button');
        b.id = 'download-model'; b.textContent = 'Download the on-device model';
        document.body.append(b);
      }"""
    )
    _prepare_in_chromium(selenium, fake_lm, False)
    page.click("#download-model")  # a real input event: transient user activation (5 s)
    _prepare_in_chromium(selenium, fake_lm, True)


@run_in_pyodide(packages=["pysite-agent"])
async def _real_language_model(selenium):
    import pytest
    from pyodide.code import run_js

    from pysite_agent import ffi
    from pysite_agent.core.errors import SiteAgentError
    from pysite_agent.core.types import ModelRequest
    from pysite_agent.models import custom, first_available
    from pysite_agent.models.chrome import chrome_built_in

    assert run_js("typeof LanguageModel") == "function"
    assert await run_js("LanguageModel.availability()") == "unavailable"
    model = chrome_built_in()  # the page's real LanguageModel
    assert await model.availability() == "unavailable"
    request = ModelRequest("i", [{"role": "user", "content": "hi"}], [])
    with pytest.raises(SiteAgentError) as info:
        await model.respond(request)
    assert info.value.code == "model-unavailable"
    with pytest.raises(SiteAgentError) as info:
        await model.prepare()
    assert info.value.code == "model-unavailable"

    fallback = custom(lambda r: {"type": "answer", "text": "from the endpoint"}, name="fallback")
    chain = first_available(model, fallback)
    assert await chain.respond(request) == {"type": "answer", "text": "from the endpoint"}
    assert chain.last_model_name == "fallback"
    assert ffi.global_object("LanguageModel") is not None


@pytest.mark.runtimes("chrome")
def test_the_real_language_model_is_unavailable_here(selenium: Any) -> None:
    needs_chromium(selenium)
    _real_language_model(selenium)
