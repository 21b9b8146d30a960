// The bakery every framework app of tests/frameworks shows: its data, its WebMCP tools per
// route, and its router (history.pushState). Framework-free on purpose: each app calls
// `registerTools(group)` in its own life cycle (a React effect, Vue's onMounted, Svelte's
// $effect, Lit's connectedCallback, a Preact hook) and calls the cleanup it returns when the
// component goes (the tools unregister: their AbortSignal aborts). `/loader.js` comes from the
// self-hosted bundle the tests serve; it is not bundled into the app.
import { installShim } from '/loader.js';

export const CAKES = [
  { id: 1, name: 'chocolate cake', price: 20 },
  { id: 2, name: 'lemon tart', price: 12 },
  { id: 3, name: 'carrot cake', price: 15 },
];

/** The app's state (plain object + subscribers), shared by the routes of one app. */
// On the server (SSR in build.mjs) there is no location, history or window: the catalog renders.
const here = globalThis.location ?? { pathname: '/' };

export const store = {
  route: routeOf(here.pathname),
  cart: [], // cake names
  orders: [{ id: 7, cake: 'lemon tart', status: 'open' }, { id: 8, cake: 'carrot cake', status: 'open' }],
  version: 0,
  listeners: new Set(),
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  },
  changed() {
    this.version += 1;
    for (const fn of [...this.listeners]) fn();
  },
};

function routeOf(path) {
  return path.endsWith('/orders') ? 'orders' : 'catalog';
}

const BASE = here.pathname.replace(/\/(orders)?$/, '/').replace(/\/[^/]*\.html$/, '/');

/** Goes to `route` ('catalog' or 'orders') with history.pushState, as a single-page app does. */
export function navigate(route) {
  if (route === store.route) return;
  history.pushState({ route }, '', route === 'orders' ? `${BASE}orders` : BASE);
  store.route = route;
  store.changed();
}

globalThis.addEventListener?.('popstate', () => {
  store.route = routeOf(location.pathname);
  store.changed();
});

/** Each app's registrations, for the tests: name -> count of registerTool calls. */
globalThis.bakeryRegistrations = {};

const TOOLS = {
  // Registered by the app's root: present on every route.
  app: {
    open_page: {
      description: 'Open a page of the bakery: the cake catalog or the orders page.',
      inputSchema: {
        type: 'object',
        properties: { page: { type: 'string', enum: ['catalog', 'orders'] } },
        required: ['page'],
      },
      annotations: { readOnlyHint: true },
      execute: ({ page }) => {
        navigate(page);
        return `The ${page} page is open.`;
      },
    },
    add_to_cart: {
      description: 'Put a cake in the cart.',
      inputSchema: {
        type: 'object',
        properties: { cake: { type: 'string', description: 'The cake name' } },
        required: ['cake'],
      },
      execute: ({ cake }) => {
        store.cart.push(cake);
        store.changed();
        return `The cart has ${store.cart.length} item(s): ${store.cart.join(', ')}.`;
      },
    },
  },
  // Registered by the catalog route's component.
  catalog: {
    search_cakes: {
      description: 'Search the cake catalog by words.',
      inputSchema: { type: 'object', properties: { words: { type: 'string' } }, required: ['words'] },
      annotations: { readOnlyHint: true },
      execute: ({ words }) => {
        const found = CAKES.filter((c) => words.toLowerCase().split(/\W+/).some((w) => w && c.name.includes(w)));
        return found.length ? found.map((c) => `${c.name}: $${c.price}`).join('\n') : `No cake matches "${words}".`;
      },
    },
    bake_special: {
      description: 'Bake a special cake to order (only on the catalog page).',
      inputSchema: { type: 'object', properties: { flavour: { type: 'string' } }, required: ['flavour'] },
      execute: ({ flavour }) => `A ${flavour} special is in the oven.`,
    },
  },
  // Registered by the orders route's component.
  orders: {
    list_orders: {
      description: 'List the orders of the visitor.',
      inputSchema: { type: 'object', properties: {} },
      annotations: { readOnlyHint: true },
      execute: () => store.orders.map((o) => `order ${o.id}: ${o.cake} (${o.status})`).join('\n'),
    },
    cancel_order: {
      description: 'Cancel an order by its number.',
      inputSchema: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] },
      execute: ({ id }) => {
        const order = store.orders.find((o) => o.id === id);
        if (!order) return `There is no order ${id}.`;
        order.status = 'cancelled';
        store.changed();
        return `Order ${id} is cancelled.`;
      },
    },
  },
};

/**
 * Registers the tools of `group` ('app', 'catalog' or 'orders') on the page's
 * document.modelContext (the browser's, else the shim). Returns the cleanup: it aborts their
 * signal, which unregisters them (a second call does nothing).
 */
export function registerTools(group) {
  const mc = installShim();
  const controller = new AbortController();
  for (const [name, tool] of Object.entries(TOOLS[group])) {
    window.bakeryRegistrations[name] = (window.bakeryRegistrations[name] ?? 0) + 1;
    mc.registerTool({ name, ...tool }, { signal: controller.signal }).catch((error) => {
      // Unregistered before the registration finished (StrictMode's first mount): expected.
      if (controller.signal.aborted && error === controller.signal.reason) return;
      // Shown by the tests (a duplicate name in a second mount would land here).
      (window.bakeryErrors ??= []).push(`${name}: ${error.name}: ${error.message}`);
    });
  }
  return () => controller.abort();
}

/** The element's options, set as a property (frameworks differ in how: docs/frameworks.md). */
export const AGENT_OPTIONS = { instructions: 'You help visitors of the bakery.' };
