import { mkdtempSync, rmSync, symlinkSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CallerViewError, fileId } from '../../../src/sys/caller-view';
import { CallerViews } from '../../../src/sys/caller-views';

describe('CallerViews', () => {
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
    expect(views.forRecorded(fileId('/proc/self/ns/mnt'))).toBe(views.mine);
  });

  it('names a peer that is gone', () => {
    expect(() => new CallerViews().ofPeer(2 ** 22 + 1)).toThrow(/cannot open the view of the caller \(pid 4194305\)/);
  });

  it('resolves under another root through a held fd, absolute symlinks from that root, and resumes no unknown namespace', () => {
    // A stand-in /proc whose "pid 7" has another root (a temp dir) and our mount namespace's identity.
    const dir = mkdtempSync(join(tmpdir(), 'views-'));
    try {
      const root = join(dir, 'root');
      mkdirSync(join(root, 'run', 'netns'), { recursive: true });
      symlinkSync('/run', join(root, 'varrun'));
      mkdirSync(join(dir, 'proc', '7', 'ns'), { recursive: true });
      mkdirSync(join(dir, 'proc', 'self'), { recursive: true });
      symlinkSync('/', join(dir, 'proc', 'self', 'root'));
      symlinkSync(root, join(dir, 'proc', '7', 'root'));
      symlinkSync(tmpdir(), join(dir, 'proc', '7', 'ns', 'mnt')); // a stand-in mount namespace: another file
      const views = new CallerViews(join(dir, 'proc'));
      const view = views.ofPeer(7);
      expect(view).not.toBe(views.mine);
      expect(view.mntNs).toEqual(fileId(tmpdir()));
      const seen = view.path('/varrun/netns/pod');
      expect(seen).toMatch(/^\/proc\/self\/fd\/\d+\/run\/netns\/pod$/);
      expect(fileId(seen.replace(/\/netns\/pod$/, '/netns'))).toEqual(fileId(join(root, 'run', 'netns')));
      expect(views.ofPeer(7)).toBe(view); // one held fd per view
      expect(views.forRecorded(fileId(tmpdir()))).toBe(view);
      expect(views.forRecorded({ dev: 1, ino: 1 })).toBeUndefined();
      views.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
