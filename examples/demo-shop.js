// The demo shop's own code: its state, its page UI, and the WebMCP tools it declares.
// Nothing here knows about the agent: the page only registers tools, as any site would.
import { installShim, hasNativeModelContext } from '../loader.js';

import {
  PRODUCTS, byId, money, search, findProduct, loadCart, saveCart, describeCart as cartText,
  addToCartTool, reviewsTool,
} from './shop-catalog.js';

// ---------------------------------------------------------------------------- state

const shop = {
  cart: loadCart(), // id -> quantity; kept in this tab (shop-catalog.js)
  orders: [],
  notes: [],
  registrations: new Map(), // tool name -> AbortController
  reset() {
    this.cart.clear();
    this.orders.length = 0;
    document.getElementById('order-status').textContent = '';
    render();
  },
  count() {
    let n = 0;
    for (const q of this.cart.values()) n += q;
    return n;
  },
  total() {
    let sum = 0;
    for (const [id, q] of this.cart) sum += byId(id).price * q;
    return sum;
  },
};
window.shop = shop; // for the console and the tests

const describeCart = () => cartText(shop.cart);

// ---------------------------------------------------------------------------- page UI

function render() {
  saveCart(shop.cart);
  const list = document.getElementById('cart-items');
  list.replaceChildren(...[...shop.cart].map(([id, q]) => {
    const li = document.createElement('li');
    li.dataset.id = id;
    li.dataset.quantity = String(q);
    li.textContent = `${q} × ${byId(id).name} — ${money(byId(id).price * q)}`;
    return li;
  }));
  document.getElementById('cart-count').textContent = String(shop.count());
  document.getElementById('cart-total').textContent = money(shop.total());
  document.getElementById('cart-empty').hidden = shop.cart.size > 0;
}

function renderProducts() {
  const list = document.getElementById('products');
  for (const p of PRODUCTS) {
    const li = document.createElement('li');
    const name = document.createElement('a');
    name.href = `product.html?id=${p.id}`;
    name.textContent = p.name;
    const price = document.createElement('span');
    price.textContent = money(p.price);
    const add = document.createElement('button');
    add.type = 'button';
    add.textContent = 'Add to cart';
    add.addEventListener('click', () => addToCart(p, 1));
    li.append(name, price, add);
    list.append(li);
  }
}

function addToCart(product, quantity) {
  shop.cart.set(product.id, (shop.cart.get(product.id) ?? 0) + quantity);
  render();
}

document.getElementById('clear-cart').addEventListener('click', () => shop.reset());

// ---------------------------------------------------------------------------- tools

const modelContext = installShim(); // the browser's own document.modelContext, else the shim

const TOOLS = {
  search_products: {
    title: 'Search products',
    description: 'Find products in the shop by words (name, colour or material).',
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string', title: 'Search words' } },
      required: ['query'],
    },
    annotations: { readOnlyHint: true },
    execute: ({ query }) => {
      const found = search(query);
      if (!found.length) return `No products match "${query}".`;
      return found.map((p) => `${p.name} (id ${p.id}): ${money(p.price)}`).join('\n');
    },
  },
  add_to_cart: addToCartTool((product, quantity) => {
    addToCart(product, quantity);
    return describeCart();
  }),
  get_reviews: reviewsTool(),
  open_product: {
    title: 'Open product page',
    description: 'Open the page of a product.',
    inputSchema: {
      type: 'object',
      properties: { product: { type: 'string', title: 'Product', description: 'A product name or id' } },
      required: ['product'],
    },
    annotations: { readOnlyHint: true },
    execute: ({ product }) => {
      const found = findProduct(product);
      if (!found) return `No product matches "${product}".`;
      location.assign(`product.html?id=${found.id}`);
      // The page is leaving: the agent takes the run up on the product page.
      return new Promise(() => {});
    },
  },
  checkout: {
    title: 'Check out',
    description: 'Place the order for everything in the cart and pay with the saved card.',
    inputSchema: { type: 'object', properties: {} },
    // Money changes hands: the agent always asks, even for pre-approved names.
    annotations: { consequentialHint: true },
    execute: () => {
      if (!shop.cart.size) return 'The cart is empty; there is nothing to order.';
      const number = 1001 + shop.orders.length;
      const summary = `Order #${number} placed: ${describeCart().replace('The cart has ', '')}`;
      shop.orders.push(number);
      shop.cart.clear();
      render();
      document.getElementById('order-status').textContent = summary;
      return summary;
    },
  },
};

/** Registers (or re-registers) one of the shop's tools. Returns the registration promise. */
shop.register = (name) => {
  shop.registrations.get(name)?.abort();
  const controller = new AbortController();
  shop.registrations.set(name, controller);
  return modelContext.registerTool({ name, ...TOOLS[name] }, { signal: controller.signal });
};

