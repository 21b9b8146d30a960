"""``chrome_built_in()``: Chrome's on-device model through the Prompt API (``LanguageModel``).

The only module that touches ``LanguageModel`` (design, "Layers"); every JS crossing goes through
:mod:`pysite_agent.ffi`, and ``language_model=`` takes any object with the same methods
(tests pass a fake that follows the documented API). The tool-use shape is Chrome's, behind the
flag ``prompt-api-tool-use``, as Google's public demo uses it
(https://github.com/GoogleChromeLabs/web-ai-demos, ``prompt-api-tool-use``).

How a step works (the Prompt API explainer, https://github.com/webmachinelearning/prompt-api;
quoted section names are its headings):

1. **Availability** ("Testing availability"): ``LanguageModel.availability({expectedInputs,
   expectedOutputs})`` with ``[{type: "text", languages}]``. ``"downloadable"``/``"downloading"``
   -> ``SiteAgentError("model-download-required")`` (the adapter never downloads by itself: the
   visitor starts it with :meth:`ChromeBuiltIn.prepare` from a click); ``"unavailable"`` (or no
   ``LanguageModel`` at all) -> ``model-unavailable``.
2. **Native tool use or a constraint**, chosen once by feature tests: native when the page has
   ``LanguageModelToolCall``, ``LanguageModelToolSuccess`` and ``LanguageModelToolError`` and
   ``availability()`` with the ``tool-call``/``tool-response`` types says ``"available"``;
   ``responseConstraint`` ("Structured output") otherwise.
3. **Sessions** ("Session persistence and cloning"): one *base session* per page, tool list and
   conversation, made with ``LanguageModel.create({initialPrompts: [{role: "system", content:
   instructions}], expectedInputs, expectedOutputs, tools?, signal})`` and never prompted
   itself; each step prompts a ``clone()`` of it, destroyed after the step. The base is made
   again when the instructions or the tools change, and destroyed by :meth:`ChromeBuiltIn.reset`
   (the agent's ``reset()``), when the page is hidden (``visibilitychange``), and by
   :meth:`ChromeBuiltIn.close`.
4. **The input fits the context** ("Tokenization, context window length limits, and
   overflow"): the prompt is cut as :func:`build_prompt` says, measured with
   ``measureContextUsage()`` and cut again until it takes at most ``CONTEXT_SHARE`` of what the
   session has left (``contextWindow - contextUsage``). When the browser still fires
   ``contextoverflow``, later steps send less (``last_cut`` says so).
5. **Native**: the tools are declared at ``create()`` as ``{name, description, inputSchema}``
   (no ``execute``: the page runs tools, through the agent and its rules); the conversation is
   sent as messages: visitor text, answers, each call as an assistant ``{type: "tool-call",
   value: new LanguageModelToolCall({callID, name, arguments})}`` and its result as a user
   ``{type: "tool-response", value: new LanguageModelToolSuccess({callID, name, result:
   [{type: "text" | "object", value}]})}`` or ``new LanguageModelToolError({callID, name,
   errorMessage})`` (errors and denials). Plain objects are rejected by Chrome, and a ``null``
   anywhere in a result ends the turn: a result that is a JSON object is sent as ``object``
   with :func:`strip_nulls` applied; every other result (and every untrusted one, still in its
   fence) as ``text``. ``promptStreaming()`` gives text chunks and ``{type: "tool-call",
   value}`` parts (``callID`` is empty): the first call is the reply, any others are refused
   (not run, as the proxy does; :attr:`ChromeBuiltIn.last_refused`).
6. **Constraint**: ``session.prompt(text, {responseConstraint, signal})`` (or
   ``promptStreaming`` when ``request.on_text`` is set), where the constraint is a JSON Schema
   ``anyOf`` with one branch ``{type: "answer", text}`` and one branch per tool ``{type: "tool",
   name: <const NAME>, arguments: <its inputSchema, $ref inlined>}`` (:func:`inline_refs`;
   recursion cut at ``REF_DEPTH``). The prompt ``text`` lists each tool with its argument
   structure (:func:`argument_structure`), the conversation and the reply format. The reply
   text is parsed as JSON into protocol v1's reply shape
   (:func:`pysite_agent.core.wire.parse_reply`); text that is not JSON or not a reply ->
   ``bad-reply``.
7. **Streaming**: ``request.on_text`` receives answer text as it is written: natively, the
   text chunks before any tool call; with a constraint, only once the reply is known to be an
   answer (:class:`AnswerStream`), never tool-call JSON.

The rules stay the agent's: the adapter returns one reply; the agent checks the arguments and
asks the visitor before anything runs (README, "The safety rules").

The prompt ``text`` holds at most ``max_prompt_chars`` characters (code points). The current
turn (the latest visitor message and the calls and results after it) is always shown; long
tool results are shortened (head kept, the cut marked) before older messages are dropped, and
the tool list is shortened before the current turn is: :func:`build_prompt` gives the exact
order (the native messages follow the same plan). The prompt says what was cut;
``ChromeBuiltIn.last_cut`` holds the same notes.

Errors ("Error handling"; DOMException names mapped by :data:`pysite_agent.ffi.ERROR_TABLE`):
``QuotaExceededError`` -> ``model-error`` "too long", ``NotSupportedError`` ->
``model-unavailable``, ``NotReadableError``/``SyntaxError`` -> ``model-error``, ``AbortError`` ->
``aborted``; in :meth:`ChromeBuiltIn.prepare`, ``NotAllowedError`` (no recent user activation)
-> ``model-download-required`` with the reason.

The package: ``adapter`` (the sessions; the only ``LanguageModel`` user), ``native`` (the
native tool-use shape), and pure modules any adapter may reuse, checked by mypy strict:
``prompt`` (the prompt plan), ``schema`` (the constraint schema) and ``stream`` (the reply,
streamed and whole).
"""

# Public here (as before the package was split); the names after ``as`` are re-exports.
from pysite_agent.models.chrome.adapter import CONTEXT_SHARE as CONTEXT_SHARE
from pysite_agent.models.chrome.adapter import MIN_PROMPT_CHARS as MIN_PROMPT_CHARS
from pysite_agent.models.chrome.adapter import ChromeBuiltIn, chrome_built_in
from pysite_agent.models.chrome.native import TOOL_TYPE_NAMES as TOOL_TYPE_NAMES
from pysite_agent.models.chrome.prompt import MIN_BLOCK_CHARS as MIN_BLOCK_CHARS
from pysite_agent.models.chrome.prompt import REPLY_FORMAT as REPLY_FORMAT
from pysite_agent.models.chrome.prompt import SIGNATURE_CHARS as SIGNATURE_CHARS
from pysite_agent.models.chrome.prompt import TOOL_DESCRIPTION_CHARS as TOOL_DESCRIPTION_CHARS
from pysite_agent.models.chrome.prompt import build_prompt
from pysite_agent.models.chrome.schema import NULL_PLACEHOLDER as NULL_PLACEHOLDER
from pysite_agent.models.chrome.schema import REF_DEPTH as REF_DEPTH
from pysite_agent.models.chrome.schema import argument_structure as argument_structure
from pysite_agent.models.chrome.schema import inline_refs as inline_refs
from pysite_agent.models.chrome.schema import response_constraint
from pysite_agent.models.chrome.schema import strip_nulls as strip_nulls
from pysite_agent.models.chrome.stream import AnswerStream as AnswerStream

__all__ = ["ChromeBuiltIn", "build_prompt", "chrome_built_in", "response_constraint"]
