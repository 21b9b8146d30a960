// The Python controller (pysite_agent/browser/element.py), opened and called the same way on
// the page's main thread (web/runtime/main-thread.js) and in the worker (web/runtime/worker.js).
// Imports nothing: it runs on both sides of the worker channel.

/**
 * `proxy.method(...)` would leave the bound-method PyProxy alive until garbage collection:
 * take it, call it, destroy it.
 */
export function callPy(proxy, name, ...args) {
  const method = proxy[name];
  try {
    return method(...args);
  } finally {
    method.destroy();
  }
}

/**
 * A controller in Pyodide `py`, created with an element's `bridge`: the connection
 * `{call(name, ...args), close()}`. close() releases the agent in Python (its close()), then
 * frees the PyProxy; later calls throw.
 */
export function openController(py, bridge) {
  const mod = py.pyimport('pysite_agent.browser.element');
  let controller;
  try {
    controller = callPy(mod, 'create_controller', bridge);
  } finally {
    mod.destroy();
  }
  return {
    call(name, ...args) {
      if (!controller) throw new Error('The element was removed.');
      return callPy(controller, name, ...args);
    },
    close() {
      const owned = controller;
      controller = null;
      if (!owned) return;
      try {
        callPy(owned, 'close');
      } finally {
        owned.destroy();
      }
    },
  };
}
