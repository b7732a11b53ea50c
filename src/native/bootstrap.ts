// The entry of the built plugin file. The plugin's code sits base64-encoded in
// the file's trailer; this compiles it with a V8 code cache kept in the
// private cache directory, which saves ~25 ms per start (the plugin is started
// once per pod). The cache is keyed by the code's sha256, the Node version and
// the CPU architecture: V8 itself only checks the source length.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';
import { privateCacheDir, writeAtomically } from './cache-dir';
import { trailerEntry } from './trailer';

const self = __filename;
const main = trailerEntry(readFileSync(self, 'latin1'), 'main');
const code = Buffer.from(main.base64, 'base64').toString('utf8');
let cacheFile: string | undefined;
let cachedData: Buffer | undefined;
try {
  cacheFile = join(privateCacheDir(), `main-${main.sha256.slice(0, 16)}-${process.version}-${process.arch}.v8cache`);
  cachedData = readFileSync(cacheFile);
} catch {
  // no cache yet, or no cache directory: compile from source
}
const script = new Script(`(function (exports, require, module, __filename, __dirname) {${code}\n})`, {
  filename: self,
  ...(cachedData ? { cachedData } : {}),
});
// Make the cache from an ADD, after it ran: it then holds the functions ADD compiled lazily.
if (cacheFile && (!cachedData || script.cachedDataRejected) && process.env.CNI_COMMAND === 'ADD') {
  const file = cacheFile;
  process.once('exit', () => {
    try {
      writeAtomically(file, script.createCachedData(), 0o600);
    } catch {
      // a missing cache only costs time
    }
  });
}
const run = script.runInThisContext() as (e: unknown, r: NodeJS.Require, m: unknown, f: string, d: string) => void;
const mod = { exports: {} };
run(mod.exports, require, mod, self, dirname(self));
