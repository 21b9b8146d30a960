// The conversation across pages of one visit (docs/element.md, "Across pages"): one versioned
// record per conversation name in this tab's sessionStorage (never localStorage; it never
// leaves the browser). The element loads this file only when a record exists or a conversation starts.
//
// Record v1: {v: 1, name, savedAt, hiddenAt, open, log: [[kind, text], ...], state: {
//   conversation: {version: 1, messages, afterUntrusted}, run: run state | null}, ended?,
//   by?, rev?}
// `by` is the id of the page (document) that wrote it last, PAGE_ID, kept in memory only
// (sessionStorage is copied into a duplicated tab, memory is not); `rev` counts its writes.
// A run is taken up only from a record whose page went away (hiddenAt set by pagehide) or
// by the page that wrote it: a tab that finds a run going on in another (a copy, hiddenAt
// null, another page's id) starts fresh. A page back from the back/forward cache compares
// the stored record with its own: another page's write since wins (shown()).
// `state` is what the Python controller's state() gives after each step. A record that fails
// the checks below is removed and the element starts fresh; the conversation is never taken
// without its afterUntrusted flag. A write that fails (private mode, quota) removes the record
// stored before (the next page starts fresh instead of restoring an older conversation) and
// calls `onWriteFailed`; the page's own conversation goes on.

export const DEADLINE_MS = 30_000; // an interrupted run resumes only within this long
// During a run, the state after each step is kept in memory at once and stored at most this
// often (ms); pagehide and a hidden page store it at once, so a page change never loses a
// step. The element stores the state at once when no run is going on (a run ended).
export const STORE_EVERY_MS = 250;
const PREFIX = 'site-agent:';
// What the panel says when a write fails (the element shows it as an error note).
export const NOT_SAVED = 'this conversation cannot be kept for the next page (the browser refused to store it); it goes on here.';
const MAX_LOG = 200;

/** This document's id (never stored as such elsewhere than in records it writes). */
export const PAGE_ID = globalThis.crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;

function storage() {
  try {
    return globalThis.sessionStorage ?? null;
  } catch {
    return null; // access itself can throw (storage blocked)
  }
}

const isConversation = (c) => !!c && c.version === 1 && Array.isArray(c.messages)
  && typeof c.afterUntrusted === 'boolean';

function valid(r, name) {
  return !!r && r.v === 1 && r.name === name && typeof r.savedAt === 'number'
    && (r.hiddenAt === null || typeof r.hiddenAt === 'number') && typeof r.open === 'boolean'
    && Array.isArray(r.log) && r.log.every((e) => Array.isArray(e) && e.length === 2
      && typeof e[0] === 'string' && typeof e[1] === 'string')
    && !!r.state && isConversation(r.state.conversation)
    && (r.state.run === null || typeof r.state.run === 'object')
    && (r.by === undefined || typeof r.by === 'string') && (r.rev === undefined || typeof r.rev === 'number');
}

export class Visit {
  /** `onWriteFailed({removed, error, message})`: called when a write fails (see #failed). */
  constructor(name, onWriteFailed = null) {
    this.name = name;
    this.onWriteFailed = onWriteFailed;
    this.key = PREFIX + name;
    this.record = null;
    this.frozen = false; // after pagehide: the page is going away, the record is final
  }

  /** The stored record, checked; a bad one is removed (null). */
  read() {
    let record = null;
    try {
      record = JSON.parse(storage()?.getItem(this.key) ?? 'null');
    } catch {
      record = undefined;
    }
    if (record !== null && !valid(record, this.name)) {
      this.clear();
      record = null;
    }
    this.record = record;
    return record;
  }

  /** Merge `patch` into the record and store it now (no error when storage fails). */
  write(patch) {
    if (this.frozen) return;
    if (this.#dirty && this.#more) this.#merge(this.#more());
    this.#merge(patch);
    this.#store();
  }

  /**
   * The state after a step: merge `patch` now and store the record within STORE_EVERY_MS,
   * with `more()` ({open, log}) read then. Steps in between are stored once, with the last.
   */
  update(patch, more) {
    if (this.frozen) return;
    this.#merge(patch);
    this.#more = more ?? null;
    if (!this.record.state) return;
    this.#dirty = true;
    this.#timer ??= setTimeout(() => this.flush(), STORE_EVERY_MS);
  }

  /** Store now what update() left for later (pagehide, a hidden page, before a write). */
  flush() {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (!this.#dirty || this.frozen) return;
    this.#dirty = false;
    if (this.#more) this.#merge(this.#more());
    this.#store();
  }

  #dirty = false;
  #timer = null;
  #more = null;

  #merge(patch) {
    const base = this.record ?? { v: 1, name: this.name, hiddenAt: null, open: false, log: [], state: null };
    this.record = { ...base, ...patch, savedAt: Date.now(), by: PAGE_ID, rev: (base.rev ?? 0) + 1 };
    if (this.record.log.length > MAX_LOG) this.record.log = this.record.log.slice(-MAX_LOG);
  }

  #store() {
    if (!this.record?.state) return; // nothing worth keeping before the first step
    this.#dirty = false;
    const store = storage();
    try {
      if (!store) throw new DOMException('sessionStorage is not available', 'SecurityError');
      store.setItem(this.key, JSON.stringify(this.record));
      this.failed = null;
    } catch (error) {
      this.#failed(store, error);
    }
  }

  /**
   * A write failed (quota, a private mode that refuses writes, storage blocked): the record
   * stored before is removed, so that the next page never restores an older conversation as
   * if it were this one, and `onWriteFailed({removed, error})` is called once per run of
   * failures (the element says so in the panel). This page's conversation goes on in memory.
   */
  #failed(store, error) {
    let removed = !store;
    try {
      store?.removeItem(this.key);
      removed = true;
    } catch {}
    const first = this.failed === null;
    this.failed = { removed, error: error?.name ?? 'Error', message: NOT_SAVED };
    if (first) {
      try {
        this.onWriteFailed?.(this.failed);
      } catch {}
    }
  }

