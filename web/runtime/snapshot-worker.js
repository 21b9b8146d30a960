// A throwaway runtime that makes the memory snapshot for the next start (web/runtime/boot.js starts
// it when a start found none, once the page is idle). It starts Python in Pyodide's
// snapshot-making mode, takes and stores the snapshot, answers `{saved, bytes?, reason?}`,
// and is terminated. It never sees the page, the site's configuration or the visitor.
import { bootPython } from './boot.js';

self.onmessage = async ({ data }) => {
  let answered = false;
  const answer = (result) => {
    if (answered) return;
    answered = true;
    self.postMessage(result);
  };
  try {
    await bootPython({
      ...data,
      snapshotMaker: 'inline',
      batchCallbacks: false, // a throwaway runtime: it runs no agent
      onSnapshot: (info) => {
        if (info.saved === true) answer({ saved: true, bytes: info.bytes });
        else if (info.saved === false) answer({ saved: false, reason: info.reason });
        else if (info.state === 'used') {
          // Another start of this origin (another tab) stored one meanwhile: nothing to do.
          answer({ saved: false, reason: 'a snapshot of this bundle was already stored' });
        } else if (!info.made) answer({ saved: false, reason: `${info.state}: ${info.reason ?? 'no snapshot taken'}` });
      },
    });
  } catch (error) {
    answer({ saved: false, reason: String(error?.message ?? error) });
  }
};
