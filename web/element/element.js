// <site-agent>: the element a page sees. What loads with the page is this file: the launcher,
// the attributes, the lifecycle and the public API. The panel and everything behind it
// (web/element/panel.js: the transcript, the confirmation card, the run bookkeeping, their
// styles, and the runtime that starts Python) load when the visitor shows intent (the pointer
// near the launcher, keyboard focus on it, a click) or a script needs them (ask(), agent,
// preload, a conversation to restore); every method that needs the panel waits for it.
import { h, adoptStyles } from './dom.js';
import { DEFAULT_STRINGS, lookup } from './strings.js';
import { saveData, setBaseURL } from '../runtime/settings.js';

export { DEFAULT_STRINGS };

// The custom properties and the launcher; the panel's styles come with the panel (styles.js).
// Theme with the --site-agent-* custom properties on the element; ::part(launcher) reaches
// the launcher.
const LAUNCHER_STYLES = `
:host{--_accent:var(--site-agent-accent,#0f766e);--_accent-fg:var(--site-agent-accent-fg,#fff);
--_bg:var(--site-agent-bg,#fff);--_fg:var(--site-agent-fg,#1f2328);--_muted:var(--site-agent-muted,#57606a);
--_border:var(--site-agent-border,#d0d7de);--_surface:var(--site-agent-surface,#f3f5f7);
--_danger:var(--site-agent-danger,#b42318);--_radius:var(--site-agent-radius,12px);
--_font:var(--site-agent-font,system-ui,-apple-system,"Segoe UI",sans-serif);--_z:var(--site-agent-z,2147483000);
--_x:var(--site-agent-offset-x,1.25rem);--_y:var(--site-agent-offset-y,1.25rem);
--_l:auto;--_r:var(--_x);--_t:auto;--_b:var(--_y);--_pt:auto;--_pb:calc(var(--_y) + 3.65rem);
font-family:var(--_font);color:var(--_fg);font-size:.9375rem;line-height:1.4}
:host([placement~=left]){--_l:var(--_x);--_r:auto}
:host([placement~=top]){--_t:var(--_y);--_b:auto;--_pt:calc(var(--_y) + 3.65rem);--_pb:auto}
@media (prefers-color-scheme:dark){:host{--_accent:var(--site-agent-accent,#2dd4bf);--_accent-fg:var(--site-agent-accent-fg,#04201d);
--_bg:var(--site-agent-bg,#16191d);--_fg:var(--site-agent-fg,#e6e8eb);--_muted:var(--site-agent-muted,#9aa4af);
--_border:var(--site-agent-border,#343a42);--_surface:var(--site-agent-surface,#20252b);--_danger:var(--site-agent-danger,#f97066)}}
@supports (color:oklch(from red l c h)){:host{--_accent-fg:var(--site-agent-accent-fg,oklch(from var(--_accent) clamp(0,(.57 - l)*1000,1) 0 0))}}
*,*::before,*::after{box-sizing:border-box}
[hidden]{display:none!important}
button,textarea{font:inherit;color:inherit}
button{cursor:pointer;border-radius:calc(var(--_radius)*.67);border:1px solid var(--_border);background:var(--_surface);padding:.45em .9em}
button:disabled{cursor:default;opacity:.55}
:focus-visible{outline:2px solid var(--_accent);outline-offset:2px}
.primary{background:var(--_accent);color:var(--_accent-fg);border-color:var(--_accent)}
.danger{color:var(--_danger);border-color:var(--_danger);background:transparent}
.launcher{position:fixed;right:var(--_r);left:var(--_l);top:var(--_t);bottom:var(--_b);z-index:var(--_z);background:var(--_accent);color:var(--_accent-fg);
border:0;border-radius:999px;padding:.75em 1.2em;font-weight:600;box-shadow:0 4px 16px rgba(0,0,0,.2)}
.launcher[data-unread]::after{content:"";display:inline-block;width:.6em;height:.6em;margin-inline-start:.5em;border-radius:50%;background:currentColor;vertical-align:middle}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (max-width:600px),(max-height:500px){:host{--_x:var(--site-agent-offset-x,.75rem);--_y:var(--site-agent-offset-y,.75rem)}}
@media (forced-colors:active){.launcher{border:2px solid ButtonText}:focus-visible{outline:3px solid Highlight}}
`;

const ATTRS = ['proxy-url', 'models', 'pre-approved', 'max-steps', 'instructions', 'debugging-tools',
  'local-model-url', 'local-model-sha256'];
const SHOWN = ['greeting', 'examples', 'show-model']; // they change only what the panel draws