shop.ready = Promise.all(Object.keys(TOOLS).map((name) => shop.register(name)));

// The declarative form tool: where the browser runs it for the agent, answer when the
// visitor clicks Send. If they never do, the agent's per-call timeout ends the wait.
const form = document.getElementById('feedback-form');
form.addEventListener('submit', (event) => {
  event.preventDefault();
  const text = form.elements.message.value.trim();
  if (!text) return;
  shop.notes.push(text);
  const li = document.createElement('li');
  li.textContent = text;
  document.getElementById('feedback-sent').append(li);
  if (event.agentInvoked && typeof event.respondWith === 'function') {
    // Answer the agent's call. (Resetting the form now would cancel that call.)
    event.respondWith(Promise.resolve(`The note was sent to the shop team: "${text}"`));
  } else {
    form.reset();
  }
});

// ---------------------------------------------------------------------------- settings

const agent = document.querySelector('site-agent');
// What checkout will do, in the shopper's words, on the confirmation card (shown as text).
agent.configure({
  summary: ({ tool }) => {
    if (tool.name !== 'checkout' || !shop.cart.size) return undefined;
    const items = [...shop.cart.values()].reduce((sum, q) => sum + q, 0);
    return `${items} ${items === 1 ? 'item' : 'items'}, ${money(shop.total())}`;
  },
});
const params = new URLSearchParams(location.search);
const native = hasNativeModelContext();
document.getElementById('webmcp-mode').textContent = native
  ? 'Tools: this browser’s own WebMCP (document.modelContext).'
  : 'Tools: the page-local WebMCP shim (this browser has no WebMCP; only this page’s assistant sees the tools).';
// The proxy hint names the origin this page is served from (demo --port).
document.getElementById('page-origin').textContent = location.origin;
// Form tools work natively and on the shim alike.
document.getElementById('feedback-mode').textContent = 'The assistant can fill this form; you still click Send.';
document.documentElement.dataset.webmcp = native ? 'native' : 'shim';

// The model `python -m pysite_agent demo --with-local-model` bundles (models/models.json says
// the same; the bundle pins it): Q8_0 by default, ?local-model-type=Q4_1 for a bundle made with
// `bundle --with-local-model --local-model-type Q4_1`.
const LOCAL_MODEL_FILES = {
  Q8_0: {
    url: 'models/SmolLM2-135M-Instruct.Q8_0.gguf',
    sha256: '0c1d3326cd9793cfb7296113c063dd5c24e2bd734b48ec1a3d01b7158eca9387',
  },
  Q4_1: {
    url: 'models/SmolLM2-135M-Instruct.Q4_1.gguf',
    sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
  },
};
const LOCAL_MODEL = {
  ...(LOCAL_MODEL_FILES[params.get('local-model-type')] ?? LOCAL_MODEL_FILES.Q8_0),
  // A 135M model copies names it sees: it is told what the shop sells, in few tokens.
  instructions: 'You help visitors of a shop. Products: mug, red mug, tote bag, t-shirt.',
};
const INSTRUCTIONS = agent.getAttribute('instructions');

function applySettings() {
  const choice = document.querySelector('input[name=model]:checked').value;
  const local = choice.includes('local');
  const instructions = local ? LOCAL_MODEL.instructions : INSTRUCTIONS;
  if (agent.getAttribute('instructions') !== instructions) agent.setAttribute('instructions', instructions);
  if (local) {
    agent.setAttribute('local-model-url', LOCAL_MODEL.url);
    agent.setAttribute('local-model-sha256', LOCAL_MODEL.sha256);
  } else {
    agent.removeAttribute('local-model-url');
    agent.removeAttribute('local-model-sha256');
  }
  const url = document.getElementById('proxy-url').value.trim();
  if (choice.includes('proxy') && url) agent.setAttribute('proxy-url', url);
  else agent.removeAttribute('proxy-url');
  agent.setAttribute('models', choice.includes('proxy') && !url ? 'chrome' : choice);
  if (document.getElementById('pre-approve').checked) agent.setAttribute('pre-approved', 'add_to_cart');
  else agent.removeAttribute('pre-approved');
}

if (params.has('models')) {
  const wanted = params.get('models');
  const radio = [...document.querySelectorAll('input[name=model]')].find((r) => r.value === wanted);
  if (radio) radio.checked = true;
}
if (params.has('proxy-url')) document.getElementById('proxy-url').value = params.get('proxy-url');
if (params.get('pre-approved') === 'add_to_cart') document.getElementById('pre-approve').checked = true;
for (const input of document.querySelectorAll('.settings input')) input.addEventListener('change', applySettings);
applySettings();

renderProducts();
render();
shop.ready.then(() => {
  document.documentElement.dataset.ready = 'true';
});
