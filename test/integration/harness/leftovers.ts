// What a test file left on the host: the netns and links named with its prefix.
import { listLinks } from './links';
import { listNetns } from './netns';
import { waitFor } from './wait';

/** The netns and links whose names start with `prefix`, as `netns NAME` and `link NAME`. */
export async function leftovers(prefix: string): Promise<string[]> {
  const netns = (await listNetns()).filter((n) => n.startsWith(prefix));
  const links = (await listLinks()).map((l) => l.ifname).filter((n) => n.startsWith(prefix));
  return [...netns.map((n) => `netns ${n}`), ...links.map((l) => `link ${l}`)];
}

/**
 * leftovers(prefix) once none are left, or what is still there after a
 * bounded wait: the kernel removes a deleted netns's links a moment later.
 */
export async function leftoversAfterTeardown(prefix: string): Promise<string[]> {
  return waitFor(async () => ((await leftovers(prefix)).length === 0 ? [] : false), {
    what: `no netns or link named ${prefix}*`,
  }).catch(() => leftovers(prefix));
}