// How long a removed element keeps its agent (ms): put back within it (a re-render, a portal,
// a route that moves it), it goes on as it was; later, the agent is released and a pending
// card ends as a denial, and the next start takes up the conversation the panel shows.
export const TEARDOWN_MS = 2000;

let panelModule = null;
/** The panel's code (web/element/panel.js), loaded once per page. */
const loadPanel = () => (panelModule ??= import('./panel.js'));

export class SiteAgentElement extends HTMLElement {
  static observedAttributes = ['label', 'heading', 'placeholder', 'open', 'preload', ...ATTRS, ...SHOWN];

  #options = {};
  #strings = {};
  #panel = null; // the Panel, once loaded
  #panelLoad = null;
  #handle = null;
  #stopPrefetch = null;
  #starting = false; // show(), ask() or preload asked for Python before the panel was there
  #resets = 0; // raised by reset(): a restore that was waiting for the panel is dropped
  #early = 0; // raised by stop() and reset(): an ask() waiting for the panel is not sent
  #teardown = null; // the timer of a removal (TEARDOWN_MS)
  #typed = null; // keys typed after the launcher's click, before the panel is there

  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    this.launcher = h('button', {
      part: 'launcher', class: 'launcher', type: 'button', 'aria-expanded': 'false',
      'aria-controls': 'panel', onclick: () => this.#clicked(),
    });
    this.unread = h('span', { class: 'sr', hidden: true }); // ", new reply" (markUnread)
    adoptStyles(root, LAUNCHER_STYLES);
    root.append(this.launcher);
    this.#texts();
    upgradeProperties(this);
  }

  #clicked() {
    if (this.#panel?.isOpen) return this.hide();
    // Keys typed while the panel's code loads go to the input once it is there.
    if (!this.#panel && !this.#typed) this.#typed = captureTyping(this);
    this.show();
  }

  /** The panel, loaded and built once (it appends itself to the shadow root). */
  #open(start = false) {
    if (start && !this.#panel) this.#starting = true;
    this.#panelLoad ??= loadPanel().then((m) => {
      this.#panel = new m.Panel(this);
      return this.#panel;
    }, (error) => {
      this.#panelLoad = null;
      this.#starting = false;
      throw error;
    });
    return this.#panelLoad;
  }

  // ---- what the panel reads

  /** The strings the page set (element.strings = {...}); the defaults are strings.js's. */
  get stringOverrides() {
    return this.#strings;
  }

  /** The launcher's text: the label attribute, else the label string. */
  get label() {
    return this.getAttribute('label') || lookup(this.#strings, 'label');
  }

  // Frameworks (React 19, Preact, Vue, Svelte) set `label="..."` and `conversation="..."` as
  // properties, since the element has them: each sets its attribute (null removes it).
  set label(value) {
    reflect(this, 'label', value);
  }

  /** The conversation's name across pages (web/element/visit.js). */
  get conversation() {
    return this.getAttribute('conversation') || 'default';
  }

  set conversation(value) {
    reflect(this, 'conversation', value);
  }

  // ---- lifecycle

  connectedCallback() {
    if (this.#teardown !== null) {
      clearTimeout(this.#teardown); // put back in time: the same agent goes on
      this.#teardown = null;
    }
    this.#texts();
    this.#panel?.connected();
    if (this.getAttribute('persist') !== 'off' && hasRecord(this.conversation)) {
      const resets = this.#resets;
      this.#open().then((panel) => {
        if (resets !== this.#resets) return; // reset() came first: nothing to restore
        return panel.openVisit().then((v) => resets === this.#resets && panel.restoreFrom(v));
      });
    }
    if (this.hasAttribute('open')) this.show({ focus: false });
    if (this.hasAttribute('preload') && !saveData()) {
      const start = () => this.isConnected && this.#open(true).then((panel) => panel.boot()).catch(() => {});
      if (globalThis.requestIdleCallback) requestIdleCallback(start, { timeout: 5000 });
      else setTimeout(start, 1000);
    } else {
      this.#stopPrefetch?.();
      // The panel's code, then the worker's Python starts (or, in the page's runtime, its
      // files are fetched into the HTTP cache): runtime.js's startOnIntent.
      this.#stopPrefetch = onIntent(this.launcher, () => {
        const runtime = this.getAttribute('runtime') || undefined;
        loadPanel().then(() => import('../runtime/runtime.js')).then((m) => m.startOnIntent({ runtime })).catch(() => {});
      });
    }
  }

  disconnectedCallback() {
    this.#stopPrefetch?.();
    this.#panel?.disconnected();
    this.#typed?.stop();
    this.#typed = null;
    if (this.#teardown !== null) clearTimeout(this.#teardown);
    this.#teardown = setTimeout(() => {
      this.#teardown = null;
      if (!this.isConnected) this.#panel?.destroy();
    }, TEARDOWN_MS);
  }

  /**
   * Moved with moveBefore() (a framework that keeps state across moves): the element stays
   * connected, so nothing ends, restarts or is listened for twice.
   */
  connectedMoveCallback() {}

  attributeChangedCallback(name, old, value) {
    if (old === value) return;
    if (name === 'open') {
      if (value === null) this.hide();
      else if (this.isConnected) this.show({ focus: false });
    } else if (ATTRS.includes(name)) {
      this.#panel?.scheduleConfigure();
    } else {
      this.#texts();
    }
  }

  #texts() {
    this.launcher.replaceChildren(this.label, this.unread);
    this.#panel?.texts();
  }

  /** An answer came while the panel was closed (on) or the panel opened (off). */
  markUnread(on) {
    this.unread.hidden = !on;
    this.unread.textContent = on ? ` (${lookup(this.#strings, 'unread')})` : '';
    this.launcher.toggleAttribute('data-unread', on);
  }

  // ---- public API

  /** Options (win over attributes). Setting them starts a fresh conversation (after a run). */
  get options() {
    return { ...this.#options };
  }

  set options(value) {
    this.#options = { ...(value || {}) };
    if (this.#options.strings) this.strings = this.#options.strings;
    this.#panel?.scheduleConfigure();
  }

  configure(partial = {}) {
    this.options = { ...this.#options, ...partial };
  }

  get strings() {
    return { ...DEFAULT_STRINGS, ...this.#strings };
  }

  set strings(value) {
    this.#strings = { ...this.#strings, ...(value || {}) };
    this.#texts();
  }

  /** 'idle' (no Python yet), 'loading' (from show(), ask() or preload on), 'failed' or 'ready'. */
  get state() {
    return this.#panel?.state ?? (this.#starting ? 'loading' : 'idle');
  }

  get lastTrace() {
    return this.#panel?.lastTrace ?? null;
  }

  /** A JS handle on the Python agent: run, reset, tools, replay, evaluate (tool-choice eval). */
  get agent() {
    if (!this.#handle) {
      const self = this;
      const later = (fn) => async (...args) => fn(await self.#open(), ...args);
      this.#handle = {
        run: (message) => self.#panel?.runHandle(message) ?? self.#runLater(message),
        reset: () => self.reset(),
        tools: later((panel) => panel.tools()),
        replay: later((panel, trace, options) => panel.replay(trace, options)),
        evaluate: later((panel, cases) => panel.evaluate(cases)),
        status: later((panel) => panel.modelStatus()),
        /** The page doctor (web/webmcp/doctor.js): the page's tools and the mistakes in them. */
        doctor: () => import('../webmcp/doctor.js').then((m) => m.doctor()),
        get running() {
          return self.#panel?.running ?? false;
        },
        get model() {
          return self.#panel?.status?.model ?? null;
        },
      };
    }
    return this.#handle;
  }

  /** agent.run() before the panel is loaded: the same handle, once the panel is there. */
  #runLater(message) {
    const asked = this.#early;
    const inner = this.#open().then((panel) => {
      if (asked !== this.#early) throw stoppedEarly();
      return panel.runHandle(message);
    });
    const done = inner.then((handle) => handle.done);
    done.catch(() => {});
    return {
      done,
      abort: () => this.stop(),
      async *[Symbol.asyncIterator]() {
        yield* await inner;
      },
    };
  }

  show({ focus = true } = {}) {
    if (this.#panel) this.#panel.show({ focus });
    else {
      this.#open(true).then((panel) => {
        if (!this.isConnected) return;
        panel.show({ focus });
        const typed = this.#typed;
        this.#typed = null;
        typed?.stop();
        if (typed?.text || typed?.enter) panel.typed(typed.text, typed.enter);
      }).catch(() => {});
    }
  }

  hide() {
    this.#panel?.hide();
  }

  /** Sends `text` as the visitor would; resolves to the RunResult (rejects with code busy). */
  async ask(text) {
    if (this.#panel) return this.#panel.ask(text);
    const asked = this.#early;
    this.show({ focus: false });
    const panel = await this.#open();
    if (asked !== this.#early) throw stoppedEarly();
    return panel.ask(text);
  }

  /**
   * Stops the running run; a pending card closes as a denial recorded with cause "stopped".
   * An ask() not yet sent to Python (it waits for the start) is not sent: it rejects with
   * code 'aborted'. The run's own ask() resolves when it has ended (status 'aborted').
   */
  stop() {
    this.#early += 1;
    this.#panel?.stop();
  }

  /**
   * A fresh conversation: aborts a run, clears the log. A new ask() may follow at once; the
   * aborted run ends in the background (its own promise resolves, status 'aborted'), and its
   * late events are not shown, dispatched or kept as lastTrace.
   */
  reset() {
    this.#early += 1;
    this.#resets += 1;
    if (this.#panel) this.#panel.reset();
    // Also when the panel is there but its visit module is still loading (it clears nothing yet).
    forgetRecord(this.conversation);
  }
}

/**
 * Calls `go()` once the pointer comes within 96 px of `target` or `target` gets keyboard
 * focus (never on idle, never with Save-Data). Returns a function that stops watching.
 */
export function onIntent(target, go) {
  if (saveData() || typeof document === 'undefined') return () => {};
  const watch = new AbortController();
  const once = () => {
    watch.abort();
    go();
  };
  document.addEventListener('pointermove', (e) => {
    const r = target.getBoundingClientRect();
    const dx = Math.max(r.left - e.clientX, 0, e.clientX - r.right);
    const dy = Math.max(r.top - e.clientY, 0, e.clientY - r.bottom);
    if (r.width && dx * dx + dy * dy <= 96 * 96) once();
  }, { passive: true, signal: watch.signal });
  target.addEventListener('focus', once, { signal: watch.signal });
  return () => watch.abort();
}

/**
 * Properties a page set on the element before it was defined (frameworks do: `el.options =
 * ...` before loader.js ran) are own properties that hide the class's accessors: each is
 * removed and set again through its accessor (the "upgrade property" pattern of custom
 * elements). A read-only one (state, agent, lastTrace) is removed only.
 */
function upgradeProperties(el) {
  for (const [name, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(SiteAgentElement.prototype))) {
    if (!descriptor.get || !Object.prototype.hasOwnProperty.call(el, name)) continue;
    const value = el[name];
    delete el[name];
    if (descriptor.set) el[name] = value;
  }
}

/**
 * Keys typed right after the launcher's click, while the panel's code loads (the launcher has
 * the focus): printable keys, Backspace and Enter are kept, not acted on, and given to the
 * input when it is there. A key the page's own field gets, a shortcut (Ctrl, Alt, Meta) or an
 * input method's composition is left alone. `{text, enter, stop()}`.
 */
function captureTyping(host) {
  const typed = { text: '', enter: false, stop: () => watch.abort() };
  const watch = new AbortController();
  const ours = () => {
    const active = document.activeElement;
    return !active || active === document.body || active === host;
  };
  const onKey = (e) => {
    if (!ours() || e.ctrlKey || e.metaKey || e.altKey || e.isComposing || e.keyCode === 229) return;
    if (e.key === 'Enter') typed.enter = !!typed.text.trim();
    else if (e.key === 'Backspace') typed.text = typed.text.slice(0, -1);
    else if ([...e.key].length === 1 && !typed.enter) typed.text += e.key;
    else return;
    e.preventDefault(); // a space does not press the launcher again
    e.stopPropagation();
  };
  document.addEventListener('keydown', onKey, { capture: true, signal: watch.signal });
  document.addEventListener('keyup', (e) => {
    if (ours() && (e.key === ' ' || e.key === 'Enter')) e.preventDefault();
  }, { capture: true, signal: watch.signal });
  setTimeout(() => watch.abort(), 30_000); // the panel never came: nothing is held longer
  return typed;
}

/** The error of an ask() that a stop() or reset() overtook before it was sent. */
function stoppedEarly() {
  const e = new Error('Stopped before the message was sent.');
  e.name = 'SiteAgentError';
  e.code = 'aborted';
  return e;
}

function reflect(el, name, value) {
  if (value === null || value === undefined) el.removeAttribute(name);
  else el.setAttribute(name, String(value));
}

function forgetRecord(name) {
  try {
    sessionStorage.removeItem(`site-agent:${name}`);
  } catch {}
}

function hasRecord(name) {
  try {
    return name ? !!sessionStorage.getItem(`site-agent:${name}`) : sessionStorage.length > 0;
  } catch {}
}

/** Defines <site-agent> once; a second call (or a second copy of this file) does nothing. */
export function defineSiteAgent(loaderURL) {
  if (loaderURL) setBaseURL(loaderURL);
  if (typeof customElements === 'undefined' || customElements.get('site-agent')) return;
  customElements.define('site-agent', SiteAgentElement);
  // No <site-agent> here: a run interrupted on the page before ends (recorded).
  addEventListener('load', () => {
    if (!document.querySelector('site-agent') && hasRecord()) import('./visit.js').then((m) => m.endRunsHere());
  });
}
