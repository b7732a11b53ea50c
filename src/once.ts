// A value made on its first use and kept: for what is costly to build and not needed by every run.

/** A getter of `make`'s value: made on the first call, the same value on every call after. */
export function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}
