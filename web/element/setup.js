// What stands before the conversation in the panel, drawn from the panel's state in one place
// (renderSetup): Python starting (with its progress bar), a start that failed (with Try
// again), a configuration error, the on-device model to download, no model at all; and the
// Send and Stop buttons that follow from it.
import { h } from './dom.js';
import { fmt } from './strings.js';

// Overall progress: each phase of boot.js owns a share of the bar.
const PHASES = { runtime: [0, 0.75], packages: [0.75, 0.9], import: [0.9, 0.97], agent: [0.97, 1] };

/** Draws `panel`'s setup area, model line and buttons; writes the status line for the state. */
export function renderSetup(panel) {
  const { ui, status, state, running } = panel;
  const t = (key, values) => panel.t(key, values);
  const setup = ui.setup;
  setup.replaceChildren();
  panel.progressLine = null;
  let canSend = true;
  // Which model answers is the site's business: named only when it asks (show-model).
  const showModel = panel.host.options.showModel ?? panel.host.hasAttribute('show-model');
  ui.model.textContent = status && showModel ? t('model', { model: status.active ?? status.model }) : '';
  ui.model.hidden = !ui.model.textContent;
  if (state === 'loading') {
    const bar = h('progress', { max: '1' });
    const text = h('p', { text: t('loading') });
    panel.progressLine = { bar, text };
    setup.append(h('div', { class: 'box loading' }, text, bar));
    panel.say(t('loading'));
  } else if (state === 'failed') {
    // A lost connection's technical detail goes to the console only (panel.js); a setup
    // problem the site must fix (a Content-Security-Policy, a bad runtime) is shown too.
    const detail = panel.loadError?.message ? String(panel.loadError.message).split('\n')[0] : '';
    const network = !detail || /^bootPython:|fetch|network|load failed|connection/i.test(detail) || navigator.onLine === false;
    setup.append(h('div', { class: 'box failed', role: 'alert' },
      h('p', { class: 'fail', text: t('loadFailed') }),
      h('p', { text: t('loadFailedHelp') }),
      !network && h('p', { class: 'note', text: detail }),
      h('div', { class: 'actions' }, h('button', {
        type: 'button', class: 'primary retry', text: t('retry'),
        onclick: () => panel.boot().catch(() => {}),
      }))));
    panel.say(t('loadFailed'));
    canSend = false;
  } else if (state === 'ready' && panel.configError) {
    setup.append(h('div', { class: 'box config', role: 'alert' },
      h('p', { class: 'fail', text: t('configError', { message: panel.configError }) })));
    canSend = false;
    if (!running) panel.say(t('configStatus'));
  } else if (state === 'ready' && status) {
    const download = status.models.find((m) => m.canPrepare && (m.availability === 'downloadable' || m.availability === 'downloading'));
    if (download && download.size > 0) later(setup, panel, (m, ui) => m.downloadBox(download, ui));
    else if (download) setup.append(downloadBox(panel, download));
    const kept = status.models.find((m) => m.stored > 0 && m.availability === 'available');
    if (kept && !download) later(setup, panel, (m, ui) => m.storedBox(kept, ui));
    if (status.availability === 'unavailable') {
      setup.append(h('div', { class: 'box no-model' },
        h('p', { class: 'fail', text: t('noModel') }),
        h('p', { text: t('noModelVisitor') }),
        h('p', { class: 'note', text: t('noModelOwner') })));
    }
    canSend = status.availability === 'available';
    if (!running) panel.say(canSend ? t('ready') : '');
  }
  const active = panel.host.shadowRoot.activeElement;
  ui.send.disabled = !canSend || running;
  ui.send.hidden = running;
  ui.stop.hidden = !running && !panel.runs.queued;
  // Send or Stop hid (or disabled) the button that had the focus: the focus goes to the
  // input, never to the page's <body>.
  if ((active === ui.send && (ui.send.hidden || ui.send.disabled)) || (active === ui.stop && ui.stop.hidden)) ui.input.focus();
}

// The site's own model (its size, Cancel, the storage it takes): model-download.js, loaded only
// when such a model must be downloaded or is kept here (nothing of it before the first interaction).
function later(setup, panel, make) {
  const slot = setup.appendChild(h('div'));
  import('./model-download.js').then((m) => slot.replaceWith(make(m, {
    t: (key, values, fallback) => (panel.hasString(key) ? panel.t(key, values) : fmt(fallback ?? key, values)),
    call: (name, ...args) => panel.call(name, ...args),
    status: (text) => panel.say(text),
    render: (status) => {
      if (status) panel.status = status;
      panel.render();
    },
  })));
}

/** A progress report of boot.js while Python starts: the bar, its label, the status line. */
export function bootProgress(panel, p) {
  if (panel.state !== 'loading') return;
  const phase = p && typeof p === 'object' ? p.phase : null;
  const span = PHASES[phase];
  const within = p && p.total ? Math.min(1, (p.loaded ?? 0) / p.total) : 0;
  const fraction = span ? span[0] + (span[1] - span[0]) * within : null;
  const percent = Math.round(100 * Math.max(0, Math.min(1, fraction ?? 0)));
  const label = phase && panel.hasString(`loading.${phase}`) ? panel.t(`loading.${phase}`, { percent }) : panel.t('loading');
  const line = panel.progressLine;
  if (!line) return;
  line.text.textContent = label;
  if (fraction === null || !Number.isFinite(fraction)) line.bar.removeAttribute('value');
  else line.bar.value = Math.max(0, Math.min(1, fraction));
  panel.say(panel.runs.queued ? panel.t('queued') : label);
}

function downloadBox(panel, entry) {
  const t = (key, values) => panel.t(key, values);
  const bar = h('progress', { max: '1', hidden: true });
  const text = h('p', { class: 'note', text: t('downloadHelp') });
  const button = h('button', { type: 'button', class: 'primary download', text: t('download') });
  button.addEventListener('click', async () => {
    // Straight into Python: the click is still a recent user activation when
    // Chrome's LanguageModel.create() runs.
    button.disabled = true;
    bar.hidden = false;
    bar.removeAttribute('value');
    const onProgress = (fraction) => {
      bar.value = fraction;
      text.textContent = t('downloading', { percent: Math.round(fraction * 100) });
      panel.say(text.textContent);
    };
    text.textContent = t('downloading', { percent: 0 });
    const envelope = await panel.prepare(onProgress);
    if (!envelope.ok) {
      button.disabled = false;
      text.textContent = t('downloadFailed', { message: envelope.error.message });
      text.className = 'fail';
    }
  });
  if (entry.availability === 'downloading') text.textContent = t('downloading', { percent: 0 });
  return h('div', { class: 'box download-box' }, text, bar, h('div', { class: 'actions' }, button));
}
