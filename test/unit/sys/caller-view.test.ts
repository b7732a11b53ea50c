import { symlinkSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CallerViewError, CallerViews } from '../../../src/sys/caller-view';
import { fileId } from '../../../src/sys/file-id';
import { useTempDir } from '../../support/temp-dir';

describe('CallerViews', () => {
  let dir: string;
  useTempDir('views-', (d) => (dir = d));

  it('refuses a peer whose pid SO_PEERCRED gave as 0 (its pid namespace not visible), naming why', () => {
    const views = new CallerViews();
    expect(() => views.ofPeer(0)).toThrow(CallerViewError);
    expect(() => views.ofPeer(0)).toThrow(/pid is not visible .*SO_PEERCRED gave 0.*hostPID/);
  });

  it("gives its own view (paths as they are) to a peer in the announcer's mount namespace and root", () => {
    const views = new CallerViews();
    const view = views.ofPeer(process.pid);
    expect(view).toBe(views.mine);
    expect(view.path('/var/run/netns/x')).toBe('/var/run/netns/x');
    expect(views.forRecorded(undefined)).toBe(views.mine);
    expect(views.forRecorded(views.mine.caller)).toBe(views.mine);
    expect(views.mine.hostNetns).toBeUndefined();
  });

  it('names a peer that is gone', () => {
    expect(() => new CallerViews().ofPeer(2 ** 22 + 1)).toThrow(/cannot open the view of the caller \(pid 4194305\)/);
  });

  it('resolves under another root through a held fd, absolute symlinks from that root; resumes no unknown view', () => {
    // A stand-in /proc: "pid 7" has another root (a temp dir) and another mount namespace (a stand-in file), "pid 8"
    // our root and mount namespace but another netns (a stand-in file too).
    const root = join(dir, 'root');
    const proc = join(dir, 'proc');
    mkdirSync(join(root, 'run', 'netns'), { recursive: true });
    symlinkSync('/run', join(root, 'varrun'));
    for (const pid of ['self', '7', '8', '1']) mkdirSync(join(proc, pid, 'ns'), { recursive: true });
    const link = (target: string, ...at: string[]) => symlinkSync(target, join(proc, ...at));
    link('/', 'self', 'root');
    link('/proc/self/ns/mnt', 'self', 'ns', 'mnt');
    link('/proc/self/ns/net', 'self', 'ns', 'net');
    link(root, '7', 'root');
    link(dir, '7', 'ns', 'mnt');
    link('/proc/self/ns/net', '7', 'ns', 'net');
    link('/', '8', 'root');
    link('/proc/self/ns/mnt', '8', 'ns', 'mnt');
    link(root, '8', 'ns', 'net');
    const views = new CallerViews(proc);
    const seven = views.ofPeer(7);
    expect(seven.caller.mnt).toEqual(fileId(dir));
    expect(seven.hostNetns).toBeUndefined();
    const seen = seven.path('/varrun/netns/pod');
    expect(seen).toMatch(/^\/proc\/self\/fd\/\d+\/run\/netns\/pod$/);
    expect(fileId(seen.replace(/\/pod$/, ''))).toEqual(fileId(join(root, 'run', 'netns')));
    expect(views.ofPeer(7)).toBe(seven); // one held view per caller's namespaces and root
    const eight = views.ofPeer(8);
    expect(eight.path('/var/run')).toBe('/var/run');
    expect(fileId(eight.hostNetns!)).toEqual(fileId(root));
    expect(views.forRecorded(seven.caller)).toBe(seven);
    expect(views.forRecorded(eight.caller)).toBe(eight);
    expect(views.forRecorded({ mnt: seven.caller.mnt, net: eight.caller.net })).toBeUndefined();
    views.close();
    // A later announcer, holding nothing, finds a process in the recorded namespaces under /proc.
    const later = new CallerViews(proc);
    const found = later.forRecorded(seven.caller);
    expect(found?.caller).toEqual(seven.caller);
    expect(fileId(found!.path('/varrun/netns'))).toEqual(fileId(join(root, 'run', 'netns')));
    later.close();
  });
});
