import { describe, expect, it } from 'vitest';
import { MAX_HOPS, resolveUnderRoot, TooManyLinksError, type RootLookup } from '../../src/root-path';

/** A caller's root as a map of symlinks (relative path → target); anything else is a plain entry. */
function tree(links: Record<string, string>): RootLookup & { looked: string[] } {
  const looked: string[] = [];
  return {
    looked,
    kind: (rel) => (looked.push(rel), rel in links ? 'symlink' : 'other'),
    readlink: (rel) => links[rel]!,
  };
}

describe('resolveUnderRoot', () => {
  it('leaves a path without symlinks as it is, relative to the root', () => {
    expect(resolveUnderRoot('/var/run/netns/pod', tree({}))).toBe('var/run/netns/pod');
    expect(resolveUnderRoot('//var/./run//netns/', tree({}))).toBe('var/run/netns');
    expect(resolveUnderRoot('/', tree({}))).toBe('');
  });

  it("follows an absolute symlink from the caller's root, not the resolver's", () => {
    expect(resolveUnderRoot('/var/run/netns/pod', tree({ 'var/run': '/run' }))).toBe('run/netns/pod');
    expect(resolveUnderRoot('/a/b', tree({ a: '/x/y', 'x/y': 'z' }))).toBe('x/z/b');
  });

  it('follows a relative symlink from its own directory', () => {
    expect(resolveUnderRoot('/srv/ns/pod', tree({ 'srv/ns': '../run/netns' }))).toBe('run/netns/pod');
  });

  it('never climbs above the root with ..', () => {
    expect(resolveUnderRoot('/../../etc/passwd', tree({}))).toBe('etc/passwd');
    expect(resolveUnderRoot('/a/x', tree({ a: '../../../../b' }))).toBe('b/x');
    expect(resolveUnderRoot('/a/../..', tree({ a: '/p/q' }))).toBe('');
  });

  it("leaves a namespace's magic link for the kernel to follow", () => {
    const links = { 'proc/42/ns/net': 'net:[4026532300]', proc: '/run/elsewhere' };
    expect(resolveUnderRoot('/proc/42/ns/net', tree({ 'proc/42/ns/net': 'net:[4026532300]' }))).toBe('proc/42/ns/net');
    expect(resolveUnderRoot('/proc/42/ns/net', tree(links))).toBe('run/elsewhere/42/ns/net');
  });

  it('does not follow a last symlink when told not to (a log file: O_NOFOLLOW refuses it then)', () => {
    const links = { 'var/log': '/logs', 'logs/cni.log': '/etc/shadow' };
    expect(resolveUnderRoot('/var/log/cni.log', tree(links), { followLast: false })).toBe('logs/cni.log');
    expect(resolveUnderRoot('/var/log/cni.log', tree(links))).toBe('etc/shadow');
  });

  it('gives up after MAX_HOPS symlinks, with ELOOP', () => {
    const loop = tree({ a: '/b', b: '/a' });
    expect(() => resolveUnderRoot('/a/x', loop)).toThrow(TooManyLinksError);
    expect(loop.looked.length).toBeLessThanOrEqual(MAX_HOPS + 2);
    const chain = Object.fromEntries(Array.from({ length: MAX_HOPS }, (_, i) => [`l${i}`, `/l${i + 1}`]));
    expect(resolveUnderRoot('/l0', tree(chain))).toBe(`l${MAX_HOPS}`);
    expect(() => resolveUnderRoot('/l0', tree({ ...chain, [`l${MAX_HOPS}`]: '/end' }))).toThrow(/too many levels/);
  });
});
