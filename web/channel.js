// The element's connection to its Python controller (pysite_agent/browser/element.py).
//
// A connection is `{call(name, ...args), close()}`: `call` invokes one of the controller's
// methods (configure, status, run, replay, evaluate, prepare, tools, abort, deny_pending,
// reset) and returns what it returns (a JSON envelope string, or a promise of one); `close`
// releases the controller.
// inPageAgent() is the connection to a controller in this page's own Pyodide.

// `proxy.method(...)` would leave the bound-method PyProxy alive until garbage collection:
// take it, call it, destroy it.
export function callPy(proxy, name, ...args) {
  const method = proxy[name];
  try {
    return method(...args);
  } finally {
    method.destroy();
  }
}

/**
 * A controller in the page's own Pyodide `py`, created with the element's `bridge`.
 * Python's close() releases the agent; destroy() is the PyProxy's own (frees the proxy).
 */
export function inPageAgent(py, bridge) {
  const mod = py.pyimport('pysite_agent.browser.element');
  let controller;
  try {
    controller = callPy(mod, 'create_controller', bridge);
  } finally {
    mod.destroy();
  }
  return {
    call: (name, ...args) => callPy(controller, name, ...args),
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
