// koffi, loaded on first use: loading it dlopen()s its native addon (a few ms),
// which VERSION and the about text never need. Modules take koffi from here,
// never with a top-level import, which would load it at start-up.
import type Koffi from 'koffi';

/**
 * koffi's API; the first call loads it (require caches it). koffi's entry exports its addon as
 * `default`; the compiled binary's bundle puts the addon itself there (scripts/build.mjs).
 */
export function loadKoffi(): typeof Koffi {
  return (require('koffi') as { default: typeof Koffi }).default;
}
