// Build the AMD nbextension (src/nbextension.ts) for the classic notebook and VS Code:
//   node nbextension.mjs        (jlpm build:nbextension)
// writes ../acp_notebook/nbextension/index.js, one minified AMD module whose only dependency is
// @jupyter-widgets/base, next to extension.js (the nbclassic entry that maps the module name).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';

const out = '../acp_notebook/nbextension';
mkdirSync(out, { recursive: true });

// esbuild writes CommonJS; the banner and footer wrap it in an AMD define whose `require`
// hands out the one external module.
const banner = [
  'define(["@jupyter-widgets/base"], function (jupyterWidgetsBase) {',
  'var module = { exports: {} }, exports = module.exports;',
  'function require(name) {',
  '  if (name === "@jupyter-widgets/base") { return jupyterWidgetsBase; }',
  '  throw new Error("acp-notebook: no module " + name);',
  '}'
].join('\n');

await build({
  entryPoints: ['src/nbextension.ts'],
  outfile: `${out}/index.js`,
  bundle: true,
  format: 'cjs',
  platform: 'browser',
  target: 'es2020',
  minify: true,
  legalComments: 'none',
  external: ['@jupyter-widgets/base'],
  loader: { '.css': 'text' },
  banner: { js: banner },
  footer: { js: 'return module.exports;\n});' },
  logLevel: 'warning'
});
copyFileSync('nbextension/extension.js', `${out}/extension.js`);
