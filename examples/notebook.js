// The notebook page's glue: start Python (the bundle loader.js points at), load the kernel
// (notebook_kernel.py), send it the cells a person types, and show what comes back.
// Everything from Python or the person is shown with textContent; a trace's HTML goes only into
// a sandboxed iframe (no scripts, opaque origin).
import { loadRuntime } from '../loader.js';

const $ = (id) => document.getElementById(id);
const ui = {
  status: $('kernel-status'),
  cells: $('cells'),
  form: $('prompt'),
  code: $('code'),
  run: $('run'),
  interrupt: $('interrupt'),
  example: $('example'),
  next: $('next-count'),
};

// The session in docs/python-in-the-page.md, one cell at a time ("Next example").
const EXAMPLES = [
  `registry = ToolRegistry()
notes = []

@registry.tool(read_only=True)
def list_notes() -> str:
    """List the notes, oldest first."""
    return "\\n".join(notes) or "No notes yet."

@registry.tool
def add_note(text: str) -> str:
    """Add a note.

    Args:
        text: what to write down.
    """
    notes.append(text)
    return f"Added note {len(notes)}: {text}"

[t.name for t in registry.tools()]`,
  `agent = create_site_agent(model=demo_rules(), tools=registry.tools(), confirm=confirm)
run = agent.run("add a note buy milk")
result = await run.done   # Allow or Deny below
result.answer`,
  'show_events(run)',
  'show_trace(result)',
  `mounted = await registry.mount()   # now on document.modelContext, for any WebMCP client
page_agent = create_site_agent(model=demo_rules(), confirm=confirm)   # the page's tools
(await page_agent.run("list my notes").done).answer`,
  'await chrome_model().availability()',
];

let kernel = null; // PyProxy of notebook_kernel.Kernel, owned by this page
let current = null; // the output box of the running (or latest) cell
let lastStream = null; // { name, node }: consecutive writes to one stream share a <pre>
let running = false;
let exampleIndex = 0;

function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') el.textContent = value;
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children) if (child) el.append(child);
  return el;
}

// `proxy.method(...)` would leave the bound-method PyProxy alive: take it, call it, destroy it.
function callPy(proxy, name, ...args) {
  const method = proxy[name];
  try {
    return method(...args);
  } finally {
    method.destroy();
  }
}

function outputBox() {
  if (!current) {
    current = h('div', { class: 'out' });
    ui.cells.append(h('section', { class: 'cell' }, current));
  }
  return current;
}

function show(node) {
  outputBox().append(node);
  lastStream = null;
  node.scrollIntoView?.({ block: 'nearest' });
  return node;
}

const REASONS = {
  'not-read-only': 'This action can change something, so it asks first.',
  consequential: 'The tool is marked consequential, so it always asks.',
  'after-untrusted': 'Untrusted text is in this conversation, so every change asks first.',
  'annotations-unknown': 'The tool does not say what it does, so it asks first.',
};

// ------------------------------------------------------------------ Python -> JS

const bridge = {
  write(stream, text) {
    if (lastStream?.name !== stream || !lastStream.node.isConnected) {
      const node = h('pre', { class: stream });
      outputBox().append(node);
      lastStream = { name: stream, node };
    }
    lastStream.node.textContent += text;
  },

  // Resolves with strictly true (Allow) or false (Deny, or the run was aborted).
  confirm(json, signal) {
    const request = JSON.parse(json);
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve(false);
      const { tool, lines, reason } = request;
      const list = h('dl');
      for (const line of lines) list.append(h('dt', { text: line.label }), h('dd', { text: line.value }));
      const allow = h('button', { type: 'button', class: 'primary allow', text: 'Allow' });
      const deny = h('button', { type: 'button', class: 'deny', text: 'Deny' });
      const actions = h('div', { class: 'actions' }, deny, allow);
      const card = h('div', { class: 'card', role: 'group', 'data-tool': tool.name, 'aria-label': `Allow ${tool.title || tool.name}?` },
        h('h3', { text: `Allow ${tool.title || tool.name}?` }),
        tool.description ? h('p', { class: 'description', text: tool.description }) : null,
        lines.length ? list : h('p', { text: 'No details.' }),
        h('p', { class: 'why', text: REASONS[reason] ?? reason }),
        actions);
      let settled = false;
      const onAbort = () => finish(false);
      const finish = (allowed) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        actions.replaceWith(h('p', { class: 'verdict', text: allowed ? 'Allowed.' : 'Denied.' }));
        if (card.contains(document.activeElement)) ui.code.focus();
        resolve(allowed === true);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      allow.addEventListener('click', () => finish(true));
      deny.addEventListener('click', () => finish(false));
      show(card);
      allow.focus();
    });
  },

  frame(html, title) {
    const frame = h('iframe', { class: 'trace', sandbox: '', title: title || 'trace', loading: 'lazy' });
    frame.srcdoc = html; // a separate, script-less document: the trace is escaped inside it too
    show(frame);
  },
};

