// The demo shop's product page: one product, its reviews, and the tools this page declares.
import { installShim } from '../loader.js';
import {
  PRODUCTS, REVIEWS, byId, money, loadCart, saveCart, describeCart, addToCartTool, reviewsTool,
} from './shop-catalog.js';

const product = byId(new URLSearchParams(location.search).get('id')) ?? PRODUCTS[0];
const cart = loadCart();

function renderCart() {
  saveCart(cart);
  let count = 0;
  const items = [...cart].map(([id, q]) => {
    count += q;
    const li = document.createElement('li');
    li.dataset.id = id;
    li.textContent = `${q} × ${byId(id).name} — ${money(byId(id).price * q)}`;
    return li;
  });
  document.getElementById('cart-items').replaceChildren(...items);
  document.getElementById('cart-count').textContent = String(count);
  document.getElementById('cart-empty').hidden = cart.size > 0;
}

function add(found, quantity) {
  cart.set(found.id, (cart.get(found.id) ?? 0) + quantity);
  renderCart();
  return describeCart(cart);
}

document.title = `${product.name} · Mugshot Supply Co.`;
document.getElementById('product-name').textContent = product.name;
document.getElementById('product-price').textContent = money(product.price);
document.getElementById('product-add').addEventListener('click', () => add(product, 1));
for (const review of REVIEWS[product.id] ?? []) {
  const li = document.createElement('li');
  li.textContent = `${review.stars}/5 by ${review.author}: ${review.text}`;
  document.getElementById('product-reviews').append(li);
}
renderCart();
window.shop = { cart, product };

const modelContext = installShim();
const TOOLS = {
  this_product: {
    title: 'This product',
    description: 'Which product this page shows: its name, id and price.',
    inputSchema: { type: 'object', properties: {} },
    annotations: { readOnlyHint: true },
    execute: () => `This page shows ${product.name} (id ${product.id}), ${money(product.price)}.`,
  },
  add_to_cart: addToCartTool(add),
  get_reviews: reviewsTool(),
  back_to_shop: {
    title: 'Back to all products',
    description: 'Open the shop’s page with all products.',
    inputSchema: { type: 'object', properties: {} },
    annotations: { readOnlyHint: true },
    execute: () => {
      location.assign('demo-shop.html');
      return 'Opening the page with all products.';
    },
  },
};
Promise.all(Object.entries(TOOLS).map(([name, tool]) => modelContext.registerTool({ name, ...tool })))
  .then(() => {
    document.documentElement.dataset.ready = 'true';
  });
