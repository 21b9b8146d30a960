// The bakery in Vue 3 (single-file components compiled by vue/compiler-sfc at build time).
// ssr.html holds the server-rendered markup (build.mjs): createSSRApp hydrates it.
import { createApp, createSSRApp } from 'vue';
import App from './App.vue';

export { App };

if (globalThis.document) {
  const root = document.getElementById('app');
  (root.hasChildNodes() ? createSSRApp(App) : createApp(App)).mount(root);
  document.documentElement.dataset.ready = 'true';
}
