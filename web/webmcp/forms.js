// Declarative WebMCP tools for the shim: each `<form toolname tooldescription>`
// becomes a tool (WebMCP declarative API). webmcp/shim.js loads this module
// only when the document has such a form.
//
// - The input schema is made from the form's named controls (see formSchema).
// - Running the tool fills the controls (firing `input` and `change` on each
//   control whose value changed), fires `toolactivated`, then submits the form
//   when it has `toolautosubmit`; otherwise it waits for the visitor's submit.
// - The submit event then has `agentInvoked === true` and `respondWith(p)`:
//   the tool's result is what `p` resolves to. Without respondWith the result
//   says the form was submitted (or `null` when the page itself navigates).
// - While the tool runs, the form has the attribute `data-tool-form-active`
//   and its submit button `data-tool-submit-active` (scripts cannot add the
//   spec's `:tool-form-active`/`:tool-submit-active` pseudo-classes).
// - Changing the form's tool attributes or its controls registers it again;
//   removing it unregisters it (`toolchange` each time); a call running then
//   rejects with UnknownError, and a form reset cancels it (AbortError).

const HOOKS = Symbol.for('pysite-agent.webmcp-forms');
const SKIPPED = new Set(['submit', 'button', 'reset', 'image', 'file', 'hidden']);
const NUMERIC = new Set(['number', 'range']);
const agentSubmits = new WeakMap(); // SubmitEvent -> (promise) => void
const pending = new Map(); // form -> {onSubmit(event), gone(why)} while its tool runs

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

/**
 * The input schema of a form tool: one property per control name.
 * text-like inputs and textarea -> string (minLength, maxLength, pattern);
 * number/range -> number (minimum, maximum); a lone checkbox -> boolean;
 * radios or same-named checkboxes -> string enum / array of enum; select ->
 * string enum of option values (array of them with `multiple`). Descriptions
 * come from `toolparamdescription`, else the control's label. `required`
 * controls are required. Disabled, file, hidden and button controls are left out.
 */
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

function setValue(el, text) {
  // The prototype's setter, so frameworks that track `value` (React) see the change.
  const proto = Object.getPrototypeOf(el);
  const setter = Object.getOwnPropertyDescriptor(proto, 'value')?.set;
  if (setter) setter.call(el, text);
  else el.value = text;
}

/** Sets the controls named `name` to `value`; returns the controls that changed. */
function fill(form, name, value) {
  const els = controlsOf(form).filter((el) => el.name === name);
  if (!els.length) return [];
  const el = els[0];
  const changed = [];
  const wanted = new Set((Array.isArray(value) ? value : [value]).map(String));
  if (el.type === 'radio') {
    for (const radio of els) {
      const on = radio.value === String(value);
      if (radio.checked !== on) {
        radio.checked = on;
        if (on) changed.push(radio);
      }
    }
  } else if (el.type === 'checkbox') {
    for (const box of els) {
      const on = els.length === 1 ? value === true || value === 'true' || value === 'on' : wanted.has(box.value);
      if (box.checked !== on) {
        box.checked = on;
        changed.push(box);
      }
    }
  } else if (el.tagName === 'SELECT' && el.multiple) {
    let any = false;
    for (const option of el.options) {
      const on = wanted.has(option.value);
      if (option.selected !== on) {
        option.selected = on;
        any = true;
      }
    }
    if (any) changed.push(el);
  } else {
    const text = value === null || value === undefined ? '' : String(value);
    if (el.value !== text) {
      setValue(el, text);
      changed.push(el);
    }
  }
  return changed;
}

function submitButton(form) {
  return [...form.elements].find((el) => el.type === 'submit' && !el.disabled) ?? null;
}

function setActive(form, on) {
  const button = submitButton(form);
  for (const [el, attr] of [[form, 'data-tool-form-active'], [button, 'data-tool-submit-active']]) {
    if (!el) continue;
    if (on) el.setAttribute(attr, '');
    else el.removeAttribute(attr);
  }
}

function describeSubmit(form, event) {
  const target = event.submitter?.getAttribute('formtarget') ?? form.getAttribute('target') ?? '';
  if (target === '' || target === '_self') return null; // the page navigates away
  return 'The form was submitted.';
}

/** Runs the form tool `entry` with `args`; resolves with its result text. */
function runForm(entry, args, signal, fire, hooks) {
  const { form } = entry;
  const call = new AbortController();
  const running = new Promise((resolve, reject) => {
    const finish = () => {
      pending.delete(form);
      form.removeEventListener('reset', onReset);
      setActive(form, false);
    };
    const onReset = () => {
      finish();
      reject(new DOMException('The form was reset while its tool ran.', 'AbortError'));
    };
    call.signal.addEventListener('abort', finish, { once: true });
    form.addEventListener('reset', onReset);
    const changed = Object.entries(args).flatMap(([name, value]) => fill(form, name, value));
    for (const el of changed) {
      el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    }
    setActive(form, true);
    const onSubmit = (event) => {
      let response = null;
      agentSubmits.set(event, (promise) => {
        response = promise;
      });
      // After the page's own submit listeners have run:
      setTimeout(() => {
        finish();
        if (!form.isConnected) {
          reject(new DOMException('The form was removed while its tool ran.', 'UnknownError'));
        } else if (response) {
          response.then((value) => resolve(typeof value === 'string' ? value : JSON.stringify(value ?? null)), reject);
        } else if (event.defaultPrevented) {
          resolve('The form was submitted; the page handled it.');
        } else {
          resolve(describeSubmit(form, event));
        }
      }, 0);
    };
    const gone = (why) => {
      finish();
      reject(new DOMException(why, 'UnknownError'));
    };
    pending.set(form, { onSubmit, gone });
    fire('toolactivated');
    if (form.hasAttribute('toolautosubmit')) {
      form.requestSubmit(submitButton(form) ?? undefined);
    } else {
      submitButton(form)?.scrollIntoView?.({ block: 'nearest' });
    }
  });
  return hooks.settle(running, signal, call, () => fire('toolcancel'));
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
        run: (args, signal, fire) => runForm(entry, args, signal, fire, hooks),
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
