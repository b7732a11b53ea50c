// What `require('koffi')` in src/sys/libc.ts (loadKoffi) becomes in the compiled binary (scripts/build.mjs resolves
// it here): koffi's API taken from its addon, which the binary carries as an asset. None of koffi's JS
// entry is bundled: its search of node_modules paths, its deprecation shims and the `node:*` modules it
// loads. Under vitest, loadKoffi takes koffi from node_modules instead.
import addonFile from 'cni-announcer:koffi-addon' with { type: 'file' };
import { loadKoffiAddon } from './load-addon';

// koffi's version, written in by the build (the bundler's `define`): the addon must be that one.
declare const __KOFFI_VERSION__: string;

/** koffi's API, as koffi's entry exports it (its default export), loaded when this module is. */
const addon = loadKoffiAddon(addonFile, __KOFFI_VERSION__);
export default addon;
