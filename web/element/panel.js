// The open side of <site-agent>, loaded when the visitor shows intent (pointer near the
// launcher, focus, a click) or a script needs it (ask(), preload, a conversation to restore):
// the panel, and the wiring of its parts to the Python controller. The transcript
// (transcript.js) shows the conversation, the card (card.js) asks the visitor, the run
// bookkeeping (runs.js) says which events are shown, and setup.js draws what stands before
// the conversation (starting, failed, not set up, no model). The status line is written in
// one place (#say). Around them: the panel as a modal where it covers the page (modal.js),
// errors in the visitor's words (errors.js), a slow model (waiting.js), form tools
// (handoff.js), the greeting and "New conversation" (welcome.js). No agent logic lives here: the Python controller
// (pysite_agent/browser/element.py) runs the agent, reached through a connection
// (web/runtime/channel.js) that web/runtime/runtime.js opens.
import { h, adoptStyles } from './dom.js';
import { styles } from './styles.js';
import { known, lookup } from './strings.js';
import { Transcript } from './transcript.js';
import { Card } from './card.js';
import { Runs } from './runs.js';
import { renderSetup, bootProgress } from './setup.js';
import { Modal } from './modal.js';
import { TopLayer } from './layer.js';
import { showEvent, showError } from './events.js';
import { Waiting } from './waiting.js';
import { wireInput, grow } from './input.js';
import { renderWelcome, askNewChat } from './welcome.js';
import { pageModelContext } from '../webmcp/shim.js';
import { elementSettings } from './config.js';
import { connectAgent, mark } from '../runtime/runtime.js';
import { onRouteChange } from './routes.js';

