// The element's settings as the Python controller's configure() takes them
// (pysite_agent/browser/_config.py): the attributes, the options (which win), and the JS
// values (a model, confirm, tools) that cross as objects, not JSON.
import { createModelContext } from '../webmcp/shim.js';

const JS_VALUES = ['model', 'confirm', 'tools'];

/**
 * A relative URL (`api/agent`, `/api/agent`, `//host/path`) resolved against the page's base
 * URL (`document.baseURI`: the page's address, or its `<base href>`), when that gives an
 * http(s) URL; anything else (blank, absolute, another scheme, not a string) is returned as
 * given, for Python's checks (pysite_agent/browser/_config.py) to accept or refuse.
 */
export function pageURL(value) {
  if (typeof value !== 'string' || !value.trim() || /^\s*[a-z][a-z0-9+.-]*:/i.test(value)) return value;
  try {
    const url = new URL(value, document.baseURI);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.href;
  } catch {}
  return value;
}

/**
 * `[configJSON, values]` for `host` (the <site-agent> element): the settings as JSON text, and
 * `{model?, confirm?, tools?, registered?}` (`registered`: the promise of an array of tool
 * descriptors registered on their own model context).
 */
export function elementSettings(host) {
  const o = host.options;
  const attr = (name) => host.getAttribute(name);
  const config = {
    models: o.models ?? attr('models'),
    // Resolved here, against the page: a worker would resolve them against its own script.
    proxyUrl: pageURL(o.proxyUrl ?? attr('proxy-url')),
    localModelUrl: pageURL(o.localModelUrl ?? attr('local-model-url')),
    localModelSha256: o.localModelSha256 ?? attr('local-model-sha256'),
    localModelSize: o.localModelSize ?? null,
    localModelMatchTools: o.localModelMatchTools ?? null,
    localModelGroundArguments: o.localModelGroundArguments ?? null,
    baseUrl: document.baseURI, // Python checks a URL given as relative against the page's scheme
    pageUrl: location.href, // Python keeps its origin and path only
    preApproved: o.preApproved ?? attr('pre-approved'),
    maxSteps: o.maxSteps ?? attr('max-steps'),
    instructions: o.instructions ?? attr('instructions'),
    toolTimeoutMs: o.toolTimeoutMs ?? null,
    maxResultChars: o.maxResultChars ?? null,
    debuggingTools: o.debuggingTools ?? host.hasAttribute('debugging-tools'),
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
