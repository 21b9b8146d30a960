// The bakery in Vue 3 (single-file components compiled by vue/compiler-sfc at build time).
import { createApp } from 'vue';
import App from './App.vue';

createApp(App).mount('#app');
document.documentElement.dataset.ready = 'true';
