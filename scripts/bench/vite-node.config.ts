// vite-node's config for `make bench-cri`: `vitest` resolves to a stand-in,
// since the integration harness it reuses imports it at load time.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  resolve: { alias: { vitest: fileURLToPath(new URL('./vitest-stand-in.ts', import.meta.url)) } },
});
