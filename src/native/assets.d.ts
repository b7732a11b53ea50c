// The assets scripts/build.mjs embeds in the binary, as the loader imports them.

/**
 * koffi's native addon for the target, as plain bytes: imported `with { type: 'file' }`, its default export
 * is the path under which the compiled binary serves them (/$bunfs/root/…). The build resolves this
 * specifier to the addon it fetched and checked; nothing else does (vitest takes koffi from node_modules).
 */
declare module 'cni-announcer:koffi-addon' {
  const path: string;
  export default path;
}
