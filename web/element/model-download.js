// The panel's setup for the site's own model (models="local"), drawn by setup.js: the download
// box with the file's size, progress and a Cancel button, and the line stating the storage the
// kept model takes here, with a button that removes it. Both call the Python controller
// (pysite_agent/browser/element.py: prepare, abort, forget_model) through `ui.call`.
//
// `ui` is {t(key, values, fallback), call(name, ...args), status(text), render(status?)}: the
// element's strings (a site's `strings` replace these too), its controller calls, its status
// line and a redraw of its setup area. The element imports this file only when a model must be
// downloaded or is kept here, so nothing of it loads before the first interaction.
import { h } from './dom.js';

/** The strings of these boxes, when the element's `strings` do not replace them. */
export const DOWNLOAD_STRINGS = {
  downloadLocal: 'Download the assistant ({size})',
  downloadLocalHelp: 'The assistant runs on this device: nothing you type leaves it. It downloads once ({size}) and this browser keeps it for this site. Nothing downloads until you click.',
  cancel: 'Cancel',
  downloadCancelled: 'Download cancelled; nothing was kept.',
  stored: 'The assistant takes {size} on this device.',
  removeModel: 'Remove it',
  removed: 'Removed from this device.',
};

/** Bytes for people: "98 MB", "1.2 GB" (decimal units, as download sizes are written). */
export function formatBytes(bytes) {
  if (!(bytes > 0)) return '0 MB';
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(1)} GB`;
  return `${Math.max(1, Math.round(bytes / 1e6))} MB`;
}

const texts = (ui) => (key, values) => ui.t(key, values, DOWNLOAD_STRINGS[key]);

/** The download box for a status entry `{availability, canPrepare, size?}`. */
export function downloadBox(entry, parent) {
  const ui = { ...parent, t: texts(parent) };
  const bar = h('progress', { max: '1', hidden: true });
  // The site's own model states its size; Chrome's on-device model does not.
  const local = Number.isFinite(entry.size) && entry.size > 0;
  const size = local ? formatBytes(entry.size) : '';
  const text = h('p', { class: 'note', text: local ? ui.t('downloadLocalHelp', { size }) : ui.t('downloadHelp') });
  const label = local ? ui.t('downloadLocal', { size }) : ui.t('download');
  const button = h('button', { type: 'button', class: 'primary download', text: label });
  const cancel = h('button', { type: 'button', class: 'cancel-download', text: ui.t('cancel'), hidden: true });
  cancel.addEventListener('click', () => {
    cancel.disabled = true;
    ui.call('abort', 'cancelled'); // Python aborts the download: nothing is kept
  });
  button.addEventListener('click', async () => {
    // Straight into Python: the click is still a recent user activation when
    // Chrome's LanguageModel.create() runs.
    button.disabled = true;
    bar.hidden = false;
    cancel.hidden = !local;
    cancel.disabled = false;
    bar.removeAttribute('value');
    const onProgress = (fraction) => {
      bar.value = fraction;
      text.textContent = ui.t('downloading', { percent: Math.round(fraction * 100) });
      ui.status(text.textContent);
    };
    text.textContent = ui.t('downloading', { percent: 0 });
    const envelope = JSON.parse(await ui.call('prepare', onProgress));
    cancel.hidden = true;
    if (envelope.ok) {
      ui.render(envelope.value);
      return;
    }
    button.disabled = false;
    bar.hidden = true;
    const cancelled = envelope.error.code === 'aborted';
    text.textContent = cancelled
      ? ui.t('downloadCancelled')
      : ui.t('downloadFailed', { message: envelope.error.message });
    text.className = cancelled ? 'note' : 'fail';
    ui.status(text.textContent);
  });
  if (entry.availability === 'downloading') text.textContent = ui.t('downloading', { percent: 0 });
  return h('div', { class: 'box download-box' }, text, bar, h('div', { class: 'actions' }, button, cancel));
}

/** The storage a kept model takes (`entry.stored`, bytes), and a way to remove it. */
export function storedBox(entry, parent) {
  const ui = { ...parent, t: texts(parent) };
  const button = h('button', { type: 'button', class: 'remove-model', text: ui.t('removeModel') });
  const line = h('p', { class: 'note stored', text: ui.t('stored', { size: formatBytes(entry.stored) }) });
  button.addEventListener('click', async () => {
    button.disabled = true;
    const envelope = JSON.parse(await ui.call('forget_model'));
    ui.render(envelope.ok ? envelope.value : null);
    ui.status(envelope.ok ? ui.t('removed') : ui.t('error', { message: envelope.error?.message }));
  });
  return h('div', { class: 'box stored-box' }, line, h('div', { class: 'actions' }, button));
}
