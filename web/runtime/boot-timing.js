// The timing marks of one start of Python (web/runtime/boot.js's bootPython documents them):
// cheap, always on, read by benchmarks/browser_ready.py and docs/performance.md.
/** The `stamp(name, detail?)` of one start (see bootPython's timing marks). */
export function stamper(onMark) {
  const perf = globalThis.performance;
  return (name, detail, at = (perf?.timeOrigin ?? 0) + (perf?.now?.() ?? Date.now())) => {
    try {
      const options = { startTime: at - perf.timeOrigin };
      if (detail !== undefined) options.detail = detail;
      perf.mark(`site-agent:boot:${name}`, options);
    } catch {}
    try {
      onMark?.({ name: `boot:${name}`, at, ...(detail === undefined ? {} : { detail }) });
    } catch {}
  };
}

/** Resource Timing of this realm's files under `base` (Pyodide's folder), as `fetch:FILE` marks. */
export function stampFetches(stamp, base) {
  const perf = globalThis.performance;
  if (!perf?.getEntriesByType) return;
  for (const entry of perf.getEntriesByType("resource")) {
    if (!entry.name.startsWith(base) || !entry.responseEnd) continue;
    const file = entry.name.slice(base.length).split("?")[0];
    const detail = { transfer: entry.transferSize ?? null, body: entry.encodedBodySize ?? null };
    stamp(`fetch:${file}:start`, detail, perf.timeOrigin + entry.startTime);
    stamp(`fetch:${file}:end`, detail, perf.timeOrigin + entry.responseEnd);
  }
}

/**
 * Pyodide's Emscripten factory, wrapped to mark the WebAssembly's instantiation and the end
 * of CPython's start (`createPyodideModule` and `instantiateWasm` are Pyodide 314.0.7's
 * internals, used only with that version; see web/runtime/snapshot.js).
 */
export function timedFactory(create, stamp) {
  return async (settings) => {
    const instantiate = settings.instantiateWasm;
    if (typeof instantiate === "function") {
      settings.instantiateWasm = (imports, done) => {
        stamp("wasm:start");
        return instantiate(imports, (instance, module) => {
          stamp("wasm:end");
          done(instance, module);
        });
      };
    }
    const made = await create(settings);
    stamp("emscripten");
    return made;
  };
}
