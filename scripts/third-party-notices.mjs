// Writes THIRD_PARTY_NOTICES for the built executable: the licence texts of
// every npm package that can end up in it, and a note on the Bun runtime that
// `bun build --compile` embeds.
//
//   node scripts/third-party-notices.mjs [OUTFILE]     (default bin/THIRD_PARTY_NOTICES)
//
// The packages are the production dependency closure in package-lock.json
// (dependencies and the installed optionalDependencies, transitively; type-only
// @types/* packages left out): the bundler can only take code from those. For
// each one, its licence files (LICENSE*, LICENCE*, COPYING*, NOTICE*) and those
// of the code it vendors (vendor/*/), verbatim. A package without any licence
// file fails the build unless its package.json names a licence, which is then
// stated. The output depends only on the lock file and node_modules, so
// rebuilding does not change it.
import { existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = resolve(process.argv[2] ?? join(root, 'bin', 'THIRD_PARTY_NOTICES'));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
const LICENCE_FILE = /^(licen[cs]e|copying|notice)([.-].*)?$/i;

/** The lock entry key that `name` resolves to from the package at key `from` (node's lookup, walking up). */
function resolveKey(name, from) {
  for (let dir = from; ; ) {
    const key = dir === '' ? `node_modules/${name}` : `${dir}/node_modules/${name}`;
    if (lock.packages[key]) return key;
    if (dir === '') return undefined;
    const at = dir.lastIndexOf('/node_modules/');
    dir = at < 0 ? '' : dir.slice(0, at);
  }
}

/** Lock keys of the production closure that are installed here, sorted by package name. */
function productionClosure() {
  const seen = new Set();
  const queue = [['', Object.keys(manifest.dependencies ?? {}), true]];
  while (queue.length > 0) {
    const [from, names, required] = queue.shift();
    for (const name of names) {
      if (name.startsWith('@types/')) continue;
      const key = resolveKey(name, from);
      if (key === undefined || !existsSync(join(root, key, 'package.json'))) {
        if (required) throw new Error(`${name} (needed by ${from || 'package.json'}) is not installed: run npm ci`);
        continue; // an optional dependency for another platform
      }
      if (seen.has(key)) continue;
      seen.add(key);
      const entry = lock.packages[key];
      queue.push([key, Object.keys(entry.dependencies ?? {}), true]);
      queue.push([key, Object.keys(entry.optionalDependencies ?? {}), false]);
    }
  }
  return [...seen].sort((a, b) => packageName(a).localeCompare(packageName(b)));
}

function packageName(key) {
  return key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
}

function licenceFiles(dir) {
  return readdirSync(dir)
    .filter((f) => LICENCE_FILE.test(f) && statSync(join(dir, f)).isFile())
    .sort();
}

function sourceUrl(pkg) {
  const repo = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
  return (repo ?? pkg.homepage ?? '').replace(/^git\+/, '').replace(/\.git$/, '');
}

const rule = '='.repeat(78);
const sections = [];
const summary = [];

const bunVersion = manifest.devDependencies?.bun;
if (bunVersion !== undefined) {
  summary.push(`  Bun ${bunVersion} (MIT), the JavaScript runtime embedded by \`bun build --compile\``);
  sections.push(
    [
      rule,
      `Bun ${bunVersion}`,
      'License: MIT',
      `Source: https://github.com/oven-sh/bun/tree/bun-v${bunVersion}`,
      rule,
      'The executable is a copy of the Bun runtime with the plugin attached to it.',
      'Bun itself is under the MIT license. It statically links JavaScriptCore and',
      'WebKit (LGPL-2) and a number of other libraries, each under its own licence;',
      'the npm package ships no licence file. Bun lists those libraries, their',
      'licences, and how to relink Bun with a modified JavaScriptCore in',
      `https://github.com/oven-sh/bun/blob/bun-v${bunVersion}/LICENSE.md`,
      '',
    ].join('\n'),
  );
}

for (const key of productionClosure()) {
  const dir = join(root, key);
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const files = licenceFiles(dir).map((f) => ({ label: f, path: join(dir, f) }));
  const vendor = join(dir, 'vendor');
  if (existsSync(vendor)) {
    for (const sub of readdirSync(vendor).sort()) {
      if (!statSync(join(vendor, sub)).isDirectory()) continue;
      for (const f of licenceFiles(join(vendor, sub)))
        files.push({ label: `vendor/${sub}/${f}`, path: join(vendor, sub, f) });
    }
  }
  if (files.length === 0 && !pkg.license)
    throw new Error(`${pkg.name}: no licence file and no "license" in its package.json`);
  summary.push(`  ${pkg.name} ${pkg.version} (${pkg.license ?? 'see below'})`);
  const head = [rule, `${pkg.name} ${pkg.version}`, `License: ${pkg.license ?? 'see below'}`];
  const url = sourceUrl(pkg);
  if (url) head.push(`Source: ${url}`);
  head.push(rule);
  if (files.length === 0)
    head.push(`The package ships no licence file; its package.json declares the ${pkg.license} license.`, '');
  for (const f of files) head.push(`--- ${f.label} ---`, readFileSync(f.path, 'utf8').trimEnd(), '');
  sections.push(head.join('\n'));
}

const text = [
  `Third-party notices for ${manifest.name} ${manifest.version}`,
  '',
  `The ${manifest.name} executable holds ${manifest.name}'s own code (${manifest.license}, see LICENSE)`,
  'and the following third-party software:',
  ...summary,
  '',
  ...sections,
].join('\n');

mkdirSync(dirname(outfile), { recursive: true });
// Beside the target, then renamed: a reader never sees half a file.
const tmp = `${outfile}.${process.pid}.tmp`;
writeFileSync(tmp, text.endsWith('\n') ? text : `${text}\n`, { mode: 0o644 });
renameSync(tmp, outfile);
console.log(`wrote ${outfile} (${summary.length} components)`);
