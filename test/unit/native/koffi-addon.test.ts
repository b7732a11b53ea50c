import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadKoffiAddon } from '../../../src/native/koffi-addon';

const require = createRequire(import.meta.url);
/** koffi's real prebuilt addon for this machine, as the build embeds it. */
const KOFFI_NODE = join(
  dirname(require.resolve(`@koromix/koffi-${process.platform}-${process.arch}/package.json`)),
  `${process.platform}_${process.arch}`,
  'koffi.node',
);
const KOFFI_VERSION = (
  JSON.parse(readFileSync(join(dirname(require.resolve('koffi')), 'package.json'), 'utf8')) as { version: string }
).version;

describe('loadKoffiAddon', () => {
  it("reads the embedded file whole, loads it from an anonymous file and hands out koffi's API", () => {
    const koffi = loadKoffiAddon(KOFFI_NODE, KOFFI_VERSION) as unknown as {
      version: string;
      load: unknown;
      sizeof: unknown;
    };
    expect(koffi.version).toBe(KOFFI_VERSION);
    expect(typeof koffi.load).toBe('function');
    expect(typeof koffi.sizeof).toBe('function');
  });

  it('hands the loader the bytes of the file it was given, under the name koffi', () => {
    const bytes = new Uint8Array([0x7f, 0x45, 0x4c, 0x46]);
    const calls: unknown[] = [];
    const addon = loadKoffiAddon(
      '/$bunfs/root/koffi.addon',
      '3.3.4',
      (name, content) => (calls.push([name, content]), { version: '3.3.4' }),
      (file) => (calls.push(file), bytes),
    );
    expect(addon).toEqual({ version: '3.3.4' });
    expect(calls).toEqual(['/$bunfs/root/koffi.addon', ['koffi', bytes]]);
  });

  it('refuses an addon of another version, with the words of koffi’s own entry', () => {
    const load = () => ({ version: '3.3.3' });
    expect(() => loadKoffiAddon('/addon', '3.3.4', load, () => new Uint8Array())).toThrow(
      new Error('Mismatched native Koffi modules'),
    );
  });
});
