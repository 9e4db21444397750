// Bundles the extension into CommonJS: `dist/extension.js`, and the language client library in
// `dist/languageclient.js`, which the extension loads when it starts the server (decision 0245).
// `vscode` is provided by the editor at run time.
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const options = {
  entryPoints: ['src/extension.ts', 'src/languageclient.ts'],
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  outdir: 'dist',
  external: ['vscode', './languageclient'],
  sourcemap: !production,
  minify: production,
  logLevel: 'info',
};

if (watch) {
  const context = await esbuild.context(options);
  await context.watch();
} else {
  await esbuild.build(options);
}
