// Declarative WebMCP tools for the shim (docs/webmcp-native.md, "Form tools"):
// each `<form toolname tooldescription>` is a tool, registered again when its
// tool attributes or controls change and unregistered when it goes. webmcp/shim.js
// loads this module when the document has such a form; webmcp/form-run.js runs them.

const HOOKS = Symbol.for('pysite-agent.webmcp-forms');
const SKIPPED = new Set(['submit', 'button', 'reset', 'image', 'file', 'hidden']);
const NUMERIC = new Set(['number', 'range']);
const agentSubmits = new WeakMap(); // SubmitEvent -> (promise) => void
const pending = new Map(); // form -> {onSubmit(event), gone(why)} while its tool runs
const HERE = import.meta.url;
let running; // webmcp/form-run.js

function installSubmitEventMembers() {
  if (typeof SubmitEvent === 'undefined' || 'agentInvoked' in SubmitEvent.prototype) return;
  Object.defineProperty(SubmitEvent.prototype, 'agentInvoked', {
    configurable: true,
    get() {
      return agentSubmits.has(this);
    },
  });
  Object.defineProperty(SubmitEvent.prototype, 'respondWith', {
    configurable: true,
    writable: true,
    value(response) {
      const respond = agentSubmits.get(this);
      if (!respond) throw new DOMException('respondWith() needs a submit the agent invoked', 'InvalidStateError');
      if (!this.defaultPrevented) {
        throw new DOMException('Call preventDefault() before respondWith()', 'InvalidStateError');
      }
      respond(Promise.resolve(response));
    },
  });
}

function controlsOf(form) {
  return [...form.elements].filter((el) => el.name && !el.disabled && !SKIPPED.has(el.type));
}

function describe(el) {
  const given = el.getAttribute('toolparamdescription');
  if (given) return given.trim();
  const label = el.labels?.[0]?.textContent.trim();
  return label || undefined;
}

/** The input schema of a form tool: one property per control name (docs/webmcp-native.md). */
export function formSchema(form) {
  const groups = new Map();
  for (const el of controlsOf(form)) {
    if (!groups.has(el.name)) groups.set(el.name, []);
    groups.get(el.name).push(el);
  }
  const properties = {};
  const required = [];
  for (const [name, els] of groups) {
    const el = els[0];
    let prop;
    if (el.type === 'radio') {
      prop = { type: 'string', enum: els.map((r) => r.value) };
    } else if (el.type === 'checkbox') {
      prop = els.length === 1
        ? { type: 'boolean' }
        : { type: 'array', items: { type: 'string', enum: els.map((c) => c.value) } };
    } else if (el.tagName === 'SELECT') {
      const values = [...el.options].map((o) => o.value);
      prop = el.multiple ? { type: 'array', items: { type: 'string', enum: values } } : { type: 'string', enum: values };
    } else if (NUMERIC.has(el.type)) {
      prop = { type: 'number' };
      if (el.min !== '' && Number.isFinite(Number(el.min))) prop.minimum = Number(el.min);
      if (el.max !== '' && Number.isFinite(Number(el.max))) prop.maximum = Number(el.max);
    } else {
      prop = { type: 'string' };
      if (el.minLength > 0) prop.minLength = el.minLength;
      if (el.maxLength >= 0) prop.maxLength = el.maxLength;
      if (el.pattern) prop.pattern = `^(?:${el.pattern})$`;
    }
    const description = els.map(describe).find(Boolean);
    if (description) prop.description = description;
    properties[name] = prop;
    if (els.some((e) => e.required)) required.push(name);
  }
  const schema = { type: 'object', properties };
  if (required.length) schema.required = required;
  return schema;
}

/** Runs a form tool with webmcp/form-run.js; a form gone or reset while it loads ends the call. */
function run(entry, args, signal, fire, hooks) {
  const { form } = entry;
  let ended = null;
  const onReset = () => { ended ??= new DOMException('The form was reset while its tool ran.', 'AbortError'); };
  const waiting = { onSubmit() {}, gone: (why) => { ended ??= new DOMException(why, 'UnknownError'); } };
  pending.set(form, waiting);
  form.addEventListener('reset', onReset);
  running ??= import(new URL('./form-run.js', HERE).href);
  return running.then((m) => {
    form.removeEventListener('reset', onReset);
    if (pending.get(form) === waiting) pending.delete(form);
    if (ended) throw ended;
    return m.runForm(entry, args, signal, fire, hooks, { pending, agentSubmits, controlsOf });
  });
}

/** Registers the document's form tools and keeps them in step with the DOM. */
export function startFormTools(context) {
  const hooks = context[HOOKS];
  installSubmitEventMembers();
  // Capture phase on the window: runs before the page's own submit listeners.
  window.addEventListener('submit', (event) => {
    pending.get(event.target)?.onSubmit(event);
  }, true);

  const registered = new Map(); // form -> {entry, signature}
  const sync = () => {
    const forms = new Set(document.querySelectorAll('form[toolname]'));
    for (const [form, known] of registered) {
      if (!forms.has(form)) {
        registered.delete(form);
        hooks.remove(known.entry);
        pending.get(form)?.gone('The form was removed while its tool ran.');
      }
    }
    for (const form of forms) {
      const name = form.getAttribute('toolname');
      const description = (form.getAttribute('tooldescription') ?? '').trim();
      const inputSchema = JSON.stringify(formSchema(form));
      const signature = JSON.stringify([name, description, inputSchema]);
      const known = registered.get(form);
      if (known?.signature === signature) continue;
      if (known) {
        registered.delete(form);
        hooks.remove(known.entry);
        pending.get(form)?.gone("The form's tool declaration changed while it ran.");
      }
      if (!description) continue; // a tool needs a description (the doctor says so)
      const entry = hooks.add({
        name,
        title: '',
        description,
        inputSchema,
        outputSchema: undefined,
        annotations: undefined,
        execute: null,
        exposedTo: undefined,
        form,
        run: (args, signal, fire) => run(entry, args, signal, fire, hooks),
      });
      if (entry) registered.set(form, { entry, signature });
    }
  };
  sync();
  new MutationObserver(sync).observe(document, {
    subtree: true,
    childList: true,
    attributes: true,
    attributeFilter: ['toolname', 'tooldescription', 'toolparamdescription', 'name', 'type', 'required',
      'disabled', 'multiple', 'min', 'max', 'minlength', 'maxlength', 'pattern', 'value'],
  });
}
