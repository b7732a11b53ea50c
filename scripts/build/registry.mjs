// The registry packages a build embeds that are not installed (the Bun runtime
// to embed, koffi's addon for another architecture): fetched with `npm pack`
// into the build's cache and checked against their sha512 before every use.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fail } from './build-error.mjs';

/**
 * sha512 of the registry packages that package-lock.json does not list (it
 * holds the others). A new pinned Bun needs its line: `npm pack NAME@VERSION --json` prints it.
 */
const PINNED_INTEGRITY = {
  '@oven/bun-linux-x64-baseline@1.4.5':
    'sha512-s8yMwYcFnnrA178gji0gZbkE2WVDej/Ti1x770oPfihxyRxSMNhGhiAQNXV53aDeraZxksdvKV/RAdQBCd0qPA==',
};

/** The sha512 that package-lock.json records for `name@version`, else the pinned one. */
function expectedIntegrity(root, name, version) {
  const locked = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')).packages?.[`node_modules/${name}`];
  if (locked?.version === version && locked.integrity) return locked.integrity;
  return (
    PINNED_INTEGRITY[`${name}@${version}`] ??
    fail(`no pinned sha512 for ${name}@${version}: add it to PINNED_INTEGRITY in scripts/build/registry.mjs`)
  );
}

/**
 * The file `inner` of registry package `name@version`, fetched once with
 * `npm pack` into `cacheDir`; the tarball is checked against its sha512 before
 * every extraction.
 */
export function registryFile({ root, cacheDir }, name, version, inner) {
  const integrity = expectedIntegrity(root, name, version);
  const stem = `${name.replace(/^@/, '').replace('/', '-')}-${version}`;
  const tgz = join(cacheDir, `${stem}.tgz`);
  const sri = () => `sha512-${createHash('sha512').update(readFileSync(tgz)).digest('base64')}`;
  const dir = join(cacheDir, stem);
  const out = join(dir, inner);
  const stamp = join(dir, '.sha512');
  if (existsSync(out) && existsSync(stamp) && readFileSync(stamp, 'utf8') === integrity) return out;
  if (!existsSync(tgz) || sri() !== integrity) {
    console.log(`build: npm pack ${name}@${version}`);
    execFileSync('npm', ['pack', `${name}@${version}`, '--pack-destination', cacheDir, '--silent'], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (sri() !== integrity) fail(`${name}@${version}: the registry's tarball does not match sha512 ${integrity}`);
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('tar', ['-xzf', tgz, '-C', dir, '--strip-components=1', `package/${inner}`]);
  writeFileSync(stamp, integrity);
  return out;
}
