// koffi, loaded on first use: loading it dlopen()s its native addon (a few ms),
// which VERSION and the about text never need. Modules take koffi from here,
// never with a top-level import, which would load it at start-up.
import type Koffi from 'koffi';

/**
 * koffi's API; the first call loads it (require caches it). koffi's entry exports its addon as
 * `default`; in the compiled binary, the build points this require at src/native/embedded-koffi.ts,
 * which puts the addon itself there.
 */
export function loadKoffi(): typeof Koffi {
  return (require('koffi') as { default: typeof Koffi }).default;
}
