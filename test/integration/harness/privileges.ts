// Whether this process may run the integration tests: they create namespaces,
// bridges and veths, and capture packets, so they need root with CAP_NET_ADMIN.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { skipUnless } from '../../support/skip';
import { childEnv } from './exec';

/** The verdict of canRunIntegration(). */
export type Privileges = { ok: true } | { ok: false; why: string };

const CAP_NET_ADMIN = 12n;

/** Whether a /proc/PID/status text grants CAP_NET_ADMIN in CapEff. */
export function hasNetAdmin(status: string): boolean {
  const hex = /^CapEff:\s*([0-9a-f]+)$/im.exec(status)?.[1];
  return hex !== undefined && ((BigInt(`0x${hex}`) >> CAP_NET_ADMIN) & 1n) === 1n;
}

function check(): Privileges {
  if (process.platform !== 'linux') return { ok: false, why: `not Linux (${process.platform})` };
  if (process.getuid?.() !== 0) return { ok: false, why: 'not root' };
  if (!hasNetAdmin(readFileSync('/proc/self/status', 'utf8'))) return { ok: false, why: 'no CAP_NET_ADMIN in CapEff' };
  const probe = `hprobe${randomBytes(3).toString('hex')}`;
  const opts = { env: childEnv(), encoding: 'utf8' as const, timeout: 10_000 };
  const add = spawnSync('ip', ['netns', 'add', probe], opts);
  if (add.error || add.status !== 0) {
    return { ok: false, why: `\`ip netns add\` fails: ${add.error?.message ?? add.stderr.trim()}` };
  }
  spawnSync('ip', ['netns', 'del', probe], opts);
  return { ok: true };
}

let verdict: Privileges | undefined;

/** Whether this process is root with CAP_NET_ADMIN and `ip netns add` works (checked once). */
export function canRunIntegration(): Privileges {
  verdict ??= check();
  return verdict;
}

/**
 * For `describe.skipIf(skipIntegration())`: true when the integration tests
 * cannot run here, after printing why (once per file). Under CI (CI=true)
 * it never skips, so missing privileges fail loudly instead of passing quietly.
 */
export function skipIntegration(): boolean {
  const v = canRunIntegration();
  return skipUnless('root with CAP_NET_ADMIN and a working `ip netns add`', v.ok ? undefined : v.why);
}
