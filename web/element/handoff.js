// Form tools hand off to the page: after Allow on a <form toolname> tool, the call ends only
// when the visitor sends the page's own form. The tool's line says what to do; where the
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

/** After Allow on a form tool: `panel` says what to do and makes the form visible. */
export function handOff(panel, call, form) {
  const text = panel.t('formHandoff');
  panel.transcript.toolLine(call, text, 'note handoff');
  panel.say(text);
  if (!panel.modal.active) return;
  panel.hide({ focus: false });
  form.scrollIntoView({ block: 'center' });
  const field = form.querySelector('textarea, input:not([type=hidden]), select') ?? form.querySelector('button');
  field?.focus({ preventScroll: true });
}
