// Which build this binary is. Every request between a CNI call and the node's
// announcer carries it, so two builds notice each other (an upgrade replaced the
// binary while the old announcer runs).
declare const __ANNOUNCER_BUILD_ID__: string | undefined;

/**
 * The build's id, written in by scripts/build.mjs (the bundler's `define`): the same sources give the same
 * id; 'dev' where nothing wrote one in (vitest, a run from source).
 */
export const BUILD_ID: string = typeof __ANNOUNCER_BUILD_ID__ === 'string' ? __ANNOUNCER_BUILD_ID__ : 'dev';
