// The build this executable is: scripts/build.mjs defines it; 'dev' when run from source.
declare const __ANNOUNCER_BUILD_ID__: string | undefined;

/** The executable's build id. */
export const BUILD_ID: string = typeof __ANNOUNCER_BUILD_ID__ === 'string' ? __ANNOUNCER_BUILD_ID__ : 'dev';