// ------------------------------------------------------------------ cells

async function runCell(code) {
  if (running || !kernel) return;
  running = true;
  renderPrompt();
  const input = h('pre', { class: 'in', 'data-prompt': `In [${ui.next.textContent}]:`, text: code });
  current = h('div', { class: 'out' });
  lastStream = null;
  const cell = h('section', { class: 'cell running' }, input, current);
  ui.cells.append(cell);
  cell.scrollIntoView?.({ block: 'nearest' });
  let reply;
  try {
    reply = JSON.parse(await callPy(kernel, 'run_cell', code));
  } catch (error) {
    reply = { ok: false, error: `The kernel failed: ${error.message}` };
  }
  cell.classList.remove('running');
  cell.dataset.count = String(reply.count ?? '');
  if (reply.repr !== undefined) show(h('pre', { class: 'result', 'data-prompt': `Out[${reply.count}]:`, text: reply.repr }));
  if (!reply.ok) {
    cell.classList.add('failed');
    show(h('pre', { class: 'error', text: reply.error }));
  }
  running = false;
  ui.next.textContent = String((reply.count ?? 0) + 1);
  renderPrompt();
}

function renderPrompt() {
  const ready = Boolean(kernel);
  ui.run.disabled = !ready || running;
  ui.code.disabled = !ready;
  ui.example.disabled = !ready || exampleIndex >= EXAMPLES.length;
  ui.interrupt.hidden = !running;
  document.documentElement.dataset.busy = running ? 'true' : 'false';
}

ui.form.addEventListener('submit', (event) => {
  event.preventDefault();
  const code = ui.code.value;
  if (!code.trim() || running) return;
  ui.code.value = '';
  runCell(code);
});

ui.code.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.shiftKey || event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    ui.form.requestSubmit();
  } else if (event.key === 'Tab' && !event.shiftKey) {
    event.preventDefault();
    ui.code.setRangeText('    ', ui.code.selectionStart, ui.code.selectionEnd, 'end');
  }
});

ui.interrupt.addEventListener('click', () => kernel && callPy(kernel, 'interrupt'));

ui.example.addEventListener('click', () => {
  if (exampleIndex >= EXAMPLES.length) return;
  ui.code.value = EXAMPLES[exampleIndex++];
  ui.code.focus();
  renderPrompt();
});

// ------------------------------------------------------------------ start

async function start() {
  const phases = { runtime: 'Loading Python…', packages: 'Loading packages…', import: 'Starting…' };
  const pyodide = await loadRuntime({
    onProgress: (p) => { ui.status.textContent = phases[p?.phase] ?? 'Starting Python…'; },
  });
  const source = await (await fetch(new URL('notebook_kernel.py', import.meta.url))).text();
  const dir = '/home/pyodide/notebook';
  pyodide.FS.mkdirTree(dir);
  pyodide.FS.writeFile(`${dir}/notebook_kernel.py`, source);
  pyodide.runPython(`import sys\nif ${JSON.stringify(dir)} not in sys.path: sys.path.insert(0, ${JSON.stringify(dir)})`);
  const mod = pyodide.pyimport('notebook_kernel');
  try {
    kernel = callPy(mod, 'create_kernel', bridge);
  } finally {
    mod.destroy();
  }
  const webmcp = document.modelContext ? 'document.modelContext is here' : 'no document.modelContext';
  ui.status.textContent = `Pyodide ${pyodide.version} is ready (main thread; ${webmcp}). `
    + 'Ready-made names: tool, ToolRegistry, create_site_agent, demo_rules, chrome_model, '
    + 'proxy_model, custom, confirm, show_events, show_trace, sa.';
  ui.next.textContent = '1';
  renderPrompt();
  document.documentElement.dataset.ready = 'true';
  ui.code.focus();
}

start().catch((error) => {
  ui.status.textContent = `Python did not start: ${error.message}`;
  document.documentElement.dataset.ready = 'failed';
  console.error(error);
});
