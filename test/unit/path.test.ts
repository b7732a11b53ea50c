import * as nodePath from 'node:path';
import { describe, expect, it } from 'vitest';
import { basename, dirname, join } from '../../src/path';

const SAMPLES = [
  '',
  '/',
  '//',
  'a',
  '/a',
  'a/',
  '/a/b',
  '/a/b/',
  'a/b/c',
  '/a//b',
  './a',
  '../a',
  '/../a',
  'a/../../b',
  '/run/cni-announcer/c0ffee@eth0.json',
  '/$bunfs/root/announcer',
];

describe('path', () => {
  it('joins as node:path does', () => {
    for (const a of SAMPLES) for (const b of SAMPLES) expect(join(a, b), `join(${a}, ${b})`).toBe(nodePath.join(a, b));
    expect(join('/run', 'x', '..', 'y')).toBe('/run/y');
    expect(join()).toBe('.');
  });

  it('takes dirname and basename as node:path does', () => {
    for (const p of SAMPLES.filter((s) => s !== '')) {
      expect(dirname(p), `dirname(${p})`).toBe(nodePath.dirname(p));
      expect(basename(p), `basename(${p})`).toBe(nodePath.basename(p));
    }
  });
});
