// The storage probe of benchmarks/cache_reload_probe.py (read its docstring): loaded by the
// probe page as a classic script and by its worker with importScripts; defines `self.probe`.
self.probe = (() => {
  const MB = 1 << 20;
  const bytes = (n) => { const b = new Uint8Array(n); for (let i = 0; i < n; i += 4096) b[i] = i >> 12; return b; };
  const req = (r) => new Promise((res, rej) => { r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
  const open = () => { const r = indexedDB.open('probe', 1); r.onupgradeneeded = () => r.result.createObjectStore('s'); return req(r); };
  async function idb(mode, fn) {
    const db = await open();
    try {
      const t = db.transaction('s', mode);
      const out = fn(t.objectStore('s'));
      const fail = (rej) => () => { let e = t.error; try { e ??= out?.error; } catch {} rej(e ?? new Error('the transaction was aborted')); };
      await new Promise((res, rej) => { t.oncomplete = res; t.onerror = fail(rej); t.onabort = fail(rej); });
      return out && 'result' in out ? out.result : out;
    } finally { db.close(); }
  }
  async function opfs(name, data, how) {
    const root = await navigator.storage.getDirectory();
    const h = await root.getFileHandle(name, { create: true });
    if (how === 'sync') {
      const a = await h.createSyncAccessHandle();
      a.truncate(0); a.write(data, { at: 0 }); a.flush(); a.close();
    } else {
      const w = await h.createWritable(); await w.write(data); await w.close();
    }
  }
  const size = async (v) => (v instanceof Blob ? (await v.arrayBuffer()).byteLength : v?.byteLength ?? -1);
  return {
    async put(realm) {
      const out = {};
      const attempt = async (name, fn) => { try { await fn(); out[name] = 'ok'; } catch (e) { out[name] = `${e?.name}: ${e?.message}`; } };
      await attempt(`cache:${realm}`, async () => (await caches.open('probe')).put(`/probe/${realm}`, new Response(bytes(MB))));
      await attempt(`idb:ab4-${realm}`, () => idb('readwrite', (s) => s.put(bytes(4 * MB).buffer, `ab4-${realm}`)));
      await attempt(`idb:blob4-${realm}`, () => idb('readwrite', (s) => s.put(new Blob([bytes(4 * MB)]), `blob4-${realm}`)));
      await attempt(`idb:ab31-${realm}`, () => idb('readwrite', (s) => s.put(bytes(31 * MB).buffer, `ab31-${realm}`)));
      await attempt(`opfs:writable-${realm}`, () => opfs(`writable-${realm}`, bytes(4 * MB), 'writable'));
      if (realm === 'worker') await attempt('opfs:sync-worker', () => opfs('sync-worker', bytes(4 * MB), 'sync'));
      return out;
    },
    async list() {
      const out = {};
      try {
        const c = await caches.open('probe');
        for (const r of await c.keys()) out[`cache:${new URL(r.url).pathname.slice(7)}`] = (await (await c.match(r)).arrayBuffer()).byteLength;
      } catch (e) { out.cache = String(e); }
      try {
        const keys = await idb('readonly', (s) => s.getAllKeys());
        for (const k of keys) {
          try { out[`idb:${k}`] = await size(await idb('readonly', (s) => s.get(k))); } catch (e) { out[`idb:${k}`] = `${e?.name}: ${e?.message}`; }
        }
      } catch (e) { out.idb = String(e); }
      try {
        const root = await navigator.storage.getDirectory();
        for await (const [name, h] of root.entries()) out[`opfs:${name}`] = (await (await h.getFile()).arrayBuffer()).byteLength;
      } catch (e) { out.opfs = String(e); }
      return out;
    },
    async clear() {
      await caches.delete('probe');
      await req(indexedDB.deleteDatabase('probe')).catch(() => {});
      try {
        const root = await navigator.storage.getDirectory();
        for await (const name of root.keys()) await root.removeEntry(name);
      } catch {}
    },
    async putLarge() {  // one 31 MB entry per store, for the read timings (OPFS: from a worker)
      await (await caches.open('probe')).put('/probe/large', new Response(bytes(31 * MB)));
      await idb('readwrite', (s) => s.put(bytes(31 * MB).buffer, 'large'));
      if (typeof WorkerGlobalScope !== 'undefined' && navigator.storage?.getDirectory) await opfs('large', bytes(31 * MB), 'sync');
    },
    async timeReads() {
      const out = {};
      const time = async (name, fn) => {
        const t0 = performance.now();
        const n = await fn();
        out[name] = n === 31 * MB ? Math.round(performance.now() - t0) : `size ${n}`;
      };
      await time('cache', async () => (await (await (await caches.open('probe')).match('/probe/large')).arrayBuffer()).byteLength);
      await time('idb', async () => new Uint8Array(await idb('readonly', (s) => s.get('large'))).length);
      if (navigator.storage?.getDirectory) await time('opfs', async () => {
        const root = await navigator.storage.getDirectory();
        return (await (await (await root.getFileHandle('large')).getFile()).arrayBuffer()).byteLength;
      });
      return out;
    },
  };
})();
