// The empty panel and a fresh start: an optional greeting and example requests (attributes
// greeting and examples, separated by "|", or options.greeting and options.examples, an
// array), shown until the conversation starts; and "New conversation", which asks first when
// there is a conversation to lose.
import { h } from './dom.js';

/** Draws `panel`'s welcome area (empty unless the conversation is and the site set one). */
export function renderWelcome(panel) {
  const { ui, host } = panel;
  const o = host.options;
  const greeting = o.greeting ?? host.getAttribute('greeting');
  const raw = o.examples ?? host.getAttribute('examples');
  const examples = (Array.isArray(raw) ? raw : String(raw ?? '').split('|')).map((e) => String(e).trim()).filter(Boolean);
  ui.welcome.replaceChildren();
  const empty = panel.transcript.empty && !panel.runs.queued && panel.state !== 'failed';
  if (!empty) return;
  if (greeting) ui.welcome.append(h('p', { class: 'msg assistant greeting', text: String(greeting) }));
  if (!examples.length) return;
  const label = panel.t('examples');
  const list = h('div', { class: 'examples', role: 'group', 'aria-label': label }, h('span', { class: 'note', text: label }));
  for (const text of examples) list.append(h('button', { type: 'button', class: 'example', text, onclick: () => panel.send(text) }));
  ui.welcome.append(list);
}

/** "New conversation": at once when nothing would be lost, else "Start over" / "Keep it". */
export function askNewChat(panel, start) {
  const { ui } = panel;
  if (panel.transcript.empty) return start();
  const close = (focus) => {
    ui.freshAsk.hidden = true;
    ui.freshAsk.replaceChildren();
    ui.fresh.hidden = false;
    if (focus) ui.fresh.focus();
  };
  const keep = h('button', { type: 'button', class: 'fresh-no', text: panel.t('newChatCancel'), onclick: () => close(true) });
  const yes = h('button', { type: 'button', class: 'danger fresh-yes', text: panel.t('newChatYes'), onclick: () => {
    close(false);
    start();
  } });
  ui.freshAsk.replaceChildren(h('span', { text: panel.t('newChatAsk') }), yes, keep);
  ui.freshAsk.setAttribute('aria-label', panel.t('newChat'));
  ui.freshAsk.hidden = false;
  ui.fresh.hidden = true;
  keep.focus();
}
