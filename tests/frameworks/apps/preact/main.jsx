// The bakery in Preact (hooks): tools are registered in effects whose cleanup unregisters them;
// Preact sets `options` as a property because <site-agent> has one (defined before render).
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { AGENT_OPTIONS, CAKES, navigate, registerTools, store } from '../bakery.js';

function useStore() {
  const [, setVersion] = useState(store.version);
  useEffect(() => store.subscribe(() => setVersion(store.version)), []);
}

function Catalog() {
  useEffect(() => registerTools('catalog'), []);
  return <ul id="cakes">{CAKES.map((c) => <li key={c.id}>{c.name}: ${c.price}</li>)}</ul>;
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

const Agent = () => <site-agent models="demo" label="Ask the bakery" options={AGENT_OPTIONS}></site-agent>;

function App() {
  useEffect(() => registerTools('app'), []);
  useStore();
  const dock = store.dock ?? 'side';
  const move = () => { store.dock = dock === 'side' ? 'foot' : 'side'; store.changed(); };
  return (
    <>
      <nav>
        <button id="to-catalog" onClick={() => navigate('catalog')}>Catalog</button>
        <button id="to-orders" onClick={() => navigate('orders')}>Orders</button>
        <button id="move" onClick={move}>Move</button>
      </nav>
      <main data-route={store.route}>{store.route === 'orders' ? <Orders /> : <Catalog />}</main>
      <p id="cart">Cart: {store.cart.length}</p>
      <aside id="side">{dock === 'side' && <Agent />}</aside>
      <footer id="foot">{dock === 'foot' && <Agent />}</footer>
    </>
  );
}

render(<App />, document.getElementById('app'));
document.documentElement.dataset.ready = 'true';
