// <site-agent>: the launcher, the panel, the confirmation card. No agent logic lives here:
// the Python controller (pysite_agent/browser/element.py) runs the agent; this file renders
// its events and forwards the visitor's decisions. Where Python runs is web/runtime/runtime.js's
// business; the element reaches its controller through a connection (web/runtime/channel.js).
// Model and tool text is always set with textContent, never as HTML.
import { styles } from './styles.js';
import { createModelContext } from '../webmcp/shim.js';
import { connectAgent, mark, prefetchOnIntent, saveData, setBaseURL } from '../runtime/runtime.js';

// ---------------------------------------------------------------------------- strings

/** Every visible string; override any of them with `element.strings = {...}`. */
export const DEFAULT_STRINGS = {
  label: 'Ask this site',
  placeholder: 'What can I do for you?',
  send: 'Send',
  stop: 'Stop',
  close: 'Close',
  you: 'You:',
  assistant: 'Assistant:',
  loading: 'Starting the assistant…',
  queued: 'Your message is sent as soon as the assistant is ready.',
  'loading.runtime': 'Loading Python…',
  'loading.packages': 'Loading packages…',
  'loading.import': 'Starting the agent…',
  'loading.agent': 'Starting the agent…',
  loadFailed: 'The assistant could not start.',
  loadFailedHelp: 'Check your connection and try again.',
  retry: 'Try again',
  ready: 'Ready.',
  model: 'Model: {model}',
  thinking: 'Thinking…',
  working: 'Working…',
  toolRunning: 'Using {tool}…',
  toolDone: '{tool}: done.',
  toolFailed: '{tool} did not work: {text}',
  toolDenied: 'Not done: {tool} was not allowed.',
  toolNavigated: '{tool} opened another page.',
  stopped: 'Stopped.',
  incomplete: '(incomplete)',
  busy: 'Still working on your last message. Wait for it, or press Stop.',
  newConversation: 'Settings changed: a new conversation starts.',
  newChat: 'New conversation',
  newChatDone: 'New conversation started.',
  confirmHeading: 'Allow {tool}?',
  confirmAnnounce: 'Confirmation needed: {tool}. Allow or deny.',
  noDetails: 'No details.',
  allow: 'Allow',
  deny: 'Deny',
  allowed: 'Allowed.',
  denied: 'Denied.',
  'reason.not-read-only': 'This action can change something on this site, so it asks you first.',
  'reason.consequential': 'The site marked this action as consequential (for example, it places an order), so it always asks.',
  'reason.after-untrusted': 'Text from outside the site (such as reviews) is in this conversation, so every change asks you first.',
  'reason.annotations-unknown': 'The site did not say what this action does, so it asks you first.',
  noModel: 'No AI model is available in this browser.',
  noModelVisitor: 'This assistant uses Chrome’s built-in AI model, which this browser or device does not have. You can use the site as usual, or try desktop Chrome with the on-device model enabled.',
  noModelOwner: 'Site owner: set proxy-url to your own endpoint so every visitor gets a model, or use models="demo" to try the flow without AI.',
  download: 'Download the on-device model',
  downloadHelp: 'Your browser downloads the model once (it is large). Nothing downloads until you click.',
  downloading: 'Downloading the model… {percent}%',
  downloadFailed: 'The download did not finish: {message}',
  configError: 'This assistant is not set up correctly: {message}',
  configStatus: 'Not available: the assistant is not set up correctly.',
  'error.model-unavailable': 'No model can answer on this device right now.',
  'error.model-download-required': 'The on-device model must be downloaded first.',
  'error.max-steps': 'I could not finish that in the allowed number of steps.',
  'error.no-tools': 'This page offers no tools I can use.',
  error: 'Something went wrong: {message}',
};

const fmt = (text, values = {}) =>
  String(text).replace(/\{(\w+)\}/g, (m, key) => (key in values ? String(values[key]) : m));

// ---------------------------------------------------------------------------- helpers

function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') el.textContent = value;
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children) if (child) el.append(child);
  return el;
}

function agentError(error) {
  const e = new Error(error?.message || 'unknown error');
  e.name = 'SiteAgentError';
  e.code = error?.code || 'model-error';
  return e;
}

const unwrap = (text) => {
  const envelope = JSON.parse(text);
  if (!envelope.ok) throw agentError(envelope.error);
  return envelope.value;
};

const PHASES = { runtime: [0, 0.75], packages: [0.75, 0.9], import: [0.9, 0.97], agent: [0.97, 1] };

const ATTRS = ['proxy-url', 'models', 'pre-approved', 'max-steps', 'instructions', 'debugging-tools'];
const JS_VALUES = ['model', 'confirm', 'tools'];

