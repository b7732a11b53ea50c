// What `make bench-cri` gives the harness's modules for `vitest` (aliased in
// vite-node.config.ts): the harness's containerd helpers import
// test/support/skip.ts, whose `expect` only tests call. The bench is no test.

/** Never called by the bench: a call means a test helper ran outside a test. */
export function expect(): never {
  throw new Error('vitest expect() called outside vitest (make bench-cri)');
}