  /** null while writes succeed; else {removed, error, message} of the last failed write. */
  failed = null;

  clear() {
    this.record = null;
    this.#dirty = false;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    try {
      storage()?.removeItem(this.key);
    } catch {}
  }

  /**
   * Render the stored visible log with `render(kind, text)`; returns `{pending, show}`:
   * what the controller takes up once Python runs (restorable()), and whether the panel
   * opens (it was open, or a run goes on here). Null without a usable record.
   */
  restoreInto(render) {
    const record = this.read();
    if (!record) return null;
    if (this.elsewhere(record)) {
      this.clear(); // this tab's copy: this tab starts fresh (the other tab keeps its own)
      return { pending: null, show: false, otherTab: true };
    }
    for (const [kind, text] of record.log) render(kind, text);
    const pending = this.restorable();
    return { pending, show: record.open || !!(pending.run && !pending.ended) };
  }

  /**
   * pagehide: the record becomes final. A pending confirmation is not carried over: the run
   * records it as denied with the cause "navigated" on the next page.
   */
  hidden(open, log, cardPending) {
    const state = this.record?.state;
    let kept = null;
    try {
      kept = storage()?.getItem(this.key);
    } catch {}
    // Nothing stored or waiting to be, or removed since: not written back.
    if (!state || (!kept && !this.#dirty)) return;
    const run = state.run && cardPending ? { ...state.run, cause: 'navigated' } : state.run;
    this.write({ hiddenAt: Date.now(), open, log, state: { ...state, run } });
    this.frozen = true;
  }

  /**
   * True when `record` holds a run that goes on in another page still open (another tab). A
   * tab the browser discarded to save memory (no pagehide) and loads again is this tab.
   */
  elsewhere(record) {
    if (globalThis.document?.wasDiscarded) return false;
    return !!record.state.run && !record.ended && record.hiddenAt === null && record.by !== undefined && record.by !== PAGE_ID;
  }

  /**
   * pageshow from the back/forward cache. When no other page wrote the record since this one
   * hid, this page goes on as it was (null). Else the newer record wins: returns
   * `{record}` (the stored one, or null when another page removed it: New conversation),
   * and this page must take it up instead of its own; nothing is written here.
   */
  shown() {
    this.frozen = false;
    const mine = this.record;
    let stored = null;
    try {
      stored = JSON.parse(storage()?.getItem(this.key) ?? 'null');
    } catch {}
    if (stored !== null && !valid(stored, this.name)) stored = null;
    // Another page's write, or a record of this page's that another page removed (not one
    // that this page failed to store).
    const movedOn = stored ? stored.by !== PAGE_ID : !!mine?.state && this.failed === null;
    if (movedOn) {
      this.record = null;
      this.#dirty = false;
      return { record: stored };
    }
    if (this.record) this.write({ hiddenAt: null });
    return null;
  }

  /**
   * What the next page's controller takes (restore()): the conversation, the interrupted run
   * and, when that run must not go on, why (`ended`: 'expired' | 'no-element').
   */
  restorable(now = Date.now()) {
    const r = this.record;
    if (!r) return null;
    const { conversation, run } = r.state;
    let ended = r.ended ?? null;
    if (run && !ended && now - (r.hiddenAt ?? r.savedAt) > DEADLINE_MS) ended = 'expired';
    return { conversation, run: run ?? null, ended: run ? ended : null };
  }
}

/** On a page with loader.js but no <site-agent>: interrupted runs of this tab end here. */
export function endRunsHere() {
  const store = storage();
  if (!store) return;
  try {
    for (let i = 0; i < store.length; i += 1) {
      const key = store.key(i);
      if (!key?.startsWith(PREFIX)) continue;
      const record = JSON.parse(store.getItem(key));
      if (record?.state?.run && !record.ended) {
        store.setItem(key, JSON.stringify({ ...record, ended: 'no-element' }));
      }
    }
  } catch {}
}
