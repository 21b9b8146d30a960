// Running a declarative WebMCP tool (`<form toolname>`): webmcp/forms.js
// registers the form tools and loads this module on the first call of one.
//
// - Running the tool fills the controls (firing `input` and `change` on each
//   control whose value changed), fires `toolactivated`, then submits the form
//   when it has `toolautosubmit`; otherwise it waits for the visitor's submit.
// - The submit event then has `agentInvoked === true` and `respondWith(p)`:
//   the tool's result is what `p` resolves to. Without respondWith the result
//   says the form was submitted (or `null` when the page itself navigates).
// - While the tool runs, the form has the attribute `data-tool-form-active`
//   and its submit button `data-tool-submit-active` (scripts cannot add the
//   spec's `:tool-form-active`/`:tool-submit-active` pseudo-classes).

function setValue(el, text) {
  // The prototype's setter, so frameworks that track `value` (React) see the change.
  const proto = Object.getPrototypeOf(el);
  const setter = Object.getOwnPropertyDescriptor(proto, 'value')?.set;
  if (setter) setter.call(el, text);
  else el.value = text;
}

/** Sets the controls named `name` to `value`; returns the controls that changed. */
function fill(form, name, value, controlsOf) {
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

/**
 * Runs the form tool `entry` with `args`; resolves with its result text.
 * `shared` is webmcp/forms.js's state: `{pending, agentSubmits, controlsOf}`.
 */
export function runForm(entry, args, signal, fire, hooks, shared) {
  const { form } = entry;
  const { pending, agentSubmits, controlsOf } = shared;
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
    const changed = Object.entries(args).flatMap(([name, value]) => fill(form, name, value, controlsOf));
    for (const el of changed) {
      el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    }
    setActive(form, true);
    const onSubmit = (event) => {
      let response = null;
      agentSubmits.set(event, (promise) => {
        response = promise;
        responded = true;
      });
      // After the page's own submit listeners have run:
      setTimeout(() => {
        finish();
        if (response) {
          // A respondWith() made before the form went away still answers the call.
          response.then((value) => resolve(typeof value === 'string' ? value : JSON.stringify(value ?? null)), reject);
        } else if (!form.isConnected) {
          reject(new DOMException('The form was removed while its tool ran.', 'UnknownError'));
        } else if (event.defaultPrevented) {
          resolve('The form was submitted; the page handled it.');
        } else {
          resolve(describeSubmit(form, event));
        }
      }, 0);
    };
    let responded = false;
    const gone = (why) => {
      if (responded) return; // its respondWith() answers (see onSubmit)
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
