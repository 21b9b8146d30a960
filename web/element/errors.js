// Which plain sentence a failed run shows, and whether "Try again" is offered. The sentence
// key is `error.<code>` for the agent's error codes (docs/element.md lists them); a
// `model-error` (the model adapter raised, or its endpoint failed) is told apart by what its
// message says: a busy or overloaded endpoint (HTTP 429, 503, 529), a time-out (HTTP 504, a
// provider that did not answer in time), or a lost connection (a fetch that failed, or the
// browser being offline). The technical message itself never reaches the screen: it stays in
// the `error` event, the trace and the console.

const BUSY = /\b(?:429|503|529)\b|\bbusy\b|overloaded|rate.?limit/i;
const TIMEOUT = /\b504\b|time.?out|timed out|in time\b/i;
const NETWORK = /failed to fetch|networkerror|network error|could not reach|load failed|stream broke off/i;

/** Codes whose run can simply be sent again. */
const RETRYABLE = new Set(['model-error', 'busy', 'network', 'timeout', 'bad-reply', 'repeated-call']);

/**
 * The kind of a run's error: its code, or for `model-error` one of `busy`, `timeout`,
 * `network` when the message or the browser says so. `event` is `{code, message}`.
 */
export function errorKind(event) {
  const code = String(event?.code || 'model-error');
  if (code !== 'model-error') return code;
  const message = String(event?.message || '');
  if (globalThis.navigator?.onLine === false || NETWORK.test(message)) return 'network';
  if (BUSY.test(message)) return 'busy';
  if (TIMEOUT.test(message)) return 'timeout';
  return code;
}

/** Whether sending the same message again makes sense after an error of this kind. */
export const canRetry = (kind) => RETRYABLE.has(kind);
