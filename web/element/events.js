// What each agent event shows in the panel: the transcript's lines, the status line, the
// waiting line (waiting.js), form hand-offs (handoff.js), the launcher's unread mark, and a
// failed run in the visitor's words with Try again (errors.js). The panel (panel.js) calls
// showEvent for every event of the run it shows.
import { h } from './dom.js';
import { errorKind, canRetry } from './errors.js';
import { timeLimit } from './waiting.js';
import { formOf, handOff } from './handoff.js';

/** Shows one agent event (`event`: its JSON; `extra`: {run, title?}) in `panel`. */
export function showEvent(panel, event, extra = {}) {
  const log = panel.transcript;
  // A call that began on the previous page has no tool-call event here: its title comes along.
  if (extra.title && event.call?.id) log.title(event.call.id, extra.title, false);
  const tool = event.call ? log.toolName(event.call) : null;
  const limit = timeLimit(panel.host, event.model);
  const reading = Number.isFinite(event.progress) ? panel.t('reading', { percent: Math.round(event.progress * 100) }) : null;
  if (event.type === 'thinking') panel.waiting.start(limit, reading);
  else panel.waiting.stop(); // any other sign from the model (or the run's end)
  switch (event.type) {
    case 'thinking':
      panel.say(reading ?? panel.t('thinking'));
      break;
    case 'text-delta':
      log.delta(event.text);
      break;
    case 'tool-call': {
      log.settle('step');
      log.title(event.call.id, extra.title || event.call.name);
      const line = panel.t('toolRunning', { tool: log.toolName(event.call) });
      panel.say(line);
      log.toolLine(event.call, line);
      log.callOpen(event.call.id, true);
      break;
    }
    case 'confirm-result': {
      const form = event.decision.allowed && formOf(event.call);
      if (!event.decision.allowed) {
        log.callOpen(event.call.id, false);
        // Not the visitor's no: the page took the tool away, or the visitor left or reloaded
        // the page with the card open (the previous page recorded the cause, visit.js).
        const cause = event.decision.cause;
        const withdrawn = cause === 'withdrawn';
        const key = withdrawn ? 'toolWithdrawn' : cause === 'navigated' ? 'toolLeft' : 'toolDenied';
        const line = panel.t(key, { tool });
        log.toolLine(event.call, line);
        if (withdrawn) panel.say(line);
      } else if (form) handOff(panel, event.call, form);
      else panel.say(panel.t('toolRunning', { tool }));
      break;
    }
    case 'tool-result': {
      const { call, text, isError, navigated } = event;
      const line = navigated ? panel.t('toolNavigated', { tool })
        : isError ? panel.t('toolFailed', { tool, text: text.length > 200 ? `${text.slice(0, 200)}…` : text })
          : panel.t('toolDone', { tool });
      log.toolLine(call, line, isError ? 'error' : 'note');
      log.callOpen(call.id, false);
      panel.say(line);
      break;
    }
    case 'answer':
      log.settle('answer', event.text);
      if (!panel.isOpen) panel.host.markUnread(true);
      break;
    case 'error':
      log.settle('incomplete');
      if (event.code !== 'aborted') showError(panel, event); // "Stopped." is said once, at done
      break;
    case 'done': {
      log.settle('incomplete');
      log.endOpenCalls(); // calls that never ended (Stop, a form never sent) say so
      const result = event.result;
      panel.lastTrace = result.trace;
      panel.runs.running = false;
      panel.card.finish(false);
      panel.render();
      const timedOut = panel.timedOut && result.status === 'aborted';
      panel.timedOut = false;
      if (timedOut) showError(panel, { code: 'timeout', message: `no sign from the model for ${(panel.waiting.limit ?? timeLimit(panel.host)) / 1000} s` });
      else if (result.status === 'aborted') panel.say(panel.t('stopped'));
      else panel.say(result.status === 'error' && panel.errorText ? panel.errorText : panel.t('ready'));
      panel.host.dispatchEvent(new CustomEvent('site-agent-done', { detail: result, bubbles: true, composed: true }));
      break;
    }
    default:
      break;
  }
}

// A failed run in the visitor's words (errors.js), with Try again where it makes sense; the
// technical message goes to the console (the event and the trace have it already).
export function showError(panel, event) {
  const kind = errorKind(event);
  let text = panel.hasString(`error.${kind}`) ? panel.t(`error.${kind}`) : panel.t('error');
  // model-unavailable also says why: it is the site's setup (e.g. no proxy server at proxy-url).
  if (event.code === 'model-unavailable' && event.message) text += ` ${event.message}`;
  console.warn(`<site-agent>: ${event.code}: ${event.message}`);
  const line = panel.transcript.note(text, 'error');
  const again = panel.lastText;
  if (again && canRetry(kind)) {
    line.append(' ', h('button', { type: 'button', class: 'retry-run', text: panel.t('retry'), onclick: (e) => {
      e.currentTarget.remove();
      panel.send(again);
    } }));
  }
  panel.errorText = text;
  panel.say(text);
}
