// A build failure that is the user's to fix: printed as its message alone (scripts/build.mjs).

/** A failure the build explains in its message. */
export class BuildError extends Error {}

/** Stops the build with `message`. */
export function fail(message) {
  throw new BuildError(message);
}
