import { createHash } from 'node:crypto';
import { brotliCompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { extractAddon } from '../../../src/native/embedded-addon';
import { TRAILER_MARKER, trailerEntry } from '../../../src/native/trailer';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const bytes = Buffer.from('\x7fELF pretend addon bytes');
const file = [
  '#!/usr/bin/env node',
  `const marker = ${JSON.stringify(TRAILER_MARKER)}; // the marker also appears in the code`,
  TRAILER_MARKER,
  `main ${sha(Buffer.from('code'))} ${Buffer.from('code').toString('base64')}`,
  `koffi ${sha(bytes)} ${brotliCompressSync(bytes).toString('base64')}`,
  '*/',
  '',
].join('\n');

describe('trailerEntry', () => {
  it('finds an entry in the last trailer, not at an earlier mention of the marker', () => {
    expect(trailerEntry(file, 'main')).toEqual({ sha256: sha(Buffer.from('code')), base64: 'Y29kZQ==' });
  });

  it('names what is missing', () => {
    expect(() => trailerEntry(file, 'netlink')).toThrow('netlink missing from the announcer file');
    expect(() => trailerEntry('console.log(1)', 'main')).toThrow('this announcer file carries no payload (was it built with scripts/build.mjs?)');
  });
});

describe('extractAddon', () => {
  it('returns the decompressed bytes when their sha256 matches', () => {
    expect(extractAddon(file, 'koffi', sha(bytes))).toEqual(bytes);
  });

  it('refuses bytes whose hash is not the one the code expects', () => {
    expect(() => extractAddon(file, 'koffi', sha(Buffer.from('other')))).toThrow(/native addon koffi is corrupt/);
  });

  it('refuses a trailer whose data does not match its own hash', () => {
    const tampered = file.replace(`koffi ${sha(bytes)} `, `koffi ${sha(bytes)} ${brotliCompressSync(Buffer.from('evil')).toString('base64')}X`);
    expect(() => extractAddon(tampered, 'koffi', sha(bytes))).toThrow();
  });
});
