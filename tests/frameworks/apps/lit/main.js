// The bakery in Lit 3: each route is a custom element that registers its tools in
// connectedCallback and unregisters them in disconnectedCallback; `.options=${...}` sets the
// property of <site-agent>. The components render into their light DOM (createRenderRoot), so
// the page's own CSS and document.querySelector reach <site-agent>.
import { LitElement, html } from 'lit';
import { AGENT_OPTIONS, CAKES, navigate, registerTools, store } from '../bakery.js';

class Light extends LitElement {
  createRenderRoot() {
    return this;
  }
}

class BakeryRoute extends Light {
  connectedCallback() {
    super.connectedCallback();
    this.cleanup = registerTools(this.group);
    this.unsubscribe = store.subscribe(() => this.requestUpdate());
  }

  disconnectedCallback() {
    super.disconnectedCallback();
    this.cleanup();
    this.unsubscribe();
  }
}

customElements.define('bakery-catalog', class extends BakeryRoute {
  group = 'catalog';
  render() {
    return html`<ul id="cakes">${CAKES.map((c) => html`<li>${c.name}: $${c.price}</li>`)}</ul>`;
  }
});

customElements.define('bakery-orders', class extends BakeryRoute {
  group = 'orders';
  render() {
    return html`<ul id="orders">${store.orders.map((o) => html`<li data-status=${o.status}>order ${o.id}: ${o.cake} (${o.status})</li>`)}</ul>`;
  }
});

customElements.define('bakery-app', class extends BakeryRoute {
  group = 'app';
  dock = 'side';
  move() {
    this.dock = this.dock === 'side' ? 'foot' : 'side';
    this.requestUpdate();
  }

  render() {
    const agent = html`<site-agent models="demo" label="Ask the bakery" .options=${AGENT_OPTIONS}></site-agent>`;
    return html`
      <nav>
        <button id="to-catalog" @click=${() => navigate('catalog')}>Catalog</button>
        <button id="to-orders" @click=${() => navigate('orders')}>Orders</button>
        <button id="move" @click=${() => this.move()}>Move</button>
      </nav>
      <main data-route=${store.route}>${store.route === 'orders' ? html`<bakery-orders></bakery-orders>` : html`<bakery-catalog></bakery-catalog>`}</main>
      <p id="cart">Cart: ${store.cart.length}</p>
      <aside id="side">${this.dock === 'side' ? agent : ''}</aside>
      <footer id="foot">${this.dock === 'foot' ? agent : ''}</footer>`;
  }
});

document.getElementById('app').append(document.createElement('bakery-app'));
document.documentElement.dataset.ready = 'true';
