// Builds the framework apps of tests/frameworks/apps into tests/frameworks/build/ (git-ignored),
// from the pinned npm packages of package-lock.json: esbuild bundles each app, the Vue SFC
// compiler (vue/compiler-sfc) and the Svelte compiler turn .vue and .svelte files into JS on the
// way. `/loader.js` stays an import of the page (the self-hosted bundle serves it). The React and
// Vue apps are also rendered in Node into ssr.html, which the same app.js hydrates. Offline:
// nothing is fetched. Usage: node tests/frameworks/build.mjs [OUT_DIR]; prints one JSON line
// {out, apps, ms}.
import { build } from 'esbuild';
import { compile as compileSvelte } from 'svelte/compiler';
import { parse as parseVue, compileScript } from 'vue/compiler-sfc';
import { mkdir, readFile, writeFile, rm } from 'node:fs/promises';
import { dirname, join, basename } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = process.argv[2] ?? join(HERE, 'build');

const vuePlugin = (ssr = false) => ({
  name: 'vue-sfc',
  setup(b) {
    b.onLoad({ filter: /\.vue$/ }, async ({ path }) => {
      const { descriptor, errors } = parseVue(await readFile(path, 'utf8'), { filename: path });
      if (errors.length) throw errors[0];
      const script = compileScript(descriptor, {
        id: basename(path),
        inlineTemplate: true,
        templateOptions: { ssr, compilerOptions: { isCustomElement: (tag) => tag === 'site-agent' } },
      });
      return { contents: script.content, loader: 'js', resolveDir: dirname(path) };
    });
  },
});

// On the server, '/loader.js' (the bundle's file) is not there: the apps only reach it in effects.
const loaderStub = {
  name: 'loader-stub',
  setup(b) {
    b.onResolve({ filter: /^\/loader\.js$/ }, () => ({ path: 'loader', namespace: 'stub' }));
    b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({
      contents: 'export const installShim = () => globalThis.document?.modelContext;',
      loader: 'js',
    }));
  },
};

// Server-side rendering (ssr.html): the app's markup rendered in Node, hydrated by the same app.js.
const SSR = {
  react: `import { renderToString } from 'react-dom/server';
    import { app } from './react/main.jsx';
    export const render = async () => renderToString(app);`,
  vue: `import { createSSRApp } from 'vue';
    import { renderToString } from 'vue/server-renderer';
    import { App } from './vue/main.js';
    export const render = () => renderToString(createSSRApp(App));`,
};

const sveltePlugin = {
  name: 'svelte',
  setup(b) {
    b.onLoad({ filter: /\.svelte$/ }, async ({ path }) => {
      const { js } = compileSvelte(await readFile(path, 'utf8'), { filename: path, generate: 'client' });
      return { contents: js.code, loader: 'js', resolveDir: dirname(path) };
    });
  },
};

const APPS = {
  // React in development mode: StrictMode mounts every component twice (effects run, clean up, run).
  react: { entry: 'react/main.jsx', jsx: 'automatic', jsxImportSource: 'react', mode: 'development' },
  vue: { entry: 'vue/main.js' },
  preact: { entry: 'preact/main.jsx', jsx: 'automatic', jsxImportSource: 'preact' },
  lit: { entry: 'lit/main.js' },
  svelte: { entry: 'svelte/main.js' },
};

const PAGE = (name, markup = '') => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>Bakery (${name})</title>
<!-- The loader first: <site-agent> is defined and document.modelContext exists before the app runs. -->
<script type="module" src="/loader.js"></script>
<script type="module" src="/${name}/app.js"></script>
</head>
<body>
<div id="app">${markup}</div>
</body>
</html>
`;

const started = Date.now();
await rm(OUT, { recursive: true, force: true });
for (const [name, app] of Object.entries(APPS)) {
  const dir = join(OUT, name);
  await mkdir(dir, { recursive: true });
  await build({
    entryPoints: [join(HERE, 'apps', app.entry)],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    outfile: join(dir, 'app.js'),
    external: ['/loader.js'],
    jsx: app.jsx,
    jsxImportSource: app.jsxImportSource,
    conditions: ['svelte', 'browser'],
    define: {
      'process.env.NODE_ENV': JSON.stringify(app.mode ?? 'production'),
      __VUE_OPTIONS_API__: 'false',
      __VUE_PROD_DEVTOOLS__: 'false',
      __VUE_PROD_HYDRATION_MISMATCH_DETAILS__: 'false',
    },
    plugins: [vuePlugin(), sveltePlugin],
    logLevel: 'silent',
  });
  await writeFile(join(dir, 'index.html'), PAGE(name));
  if (SSR[name]) await writeFile(join(dir, 'ssr.html'), PAGE(name, await serverRender(name, app)));
}

async function serverRender(name, app) {
  const server = join(OUT, `${name}-server.mjs`);
  await build({
    stdin: { contents: SSR[name], resolveDir: join(HERE, 'apps'), loader: 'jsx' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    packages: 'external', // react-dom/server and vue/server-renderer as Node loads them
    outfile: server,
    jsx: app.jsx,
    jsxImportSource: app.jsxImportSource,
    define: { 'process.env.NODE_ENV': JSON.stringify(app.mode ?? 'production'), __VUE_OPTIONS_API__: 'false',
      __VUE_PROD_DEVTOOLS__: 'false', __VUE_PROD_HYDRATION_MISMATCH_DETAILS__: 'false' },
    plugins: [loaderStub, vuePlugin(true)],
    logLevel: 'silent',
  });
  const { render } = await import(pathToFileURL(server).href);
  const markup = await render();
  await rm(server);
  return markup;
}
console.log(JSON.stringify({ out: OUT, apps: Object.keys(APPS), ms: Date.now() - started }));
