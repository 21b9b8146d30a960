// The bakery in React 19 under StrictMode (development build: every effect runs, is cleaned
// up and runs again on mount). Tools are registered in effects whose cleanup unregisters them;
// <site-agent> gets `options` as a property (React 19 sets a custom element's property when the
// element has one) and its attributes as strings.
import { StrictMode, useEffect, useSyncExternalStore } from 'react';
import { createRoot, hydrateRoot } from 'react-dom/client';
import { AGENT_OPTIONS, CAKES, navigate, registerTools, store } from '../bakery.js';

const version = () => store.version;
const useStore = () => useSyncExternalStore((fn) => store.subscribe(fn), version, version);

function Catalog() {
  useEffect(() => registerTools('catalog'), []);
  return (
    <ul id="cakes">
      {CAKES.map((c) => <li key={c.id}>{c.name}: ${c.price}</li>)}
    </ul>
  );
}

function Orders() {
  useEffect(() => registerTools('orders'), []);
  useStore();
  return (
    <ul id="orders">
      {store.orders.map((o) => <li key={o.id} data-status={o.status}>order {o.id}: {o.cake} ({o.status})</li>)}
    </ul>
  );
}

// Hydrating server markup (ssr.html), React 19 sets no property of a custom element
// (react#35446): the ref callback sets `options` then. It is one function for every render,
// so React calls it when the element mounts, not on each render.
const withOptions = (el) => {
  if (el) el.options = AGENT_OPTIONS;
};

function Agent() {
  return <site-agent models="demo" label="Ask the bakery" options={AGENT_OPTIONS} ref={withOptions}></site-agent>;
}

export function App() {
  useEffect(() => registerTools('app'), []);
  useStore();
  const dock = store.dock ?? 'side';
  return (
    <>
      <nav>
        <button id="to-catalog" onClick={() => navigate('catalog')}>Catalog</button>
        <button id="to-orders" onClick={() => navigate('orders')}>Orders</button>
        <button id="move" onClick={() => { store.dock = dock === 'side' ? 'foot' : 'side'; store.changed(); }}>Move</button>
      </nav>
      <main data-route={store.route}>{store.route === 'orders' ? <Orders /> : <Catalog />}</main>
      <p id="cart">Cart: {store.cart.length}</p>
      <aside id="side">{dock === 'side' && <Agent />}</aside>
      <footer id="foot">{dock === 'foot' && <Agent />}</footer>
    </>
  );
}

export const app = <StrictMode><App /></StrictMode>;

if (globalThis.document) {
  // ssr.html holds the server-rendered markup (build.mjs): hydrate it; index.html is empty.
  const root = document.getElementById('app');
  if (root.hasChildNodes()) hydrateRoot(root, app);
  else createRoot(root).render(app);
  document.documentElement.dataset.ready = 'true';
}
