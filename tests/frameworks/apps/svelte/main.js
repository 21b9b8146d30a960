// The bakery in Svelte 5 (compiled by svelte/compiler at build time).
import { mount } from 'svelte';
import App from './App.svelte';

mount(App, { target: document.getElementById('app') });
document.documentElement.dataset.ready = 'true';
