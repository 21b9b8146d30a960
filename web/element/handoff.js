// Form tools hand off to the page: after Allow on a <form toolname> tool, the call ends only
// when the visitor sends the page's own form. The tool's line says what to do (naming the
// form's own submit button); where the
// panel covers the page (modal.js), the panel steps aside, scrolls the form into view and
// puts the focus in it.

/** The page's <form toolname> for `call`, if its tool is one. */
export function formOf(call) {
  try {
    return document.querySelector(`form[toolname="${CSS.escape(call.name)}"]`);
  } catch {
    return null;
  }
}

const MAX_LABEL = 60;

/** Whether `el` (one of a form's elements) submits it: HTML's submit buttons. */
function submits(el) {
  if (el.disabled) return false;
  if (el.localName === 'button') return el.type === 'submit';
  return el.localName === 'input' && (el.type === 'submit' || el.type === 'image');
}

/**
 * What `form`'s own submit button says (its aria-label, text, value or alt, in that order,
 * whitespace collapsed, at most 60 characters), or '' when it has none that can be read. The
 * first submit button is the form's default button (HTML), also one outside the form with
 * `form=`; an `<input type=submit>` without a value is labelled by the browser, so ''.
 */
export function submitLabel(form) {
  let button;
  try {
    button = [...form.elements].find(submits);
  } catch {
    return '';
  }
  if (!button) return '';
  const raw = button.getAttribute('aria-label')
    || (button.localName === 'button' ? button.textContent
      : button.type === 'image' ? button.getAttribute('alt') : button.getAttribute('value'))
    || '';
  const label = raw.replace(/\s+/g, ' ').trim();
  return label.length > MAX_LABEL ? `${label.slice(0, MAX_LABEL - 1)}…` : label;
}

/** After Allow on a form tool: `panel` says what to do and makes the form visible. */
export function handOff(panel, call, form) {
  const button = submitLabel(form);
  // A site that replaced formHandoff only (another language) keeps its own sentence.
  const own = panel.host?.stringOverrides ?? {};
  const named = button && !('formHandoff' in own && !('formHandoffButton' in own));
  const text = named ? panel.t('formHandoffButton', { button }) : panel.t('formHandoff');
  panel.transcript.toolLine(call, text, 'note handoff');
  panel.say(text);
  if (!panel.modal.active) return;
  panel.hide({ focus: false });
  form.scrollIntoView({ block: 'center' });
  const field = form.querySelector('textarea, input:not([type=hidden]), select') ?? form.querySelector('button');
  field?.focus({ preventScroll: true });
}