// ---------------------------------------------------------------------------- element

let sheet = null;
try {
  sheet = new CSSStyleSheet();
  sheet.replaceSync(styles);
} catch {
  sheet = null; // no constructable stylesheets: fall back to a <style> element
}

export class SiteAgentElement extends HTMLElement {
  static observedAttributes = ['label', 'heading', 'placeholder', 'open', 'preload', ...ATTRS];

  #ui = {};
  #options = {};
  #strings = {};
  #agent = null; // the connection to the Python controller (web/runtime/channel.js)
  #ready = null; // promise: Python + agent
  #state = 'idle'; // idle | loading | failed | ready
  #status = null; // the controller's status
  #configError = null;
  #running = false;
  #card = null;
  #lastTrace = null;
  #configuring = null; // promise of the latest queued configure()
  #configQueued = false;
  #runs = new Set(); // agent.run() handles waiting for events
  #runSeq = 0; // the id of the latest run this element asked Python for
  #staleUpTo = 0; // runs with an id up to this were asked for before the last reset()
  #currentRun = null; // the run whose events are shown (null after reset())
  #handle = null;
  #progressLine = null;
  #tools = new Map(); // call id -> note element
  #titles = new Map(); // call id -> the tool's title (or name), for the progress lines

  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    const ui = this.#ui;
    ui.launcher = h('button', {
      part: 'launcher', class: 'launcher', type: 'button', 'aria-expanded': 'false',
      'aria-controls': 'panel', onclick: () => (this.#isOpen() ? this.hide() : this.show()),
    });
    ui.heading = h('h2', { id: 'heading' });
    ui.model = h('span', { class: 'model', part: 'model' });
    ui.close = h('button', { class: 'close', type: 'button', onclick: () => this.hide() }, '×');
    ui.fresh = h('button', { class: 'fresh', type: 'button', onclick: () => this.#newChat() });
    ui.log = h('div', { class: 'log', role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions' });
    ui.setup = h('div', { class: 'setup' });
    ui.cardSlot = h('div', { class: 'card-slot' });
    ui.body = h('div', { class: 'body' }, ui.setup, ui.log, ui.cardSlot);
    ui.status = h('div', { class: 'status', role: 'status', 'aria-live': 'polite' });
    ui.input = h('textarea', { rows: '1', name: 'message', autocomplete: 'off' });
    ui.send = h('button', { class: 'primary send', type: 'submit' });
    ui.stop = h('button', { class: 'danger stop', type: 'button', hidden: true, onclick: () => this.stop() });
    ui.form = h('form', { onsubmit: (e) => this.#submit(e) }, ui.input, ui.send, ui.stop);
    ui.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        ui.form.requestSubmit();
      }
    });
    ui.panel = h('section', {
      part: 'panel', class: 'panel', id: 'panel', role: 'dialog', 'aria-labelledby': 'heading', hidden: true,
    }, h('header', {}, h('div', { class: 'titles' }, ui.heading, ui.model), ui.fresh, ui.close), ui.body, ui.status, ui.form);
    ui.panel.addEventListener('keydown', (e) => this.#keydown(e));
    // A constructed stylesheet: not an inline <style>, so a CSP without 'unsafe-inline'
    // for styles still applies it.
    if (sheet) root.adoptedStyleSheets = [sheet];
    else root.append(h('style', { text: styles }));
    root.append(ui.launcher, ui.panel);
    this.#texts();
  }

  // ---- lifecycle

  connectedCallback() {
    document.addEventListener('visibilitychange', this.#onVisibility);
    this.#texts();
    addEventListener('pagehide', this.#onHide);
    addEventListener('pageshow', this.#onShow);
    if (this.#persists() && hasRecord(this.#name())) this.#openVisit().then((v) => this.#restoreFrom(v));
    if (this.hasAttribute('open')) this.show({ focus: false });
    if (this.hasAttribute('preload') && !saveData()) {
      const start = () => this.isConnected && this.#boot().catch(() => {});
      if (globalThis.requestIdleCallback) requestIdleCallback(start, { timeout: 5000 });
      else setTimeout(start, 1000);
    } else {
      this.#stopPrefetch?.();
      this.#stopPrefetch = prefetchOnIntent(this.#ui.launcher);
    }
  }

  #stopPrefetch = null;

  disconnectedCallback() {
    this.#stopPrefetch?.();
    document.removeEventListener('visibilitychange', this.#onVisibility);
    removeEventListener('pagehide', this.#onHide);
    removeEventListener('pageshow', this.#onShow);
    queueMicrotask(() => {
      if (!this.isConnected) this.#destroy();
    });
  }

  attributeChangedCallback(name, old, value) {
    if (old === value) return;
    if (name === 'open') {
      if (value === null) this.hide();
      else if (this.isConnected) this.show({ focus: false });
    } else if (ATTRS.includes(name)) {
      this.#scheduleConfigure();
    } else {
      this.#texts();
    }
  }

  // ---- public API

  /** Options (win over attributes). Setting them starts a fresh conversation (after a run). */
  get options() {
    return { ...this.#options };
  }

  set options(value) {
    this.#options = { ...(value || {}) };
    if (this.#options.strings) this.strings = this.#options.strings;
    this.#scheduleConfigure();
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

  /** 'idle' (no Python yet), 'loading', 'failed' or 'ready'. */
  get state() {
    return this.#state;
  }

  get lastTrace() {
    return this.#lastTrace;
  }

  /** A JS handle on the Python agent: run, reset, tools, replay, evaluate (tool-choice eval). */
  get agent() {
    if (!this.#handle) {
      const self = this;
      this.#handle = {
        run: (message) => self.#runHandle(message),
        reset: () => self.reset(),
        tools: async () => {
          await self.#boot();
          return unwrap(await self.#call('tools'));
        },
        replay: async (trace, options = {}) => {
          await self.#boot();
          const text = typeof trace === 'string' ? trace : JSON.stringify(trace);
          return unwrap(await self.#call('replay', text, options));
        },
        evaluate: async (cases) => {
          await self.#boot();
          if (self.#configuring) await self.#configuring; // the options just set apply
          const text = typeof cases === 'string' ? cases : JSON.stringify(cases);
          return unwrap(await self.#call('evaluate', text));
        },
        /** The page doctor (web/webmcp/doctor.js): the page's tools and the mistakes in them. */
        doctor: () => import('../webmcp/doctor.js').then((m) => m.doctor()),
        get running() {
          return self.#running;
        },
        get model() {
          return self.#status?.model ?? null;
        },
      };
    }
    return this.#handle;
  }

  show({ focus = true } = {}) {
    const ui = this.#ui;
    const wasOpen = this.#isOpen();
    ui.panel.hidden = false;
    ui.launcher.setAttribute('aria-expanded', 'true');
    if (focus) ui.input.focus();
    if (!wasOpen) {
      mark('open');
      this.#boot().catch(() => {});
    }
  }

  hide() {
    const ui = this.#ui;
    if (!this.#isOpen()) return;
    this.#card?.finish(false);
    const inside = this.shadowRoot.activeElement !== null;
    ui.panel.hidden = true;
    ui.launcher.setAttribute('aria-expanded', 'false');
    if (inside || document.activeElement === this || document.activeElement === document.body) ui.launcher.focus();
  }

  /** Sends `text` as the visitor would; resolves to the RunResult (rejects with code busy). */
  async ask(text) {
    this.show({ focus: false });
    return this.#run(String(text ?? ''));
  }

  /**
   * Stops the running run; a pending card closes as a denial recorded with cause "stopped".
   * An ask() not yet sent to Python (it waits for the start) is not sent: it rejects with
   * code 'aborted'. The run's own ask() resolves when it has ended (status 'aborted').
   */
  stop() {
    this.#generation += 1;
    if (this.#queued) {
      // A message waiting for Python to start: it is not sent, and goes back to the input.
      if (!this.#ui.input.value) this.#ui.input.value = this.#queued.text;
      this.#unqueue();
      this.#renderSetup();
      this.#ui.status.textContent = this.#t('stopped');
    }
    if (this.#agent) this.#call('abort', 'stopped'); // first, so Python records the cause
    this.#card?.finish(false);
  }

  /**
   * A fresh conversation: aborts a run, clears the log. A new ask() may follow at once; the
   * aborted run ends in the background (its own promise resolves, status 'aborted'), and its
   * late events are not shown, dispatched or kept as lastTrace.
   */
  reset() {
    this.#currentRun = null; // from now on, events of the old run are stale
    this.#staleUpTo = this.#runSeq; // and runs asked for until now, even if not started yet
    this.#generation += 1; // a message waiting for Python to start is not sent
    this.#queued = null;
    if (this.#agent) this.#call('reset'); // a pending card: a denial with cause "reset"
    this.#card?.finish(false);
    this.#running = false;
    this.#visit?.clear();
    this.#restore = null;
    this.#log = [];
    this.#ui.log.replaceChildren();
    this.#draft = null;
    this.#tools.clear();
    this.#titles.clear();
    this.#renderSetup();
  }

  #call(name, ...args) {
    return this.#agent.call(name, ...args);
  }

  // ---- boot

  #boot() {
    if (this.#ready) return this.#ready;
    this.#ready = (async () => {
      this.#setState('loading');
      this.#agent = await connectAgent(this.#bridge(), {
        onProgress: (p) => this.#bootProgress(p),
        runtime: this.getAttribute('runtime') || undefined,
      });
      await this.#configure(false);
      if (this.#persists()) await this.#openVisit().catch(() => {});
      await this.#restoreRun();
      mark('ready');
      this.#setState('ready');
      return this.#agent;
    })();
    this.#ready.catch((error) => {
      this.#ready = null;
      this.#release();
      this.#setState('failed', error);
    });
    return this.#ready;
  }

  #bridge() {
    return {
      // `extra` is the element's own channel: { run, title? } (the event JSON is the published one).
      emit: (json, extra) => this.#event(JSON.parse(json), extra ? JSON.parse(extra) : {}),
      started: (text, run) => this.#started(text, run),
      confirm: (json, signal) => this.#confirm(JSON.parse(json), signal),
      save: (json, run) => this.#save(JSON.parse(json), run),
    };
  }

  #settings() {
    const o = this.#options;
    const attr = (name) => this.getAttribute(name);
    const config = {
      models: o.models ?? attr('models'),
      proxyUrl: o.proxyUrl ?? attr('proxy-url'),
      baseUrl: document.baseURI, // a relative proxy-url is fetched against it
      pageUrl: location.href, // Python keeps its origin and path only
      preApproved: o.preApproved ?? attr('pre-approved'),
      maxSteps: o.maxSteps ?? attr('max-steps'),
      instructions: o.instructions ?? attr('instructions'),
      toolTimeoutMs: o.toolTimeoutMs ?? null,
      maxResultChars: o.maxResultChars ?? null,
      debuggingTools: o.debuggingTools ?? this.hasAttribute('debugging-tools'),
    };
    const values = {};
    for (const key of JS_VALUES) if (o[key] != null) values[key] = o[key];
    if (Array.isArray(values.tools)) {
      // An array of tool descriptors: give them their own page-local model context.
      const context = createModelContext();
      // Registered before Python lists them (the shim loads its implementation on first use).
      values.registered = Promise.all(values.tools.map((tool) => context.registerTool(tool)));
      values.tools = context;
    }
    return [JSON.stringify(config), values];
  }

  async #configure(fresh) {
    const [config, values] = this.#settings();
    if (values.registered) {
      await values.registered.catch(() => {}); // a refused tool is simply not listed
      delete values.registered;
    }
    const text = await this.#call('configure', config, values);
    const envelope = JSON.parse(text);
    if (envelope.ok) {
      this.#configError = null;
      this.#status = envelope.value;
      if (fresh) {
        this.#visit?.clear();
        this.#note(this.#t('newConversation'));
      }
    } else {
      this.#configError = envelope.error.message;
      this.#status = null;
      console.warn(`<site-agent>: ${envelope.error.message}`);
    }
    this.#renderSetup();
  }

  // Attribute and option changes, coalesced per task; each waits for the one before, and
  // Python's configure() waits for a running run (then the conversation starts fresh).
  #scheduleConfigure() {
    if (!this.#agent || this.#configQueued) return;
    this.#configQueued = true;
    const previous = this.#configuring ?? Promise.resolve();
    const next = previous.then(async () => {
      await Promise.resolve();
      this.#configQueued = false;
      if (this.#agent) await this.#configure(true);
    }).catch(() => {});
    this.#configuring = next;
    next.then(() => {
      if (this.#configuring === next) this.#configuring = null;
    });
  }

  #bootProgress(p) {
    const ui = this.#ui;
    if (this.#state !== 'loading') return;
    const phase = p && typeof p === 'object' ? p.phase : null;
    const label = (phase && this.#strings[`loading.${phase}`]) ?? (phase && DEFAULT_STRINGS[`loading.${phase}`]) ?? this.#t('loading');
    // Overall progress: each phase of boot.js owns a share of the bar.
    const span = PHASES[phase];
    const within = p && p.total ? Math.min(1, (p.loaded ?? 0) / p.total) : 0;
    const fraction = span ? span[0] + (span[1] - span[0]) * within : null;
    if (!this.#progressLine) return;
    this.#progressLine.text.textContent = label;
    if (fraction === null || !Number.isFinite(fraction)) this.#progressLine.bar.removeAttribute('value');
    else this.#progressLine.bar.value = Math.max(0, Math.min(1, fraction));
    ui.status.textContent = this.#queued ? this.#t('queued') : label;
  }

  #setState(state, error) {
    this.#state = state;
    if (state === 'failed') this.#loadError = error;
    this.#renderSetup();
  }

  #loadError = null;

  // ---- rendering

  #t(key, values) {
    return fmt(this.#strings[key] ?? DEFAULT_STRINGS[key] ?? key, values);
  }

  #isOpen() {
    return !this.#ui.panel.hidden;
  }

  #texts() {
    const ui = this.#ui;
    const label = this.getAttribute('label') || this.#t('label');
    ui.launcher.textContent = label;
    ui.heading.textContent = this.getAttribute('heading') || label;
    ui.input.placeholder = this.getAttribute('placeholder') || this.#t('placeholder');
    ui.input.setAttribute('aria-label', ui.input.placeholder);
    ui.send.textContent = this.#t('send');
    ui.stop.textContent = this.#t('stop');
    ui.close.setAttribute('aria-label', this.#t('close'));
    ui.fresh.textContent = this.#t('newChat');
    this.#renderSetup();
  }

  #renderSetup() {
    const ui = this.#ui;
    const setup = ui.setup;
    setup.replaceChildren();
    this.#progressLine = null;
    let canSend = true;
    const status = this.#status;
    ui.model.textContent = status ? this.#t('model', { model: status.active ?? status.model }) : '';
    if (this.#state === 'loading') {
      const bar = h('progress', { max: '1' });
      const text = h('p', { text: this.#t('loading') });
      this.#progressLine = { bar, text };
      setup.append(h('div', { class: 'box loading' }, text, bar));
      ui.status.textContent = this.#t('loading');
    } else if (this.#state === 'failed') {
      const detail = this.#loadError?.message ? String(this.#loadError.message).split('\n')[0] : '';
      setup.append(h('div', { class: 'box failed', role: 'alert' },
        h('p', { class: 'fail', text: this.#t('loadFailed') }),
        h('p', { text: this.#t('loadFailedHelp') }),
        detail && h('p', { class: 'note', text: detail }),
        h('div', { class: 'actions' }, h('button', {
          type: 'button', class: 'primary retry', text: this.#t('retry'),
          onclick: () => this.#boot().catch(() => {}),
        }))));
      canSend = false;
    } else if (this.#state === 'ready' && this.#configError) {
      setup.append(h('div', { class: 'box config', role: 'alert' },
        h('p', { class: 'fail', text: this.#t('configError', { message: this.#configError }) })));
      canSend = false;
      if (!this.#running) ui.status.textContent = this.#t('configStatus');
    } else if (this.#state === 'ready' && status) {
      const download = status.models.find((m) => m.canPrepare && (m.availability === 'downloadable' || m.availability === 'downloading'));
      if (download) setup.append(this.#downloadBox(download));
      if (status.availability === 'unavailable') {
        setup.append(h('div', { class: 'box no-model' },
          h('p', { class: 'fail', text: this.#t('noModel') }),
          h('p', { text: this.#t('noModelVisitor') }),
          h('p', { class: 'note', text: this.#t('noModelOwner') })));
      }
      canSend = status.availability === 'available';
      if (this.#state === 'ready' && !this.#running) ui.status.textContent = canSend ? this.#t('ready') : '';
    }
    ui.send.disabled = !canSend || this.#running;
    ui.send.hidden = this.#running;
    ui.stop.hidden = !this.#running && !this.#queued;
  }

  #downloadBox(entry) {
    const bar = h('progress', { max: '1', hidden: true });
    const text = h('p', { class: 'note', text: this.#t('downloadHelp') });
    const button = h('button', { type: 'button', class: 'primary download', text: this.#t('download') });
    button.addEventListener('click', async () => {
      // Straight into Python: the click is still a recent user activation when
      // Chrome's LanguageModel.create() runs.
      button.disabled = true;
      bar.hidden = false;
      bar.removeAttribute('value');
      const onProgress = (fraction) => {
        bar.value = fraction;
        text.textContent = this.#t('downloading', { percent: Math.round(fraction * 100) });
        this.#ui.status.textContent = text.textContent;
      };
      text.textContent = this.#t('downloading', { percent: 0 });
      const envelope = JSON.parse(await this.#call('prepare', onProgress));
      if (envelope.ok) {
        this.#status = envelope.value;
        this.#renderSetup();
      } else {
        button.disabled = false;
        text.textContent = this.#t('downloadFailed', { message: envelope.error.message });
        text.className = 'fail';
      }
    });
    if (entry.availability === 'downloading') text.textContent = this.#t('downloading', { percent: 0 });
    return h('div', { class: 'box download-box' }, text, bar, h('div', { class: 'actions' }, button));
  }

  #append(node) {
    this.#ui.log.append(node);
    this.#scrollSoon();
    return node;
  }

  // Keep the newest line in view; once per frame, so a burst of events lays out once.
  #scrollSoon() {
    if (this.#scrollPending) return;
    this.#scrollPending = true;
    requestAnimationFrame(() => {
      this.#scrollPending = false;
      const body = this.#ui.body;
      body.scrollTop = body.scrollHeight;
    });
  }

  #scrollPending = false;

  #message(kind, text) {
    return this.#append(this.#messageNode(kind, text));
  }

  #messageNode(kind, text, extra = '') {
    const who = kind === 'user' ? this.#t('you') : this.#t('assistant');
    const node = h('p', { class: `msg ${kind}${extra}` }, h('span', { class: 'sr', text: `${who} ` }), document.createTextNode(text));
    this.#log.push([kind, node, text]);
    return node;
  }

  // The text the model is writing (text-delta events) shows at once in a draft that assistive
  // technology does not see; #settle swaps in the finished message, which the log's aria-live
  // announces once: the answer, the text of a step that went on with a tool call, or the text
  // so far marked incomplete (an error, Stop).
  #draft = null;

  #delta(text) {
    if (!this.#draft) {
      this.#draft = this.#append(h('p', { class: 'msg assistant streaming', 'aria-hidden': 'true' }, document.createTextNode('')));
    }
    this.#draft.firstChild.appendData(text);
    this.#scrollSoon();
  }

  #settle(how, text) {
    const draft = this.#draft;
    this.#draft = null;
    if (!draft) return how === 'answer' && this.#message('assistant', text);
    const node = this.#messageNode('assistant', how === 'answer' ? text : draft.textContent, how === 'answer' ? '' : ` ${how}`);
    if (how === 'incomplete') node.append(h('span', { class: 'mark', text: ` ${this.#t('incomplete')}` }));
    draft.replaceWith(node);
  }

  #note(text, kind = 'note') {
    const node = this.#append(h('p', { class: kind, text }));
    this.#log.push([kind, node]);
    return node;
  }

  // ---- the conversation across pages: web/element/visit.js (loaded when needed)

  #visit = null;
  #visitLoad = null;
  #restore = null;
  #log = []; // [kind, node, text?]

  #name() {
    return this.getAttribute('conversation') || 'default';
  }

  #persists() {
    return this.getAttribute('persist') !== 'off';
  }

  #openVisit() {
    this.#visitLoad ??= import('./visit.js').then((m) => (this.#visit = new m.Visit(this.#name())));
    return this.#visitLoad;
  }

  #restoreFrom(visit) {
    if (this.#log.length) return;
    const found = visit.restoreInto((k, t) => (k === 'user' || k === 'assistant' ? this.#message(k, t) : this.#note(t, k)));
    this.#restore = found?.pending;
    if (found?.show) this.show({ focus: false });
  }

  async #restoreRun() {
    const pending = this.#restore;
    this.#restore = null;
    if (!pending) return;
    const id = ++this.#runSeq;
    this.#currentRun = id;
    this.#running = !!pending.run && !pending.ended; // until its done event
    this.#renderSetup();
    const envelope = JSON.parse(await this.#call('restore', JSON.stringify(pending), id));
    const value = envelope.value ?? {};
    if (!value.resumed && this.#currentRun === id) {
      this.#running = false;
      this.#renderSetup();
    }
    if (!envelope.ok) {
      this.#visit?.clear();
      this.#log = [];
      this.#ui.log.replaceChildren();
    } else if (value.ended) {
      this.#lastTrace = value.ended;
      this.#note(this.#t('stopped'));
      this.#visit?.write({ state: JSON.parse(await this.#call('state')), ended: undefined });
    }
  }

  #logData() {
    return this.#log.map(([kind, node, text]) => [kind, text ?? node.textContent]);
  }

  #save(state, run) {
    // A save of a run that was reset (it may cross from the worker after the reset): dropped.
    if (run != null && run !== this.#currentRun) return;
    if (!this.#persists()) return;
    this.#openVisit().then((v) => {
      v.update({ state }, () => ({ open: this.#isOpen(), log: this.#logData() }));
      if (!state?.run) v.flush(); // no run going on (it ended): stored at once
    });
  }

  #onHide = () => this.#visit?.hidden(this.#isOpen(), this.#logData(), !!this.#card);

  #onShow = (event) => event.persisted && this.#visit?.shown();

  #newChat() {
    this.reset();
    this.#ui.status.textContent = this.#t('newChatDone');
    this.#ui.input.focus();
  }

  // ---- runs

  async #submit(event) {
    event.preventDefault();
    const text = this.#ui.input.value.trim();
    if (!text) return;
    if (this.#running || this.#queued) {
      this.#ui.status.textContent = this.#t('busy');
      return;
    }
    this.#ui.input.value = '';
    if (this.#state !== 'ready') {
      // Python is still starting: show the message at once; it runs when the agent is ready.
      const line = this.#message('user', text);
      line.classList.add('queued');
      this.#queued = { line, text, note: this.#note(this.#t('queued')) };
      this.#ui.status.textContent = this.#t('queued');
      this.#ui.stop.hidden = false; // Stop takes it back
    }
    try {
      await this.#run(text);
    } catch (error) {
      if (this.#queued && !this.#ui.input.value) this.#ui.input.value = text; // nothing lost
      this.#unqueue();
      if (error.code === 'busy') this.#ui.status.textContent = this.#t('busy');
      else if (error.code !== 'config' && error.code !== 'aborted') {
        this.#note(this.#t('error', { message: error.message }), 'error');
      }
    }
  }

  #queued = null; // {line, text, note}: a message sent while Python was starting
  #generation = 0; // raised by stop() and reset(): an ask() not yet sent to Python is dropped

  #unqueue() {
    this.#queued?.line.remove();
    this.#queued?.note.remove();
    this.#queued = null;
  }

  async #run(text, handle = null) {
    const generation = this.#generation;
    await this.#boot();
    if (!this.#running && this.#configuring) await this.#configuring;
    if (!this.#agent) throw agentError({ code: 'config', message: 'The element was removed.' });
    if (generation !== this.#generation) {
      throw agentError({ code: 'aborted', message: 'Stopped before the message was sent.' });
    }
    const id = ++this.#runSeq; // Python tags this run's events with it
    if (handle) handle.id = id;
    return unwrap(await this.#call('run', text, id));
  }

  #runHandle(message) {
    const queue = [];
    let wake = null;
    let finished = false;
    const handle = {
      id: null,
      push: (event) => {
        queue.push(event);
        wake?.();
      },
    };
    this.#runs.add(handle);
    const done = this.#run(String(message ?? ''), handle).finally(() => {
      finished = true;
      this.#runs.delete(handle);
      wake?.();
    });
    done.catch(() => {});
    return {
      done,
      abort: () => this.stop(),
      async *[Symbol.asyncIterator]() {
        for (;;) {
          if (queue.length) yield queue.shift();
          else if (finished) return;
          else await new Promise((resolve) => (wake = resolve));
        }
      },
    };
  }

  #started(text, run) {
    // A run asked for before a reset() that Python started anyway: it ends in the background.
    if (run != null && run <= this.#staleUpTo) return;
    this.#unqueue();
    this.#currentRun = run ?? null;
    this.#running = true;
    this.#message('user', text);
    this.#renderSetup();
    this.#ui.status.textContent = this.#t('working');
  }

  #event(event, extra = {}) {
    const run = extra.run;
    for (const handle of this.#runs) if (run === undefined || handle.id === run) handle.push(event);
    // A run that was reset ends in the background: nothing of it reaches the page any more.
    if (run !== undefined && run !== this.#currentRun) return;
    this.dispatchEvent(new CustomEvent('site-agent-event', { detail: event, bubbles: true, composed: true }));
    const ui = this.#ui;
    // A call that began on the previous page has no tool-call event here: its title comes along.
    if (extra.title && event.call?.id && !this.#titles.has(event.call.id)) {
      this.#titles.set(event.call.id, extra.title);
    }
    switch (event.type) {
      case 'thinking':
        ui.status.textContent = this.#t('thinking');
        break;
      case 'text-delta':
        this.#delta(event.text);
        break;
      case 'tool-call':
        this.#settle('step');
        this.#titles.set(event.call.id, extra.title || event.call.name);
        ui.status.textContent = this.#t('toolRunning', { tool: this.#toolName(event.call) });
        this.#tools.set(event.call.id, this.#note(ui.status.textContent));
        break;
      case 'confirm-result':
        if (!event.decision.allowed) {
          this.#toolNote(event.call, this.#t('toolDenied', { tool: this.#toolName(event.call) }));
        } else {
          ui.status.textContent = this.#t('toolRunning', { tool: this.#toolName(event.call) });
        }
        break;
      case 'tool-result': {
        const { call, text, isError, navigated } = event;
        const tool = this.#toolName(call);
        const line = navigated ? this.#t('toolNavigated', { tool })
          : isError ? this.#t('toolFailed', { tool, text: text.length > 200 ? `${text.slice(0, 200)}…` : text })
            : this.#t('toolDone', { tool });
        this.#toolNote(call, line, isError ? 'error' : 'note');
        break;
      }
      case 'answer':
        this.#settle('answer', event.text);
        break;
      case 'error': {
        this.#settle('incomplete');
        const key = `error.${event.code}`;
        if (event.code === 'aborted') break; // the status line says "Stopped." (once)
        // model-unavailable also says why (e.g. no proxy server at proxy-url on a static host).
        const why = event.code === 'model-unavailable' && event.message ? ` ${event.message}` : '';
        if (key in this.#strings || key in DEFAULT_STRINGS) this.#note(this.#t(key) + why, 'error');
        else this.#note(this.#t('error', { message: event.message }), 'error');
        break;
      }
      case 'done': {
        this.#settle('incomplete');
        const result = event.result;
        this.#lastTrace = result.trace;
        this.#running = false;
        this.#card?.finish(false);
        this.#renderSetup();
        ui.status.textContent = result.status === 'aborted' ? this.#t('stopped') : this.#t('ready');
        this.dispatchEvent(new CustomEvent('site-agent-done', { detail: result, bubbles: true, composed: true }));
        break;
      }
      default:
        break;
    }
  }

  /** The tool's title when the page gave one (as on the card), else its name. */
  #toolName(call) {
    return this.#titles.get(call.id) ?? call.name;
  }

  #toolNote(call, text, kind = 'note') {
    const line = this.#tools.get(call.id);
    if (line) {
      line.textContent = text;
      line.className = kind;
    } else {
      this.#tools.set(call.id, this.#note(text, kind));
    }
  }

  // ---- the confirmation card

  #confirm(request, signal) {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve(false);
      this.#card?.finish(false);
      if (!this.#isOpen()) this.show({ focus: false });
      const { tool, lines, reason } = request;
      const name = tool.title || tool.name;
      const titleId = `card-${request.call.id}`.replace(/[^\w-]/g, '_');
      const list = h('dl');
      for (const line of lines) list.append(h('dt', { text: line.label }), h('dd', { text: line.value }));
      const allow = h('button', { type: 'button', class: 'primary allow', text: this.#t('allow') });
      const deny = h('button', { type: 'button', class: 'deny', text: this.#t('deny') });
      const card = h('div', {
        class: 'box card', part: 'card', role: 'group', tabindex: '-1', 'aria-labelledby': titleId,
        'data-tool': tool.name, 'data-reason': reason,
      },
      h('h3', { id: titleId, text: this.#t('confirmHeading', { tool: name }) }),
      tool.description ? h('p', { class: 'description', text: tool.description }) : null,
      lines.length ? list : h('p', { class: 'note', text: this.#t('noDetails') }),
      h('p', { class: 'why', text: this.#t(`reason.${reason}`) }),
      h('div', { class: 'actions' }, deny, allow));
      let settled = false;
      const onAbort = () => finish(false);
      const finish = (allowed) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        const hadFocus = this.shadowRoot.activeElement && card.contains(this.shadowRoot.activeElement);
        card.remove();
        if (this.#card?.card === card) this.#card = null;
        this.#ui.status.textContent = this.#t(allowed ? 'allowed' : 'denied');
        if (hadFocus && this.#isOpen()) this.#ui.input.focus();
        resolve(allowed === true);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      allow.addEventListener('click', () => finish(true));
      deny.addEventListener('click', () => finish(false));
      this.#card = { card, finish };
      this.#ui.cardSlot.append(card);
      this.#ui.status.textContent = this.#t('confirmAnnounce', { tool: name });
      this.#scrollSoon();
      card.focus();
    });
  }

  // Hiding the page (another tab, a minimised window) ends a pending card as a denial with
  // cause "hidden"; the run goes on and the model is told.
  #onVisibility = () => {
    if (document.visibilityState !== 'hidden') return;
    this.#visit?.flush(); // a hidden page may be discarded without a pagehide
    if (!this.#card) return;
    if (this.#agent) this.#call('deny_pending', 'hidden');
    this.#card?.finish(false);
  };

  #keydown(event) {
    if (event.key !== 'Escape') return;
    event.stopPropagation();
    if (this.#card) this.#card.finish(false);
    else this.hide();
  }

  // ---- teardown

  #destroy() {
    this.#release(); // first: a pending card ends as a denial with cause "removed"
    this.#card?.finish(false);
    this.#ui.panel.hidden = true;
    this.#ui.launcher.setAttribute('aria-expanded', 'false');
    this.#ready = null;
    this.#running = false;
    this.#state = 'idle';
  }

  #release() {
    const agent = this.#agent;
    this.#agent = null;
    agent?.close();
  }
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