/** A JS error from an envelope's error ({code, message}): name SiteAgentError. */
export function agentError(error) {
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

export class Panel {
  ui = {};
  state = 'idle'; // idle | loading | failed | ready
  status = null; // the controller's status
  configError = null;
  loadError = null;
  lastTrace = null;
  progressLine = null; // {bar, text} while Python starts (setup.js)
  runs = new Runs();
  #agent = null; // the connection to the Python controller
  #ready = null; // promise: Python + agent
  #configuring = null; // promise of the latest queued configure()
  #configQueued = false;
  #visit = null;
  #routes = null; // stops following the app's route changes (routes.js)
  #visitLoad = null;
  #restore = null;
  #kept = null; // the latest conversation state of this element's agent (from save)
  lastText = null; // the latest message sent, for Try again
  errorText = null; // the latest run error's sentence (the status line keeps it)
  timedOut = false; // the time limit ended the run (waiting.js)

  /** `host`: the <site-agent> element (its attributes, options, strings, launcher, shadow root). */
  constructor(host) {
    this.host = host;
    const root = host.shadowRoot;
    const ui = this.ui;
    ui.heading = h('h2', { id: 'heading' });
    ui.model = h('span', { class: 'model', part: 'model', hidden: true });
    ui.close = h('button', { class: 'close', type: 'button', onclick: () => this.hide() }, '×');
    ui.fresh = h('button', { class: 'fresh', type: 'button', onclick: () => askNewChat(this, () => this.#newChat()) });
    ui.freshAsk = h('div', { class: 'fresh-ask', role: 'group', hidden: true });
    ui.log = h('div', { class: 'log', role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions' });
    ui.setup = h('div', { class: 'setup' });
    ui.welcome = h('div', { class: 'welcome' });
    ui.cardSlot = h('div', { class: 'card-slot' });
    // Focusable, so that a keyboard can scroll a long conversation.
    ui.body = h('div', { class: 'body', tabindex: '0', role: 'region' }, ui.setup, ui.welcome, ui.log, ui.cardSlot);
    ui.status = h('div', { class: 'status', role: 'status', 'aria-live': 'polite' });
    ui.input = h('textarea', { rows: '1', name: 'message', autocomplete: 'off' });
    ui.send = h('button', { class: 'primary send', type: 'submit' });
    ui.stop = h('button', { class: 'danger stop', type: 'button', hidden: true, onclick: () => this.stop() });
    ui.form = h('form', { onsubmit: (e) => this.#submit(e) }, ui.input, ui.send, ui.stop);
    wireInput(ui.input, () => ui.form.requestSubmit());
    ui.panel = h('section', {
      part: 'panel', class: 'panel', id: 'panel', role: 'dialog', 'aria-labelledby': 'heading', hidden: true,
    }, h('div', { class: 'head' }, h('div', { class: 'titles' }, ui.heading, ui.model), ui.fresh, ui.freshAsk, ui.close), ui.body, ui.status, ui.form);
    ui.panel.addEventListener('keydown', (e) => this.#keydown(e));
    adoptStyles(root, styles);
    root.append(ui.panel);
    const t = (key, values) => this.t(key, values);
    this.transcript = new Transcript({ log: ui.log, body: ui.body, t });
    this.card = new Card({
      slot: ui.cardSlot, body: ui.body, host, t, root, say: (text) => this.say(text),
      scroll: () => this.transcript.scrollSoon(),
      hold: (on) => (this.transcript.hold = on),
      focusBack: () => this.isOpen && ui.input.focus(),
    });
    this.modal = new Modal(host, ui.panel, host.launcher);
    this.layer = new TopLayer(root, ui.panel); // above a page's modal <dialog> (layer.js)
    this.waiting = new Waiting({
      log: ui.log, t, scroll: () => this.transcript.scrollSoon(),
      onLimit: () => {
        this.timedOut = true;
        this.abort('timeout');
      },
    });
    this.texts();
    if (host.isConnected) this.connected();
  }

  t(key, values) {
    return lookup(this.host.stringOverrides, key, values);
  }

  hasString(key) {
    return known(this.host.stringOverrides, key);
  }

  /** The status line: the one place that writes it. */
  say(text) {
    this.ui.status.textContent = text;
  }

  get isOpen() {
    return !this.ui.panel.hidden;
  }

  get running() {
    return this.runs.running;
  }

  /** The texts that depend on attributes and strings. */
  texts() {
    const { ui, host } = this;
    ui.heading.textContent = host.getAttribute('heading') || host.label;
    ui.input.placeholder = host.getAttribute('placeholder') || this.t('placeholder');
    ui.input.setAttribute('aria-label', ui.input.placeholder);
    ui.send.textContent = this.t('send');
    ui.stop.textContent = this.t('stop');
    ui.close.setAttribute('aria-label', this.t('close'));
    ui.fresh.textContent = this.t('newChat');
    ui.body.setAttribute('aria-label', this.t('conversation'));
    this.render();
  }

  /** Draws the setup area, the buttons and the welcome from the state (setup.js, welcome.js). */
  render() {
    renderSetup(this);
    renderWelcome(this);
  }

  // ---- lifecycle (the element forwards its own)

  connected() {
    this.#routes ??= onRouteChange(() => Promise.resolve(this.#agent?.call('route', location.href)).catch(() => {}));
    document.addEventListener('visibilitychange', this.#onVisibility);
    addEventListener('pagehide', this.#onHide);
    addEventListener('pageshow', this.#onShow);
  }

  disconnected() {
    this.#routes?.();
    this.#routes = null;
    document.removeEventListener('visibilitychange', this.#onVisibility);
    removeEventListener('pagehide', this.#onHide);
    removeEventListener('pageshow', this.#onShow);
  }

  /** The element left the page: its agent is released, a pending card ends as a denial. */
  destroy() {
    this.#release(); // first: a pending card ends as a denial with cause "removed"
    // Put back later: the next start takes up the conversation the transcript still shows.
    if (this.#kept?.conversation) this.#restore = { conversation: this.#kept.conversation, run: null, ended: null };
    this.card.finish(false);
    this.waiting.stop();
    this.modal.dispose();
    this.layer.dispose();
    this.ui.panel.hidden = true;
    this.host.launcher.setAttribute('aria-expanded', 'false');
    this.#ready = null;
    this.runs.running = false;
    this.state = 'idle';
  }

  #release() {
    const agent = this.#agent;
    this.#agent = null;
    agent?.close();
  }

  // ---- public API (through the element)

  show({ focus = true } = {}) {
    const wasOpen = this.isOpen;
    this.ui.panel.hidden = false;
    this.host.launcher.setAttribute('aria-expanded', 'true');
    this.host.markUnread(false);
    this.modal.open = true;
    this.layer.watch(true);
    if (focus) this.ui.input.focus();
    if (!wasOpen) {
      mark('open');
      this.boot().catch(() => {});
    }
  }

  hide({ focus = true } = {}) {
    if (!this.isOpen) return;
    this.card.finish(false);
    const inside = this.host.shadowRoot.activeElement !== null;
    this.ui.panel.hidden = true;
    this.host.launcher.setAttribute('aria-expanded', 'false');
    this.modal.open = false; // the page is given back before the launcher takes the focus
    this.layer.watch(false);
    if (focus && (inside || document.activeElement === this.host || document.activeElement === document.body)) this.host.launcher.focus();
  }

  ask(text) {
    this.show({ focus: false });
    this.lastText = String(text ?? '');
    return this.#run(String(text ?? ''));
  }

  stop() {
    this.runs.stop();
    if (this.runs.queued) {
      // A message waiting for Python to start: it is not sent, and goes back to the input.
      if (!this.ui.input.value) this.ui.input.value = this.runs.queued.text;
      this.#unqueue();
      this.render();
      this.say(this.t('stopped'));
    }
    if (this.#agent) this.#call('abort', 'stopped'); // first, so Python records the cause
    this.card.finish(false);
  }

  reset() {
    this.runs.reset(); // events of runs asked for until now are stale; a queued one is not sent
    if (this.#agent) this.#call('reset'); // a pending card: a denial with cause "reset"
    this.card.finish(false);
    this.waiting.stop();
    this.#visit?.clear();
    this.#restore = null;
    this.#kept = null;
    this.transcript.clear();
    this.render();
  }

  runHandle(message) {
    return this.runs.handle((handle) => this.#run(String(message ?? ''), handle), () => this.stop());
  }

  async tools() {
    await this.boot();
    return unwrap(await this.#call('tools'));
  }

  async replay(trace, options = {}) {
    await this.boot();
    const text = typeof trace === 'string' ? trace : JSON.stringify(trace);
    return unwrap(await this.#call('replay', text, options));
  }

  async evaluate(cases) {
    await this.boot();
    if (this.#configuring) await this.#configuring; // the options just set apply
    const text = typeof cases === 'string' ? cases : JSON.stringify(cases);
    return unwrap(await this.#call('evaluate', text));
  }

  /** The models and their availability (the site's own model: size, storage, usage). */
  async modelStatus() {
    await this.boot();
    if (this.#configuring) await this.#configuring;
    return unwrap(await this.#call('status'));
  }

  call(name, ...args) {
    return this.#call(name, ...args);
  }

  #call(name, ...args) {
    return this.#agent.call(name, ...args);
  }

  // ---- boot

  boot() {
    if (this.#ready) return this.#ready;
    this.#ready = (async () => {
      this.#setState('loading');
      this.#agent = await connectAgent(this.#bridge(), {
        onProgress: (p) => bootProgress(this, p),
        runtime: this.host.getAttribute('runtime') || undefined,
      });
      await this.#configure(false);
      if (this.#persists()) await this.openVisit().catch(() => {});
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

  #setState(state, error) {
    this.state = state;
    if (state === 'failed') {
      this.loadError = error;
      console.warn(`<site-agent>: the assistant could not start: ${error?.message ?? error}`);
    }
    this.render();
  }

  #bridge() {
    return {
      // `extra` is the element's own channel: { run, title? } (the event JSON is the published one).
      emit: (json, extra) => this.#event(JSON.parse(json), extra ? JSON.parse(extra) : {}),
      started: (text, run) => this.#started(text, run),
      confirm: (json, signal) => this.#confirm(JSON.parse(json), signal),
      save: (json, run) => this.#save(JSON.parse(json), run),
      // The page's document.modelContext, for the worker host (a worker has no document).
      // Not `modelContext`: that member, when given, replaces the page's tools in Python.
      pageTools: pageModelContext,
      // models="local" with Python on this thread: the engine host loads on first use only.
      localEngine: (options) => import('../runtime/local-model.js').then((m) => m.createLocalEngine(options)),
    };
  }

  async #configure(fresh) {
    const [config, values] = elementSettings(this.host);
    if (values.registered) {
      await values.registered.catch(() => {}); // a refused tool is simply not listed
      delete values.registered;
    }
    const text = await this.#call('configure', config, values);
    const envelope = JSON.parse(text);
    if (envelope.ok) {
      this.configError = null;
      this.status = envelope.value;
      if (fresh) {
        this.#visit?.clear();
        this.transcript.note(this.t('newConversation'));
      }
    } else {
      this.configError = envelope.error.message;
      this.status = null;
      console.warn(`<site-agent>: ${envelope.error.message}`);
    }
    this.render();
  }

  /**
   * Attribute and option changes, coalesced per task; each waits for the one before, and
   * Python's configure() waits for a running run (then the conversation starts fresh).
   */
  scheduleConfigure() {
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

  /** The on-device model's download (setup.js's button): straight into Python. */
  async prepare(onProgress) {
    const envelope = JSON.parse(await this.#call('prepare', onProgress));
    if (envelope.ok) {
      this.status = envelope.value;
      this.render();
    }
    return envelope;
  }

  // ---- the conversation across pages: web/element/visit.js (loaded when needed)

  #persists() {
    return this.host.getAttribute('persist') !== 'off';
  }

  openVisit() {
    this.#visitLoad ??= import('./visit.js').then((m) => {
      this.#visit = new m.Visit(this.host.conversation);
      // A write that failed (quota, a private mode): the panel says the conversation stays here.
      this.#visit.onWriteFailed = () => this.transcript.note(this.t('notSaved'), 'error');
      return this.#visit;
    });
    return this.#visitLoad;
  }

  /** Shows the stored conversation of this page's element, if any (once, into an empty log). */
  restoreFrom(visit) {
    if (!this.transcript.empty) return;
    const found = visit.restoreInto((k, t) => this.transcript.restore(k, t));
    this.#restore = found?.pending;
    if (found?.otherTab) this.transcript.note(this.t('otherTab'));
    if (found?.show) this.show({ focus: false });
  }

  /**
   * Back from the back/forward cache after another page of the visit went on with the
   * conversation (visit.js, shown()): this page's stale run and log are dropped, and the newer
   * record is taken up as the next page would (its run goes on here), with a note saying so.
   */
  async #movedOn(visit, record) {
    this.card.finish(false);
    this.runs.reset();
    this.waiting.stop();
    this.#restore = null;
    this.#kept = null;
    if (this.#agent) await this.#call('reset');
    this.transcript.clear();
    if (record) this.restoreFrom(visit); // read from storage, where it still is
    this.transcript.note(this.t('movedOn'));
    this.render();
    if (this.#agent && this.state === 'ready') await this.#restoreRun();
  }

  async #restoreRun() {
    const pending = this.#restore;
    this.#restore = null;
    if (!pending) return;
    const id = this.runs.next();
    this.runs.current = id;
    this.runs.running = !!pending.run && !pending.ended; // until its done event
    this.render();
    const envelope = JSON.parse(await this.#call('restore', JSON.stringify(pending), id));
    const value = envelope.value ?? {};
    if (!value.resumed && this.runs.current === id) {
      this.runs.running = false;
      this.render();
    }
    if (!envelope.ok) {
      this.#visit?.clear();
      this.transcript.clear();
    } else if (value.ended) {
      this.lastTrace = value.ended;
      this.transcript.note(this.t('stopped'));
      this.#visit?.write({ state: JSON.parse(await this.#call('state')), ended: undefined });
    }
  }

  #save(state, run) {
    // A save of a run that was reset (it may cross from the worker after the reset): dropped.
    if (!this.runs.keeps(run)) return;
    this.#kept = state;
    if (!this.#persists()) return;
    this.openVisit().then((v) => {
      v.update({ state }, () => ({ open: this.isOpen, log: this.transcript.data() }));
      if (!state?.run) v.flush(); // no run going on (it ended): stored at once
    });
  }

  #onHide = () => this.#visit?.hidden(this.isOpen, this.transcript.data(this.card.pendingCall), this.card.pending);

  #onShow = (event) => {
    const visit = event.persisted ? this.#visit : null;
    const moved = visit?.shown();
    if (moved) this.#movedOn(visit, moved.record).catch(() => {});
  };

  #newChat() {
    this.reset();
    this.say(this.t('newChatDone'));
    this.ui.input.focus();
  }

  // ---- runs

  #submit(event) {
    event.preventDefault();
    const text = this.ui.input.value.trim();
    if (!text) return;
    if (this.runs.running || this.runs.queued) return this.say(this.t('busy'));
    this.ui.input.value = '';
    grow(this.ui.input);
    this.send(text);
  }

  /** Keys typed before the panel was there (element.js): into the input; Enter sends them. */
  typed(text, enter) {
    const input = this.ui.input;
    input.value += text;
    grow(input);
    input.setSelectionRange(input.value.length, input.value.length);
    if (enter) this.ui.form.requestSubmit();
  }

  /** A message the visitor sends: typed, an example, or Try again after an error. */
  async send(text) {
    const { ui, runs } = this;
    if (runs.running || runs.queued) return this.say(this.t('busy'));
    this.lastText = text;
    if (this.state !== 'ready') {
      // Python is still starting: show the message at once; it runs when the agent is ready.
      const line = this.transcript.message('user', text);
      line.classList.add('queued');
      runs.queued = { line, text, note: this.transcript.note(this.t('queued')) };
      this.say(this.t('queued'));
      ui.stop.hidden = false; // Stop takes it back
    }
    try {
      await this.#run(text);
    } catch (error) {
      if (runs.queued && !ui.input.value) ui.input.value = text; // nothing lost
      this.#unqueue();
      if (error.code === 'busy') this.say(this.t('busy'));
      else if (error.code !== 'config' && error.code !== 'aborted') showError(this, error);
    }
  }

  #unqueue() {
    const queued = this.runs.unqueue();
    this.transcript.remove(queued?.line);
    this.transcript.remove(queued?.note);
  }

  async #run(text, handle = null) {
    const generation = this.runs.generation;
    await this.boot();
    if (!this.runs.running && this.#configuring) await this.#configuring;
    if (!this.#agent) throw agentError({ code: 'config', message: 'The element was removed.' });
    if (generation !== this.runs.generation) {
      throw agentError({ code: 'aborted', message: 'Stopped before the message was sent.' });
    }
    const id = this.runs.next(); // Python tags this run's events with it
    if (handle) handle.id = id;
    return unwrap(await this.#call('run', text, id));
  }

  #started(text, run) {
    // A run asked for before a reset() that Python started anyway: it ends in the background.
    if (!this.runs.start(run)) return;
    this.#unqueue();
    this.errorText = null;
    this.transcript.message('user', text);
    this.render();
    this.say(this.t('working'));
  }

  #event(event, extra = {}) {
    const run = extra.run;
    this.runs.push(event, run);
    // A run that was reset ends in the background: nothing of it reaches the page any more.
    if (!this.runs.shows(run)) return;
    this.host.dispatchEvent(new CustomEvent('site-agent-event', { detail: event, bubbles: true, composed: true }));
    showEvent(this, event, extra);
  }

  /** Python is asked to end the run (the time limit: waiting.js). */
  abort(cause) {
    if (this.#agent) this.#call('abort', cause);
  }

  // ---- the confirmation card (card.js)

  #confirm(request, signal) {
    if (!signal?.aborted && !this.isOpen) this.show({ focus: false });
    return this.card.open(request, signal);
  }

  // Hiding the page (another tab, a minimised window) ends a pending card as a denial with
  // cause "hidden"; the run goes on and the model is told.
  #onVisibility = () => {
    if (document.visibilityState !== 'hidden') return;
    this.#visit?.flush(); // a hidden page may be discarded without a pagehide
    if (!this.card.pending) return;
    if (this.#agent) this.#call('deny_pending', 'hidden');
    this.card.finish(false);
  };

  #keydown(event) {
    if (event.key !== 'Escape') return;
    event.stopPropagation();
    event.preventDefault(); // the panel's Escape: no page dialog under it closes too (layer.js)
    if (this.card.pending) this.card.finish(false);
    else this.hide();
  }
}
