// The compiled binary's shim (src/shim) against a fake announcer on a real unix socket: what it
// sends, that it prints the announcer's answer, and that it runs the command in-process when the
// announcer refuses, hangs or is skipped. The build leaves the Node twin of the transport out of
// the binary (scripts/build.mjs), so an answer relayed here went through Bun.connect.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACK_MS, encodeReply, MAX_FORWARDED_STDIN, WIRE_VERSION } from '../../src/shim/wire';
import { BUILTINS_ALLOWED } from '../../scripts/build/plugin';
import { fakeAnnouncer, type FakeAnnouncer, type Taken } from '../unit/shim/fakes';
import { ANNOUNCER, cniExec, scopePerTest, skipIntegration } from './harness';

/** CLOCK_BOOTTIME in ms, as /proc/uptime gives it. */
function bootMs(): number {
  return Number(readFileSync('/proc/uptime', 'latin1').split(' ')[0]) * 1000;
}

describe.skipIf(skipIntegration())('the shim in the binary', () => {
  const scope = scopePerTest();

  /** A fake announcer in a fresh private stateDir, stopped with the test's scope. */
  async function announcer(answer: (t: Taken) => void): Promise<FakeAnnouncer> {
    const dir = mkdtempSync(join(tmpdir(), 'shim-int-'));
    scope().defer(() => rmSync(dir, { recursive: true, force: true }), 'state dir');
    const fake = await fakeAnnouncer(answer, { dir });
    scope().defer(() => fake.stop(), 'fake announcer');
    return fake;
  }

  const config = (stateDir: string) => ({ cniVersion: '1.0.0', name: 'shim', type: 'announcer', stateDir });
  const call = {
    command: 'ADD',
    containerId: 'c1',
    netns: '/run/netns/none',
    ifname: 'eth0',
    env: { LD_LIBRARY_PATH: '/x:' },
  };

  it("forwards ADD (CNI variables, stdin as it came, build, ackBy on CLOCK_BOOTTIME) and prints the announcer's answer", async () => {
    const fake = await announcer((t) =>
      t.socket.end(
        encodeReply({ ack: true }) + encodeReply({ beat: true }) + encodeReply({ exit: 3, stdout: 'ANSWER' }),
      ),
    );
    const before = bootMs();
    const res = await cniExec(ANNOUNCER, call, config(fake.dir));
    const after = bootMs();
    expect([res.code, res.stdout, res.stderr]).toEqual([3, 'ANSWER', '']);
    expect(fake.taken).toHaveLength(1);
    const request = fake.taken[0]!.request as {
      v: number;
      build: string;
      ackBy: number;
      cni: { env: Record<string, string>; stdin: string };
    };
    expect(request.v).toBe(WIRE_VERSION);
    expect(request.build).toMatch(/\S/);
    expect(Object.keys(request.cni.env).sort()).toEqual([
      'CNI_COMMAND',
      'CNI_CONTAINERID',
      'CNI_IFNAME',
      'CNI_NETNS',
      'CNI_PATH',
    ]);
    expect(JSON.parse(request.cni.stdin)).toMatchObject(config(fake.dir));
    // The clocks agree: ackBy lies ACK_MS after some moment of the run (/proc/uptime has 10 ms steps).
    expect(request.ackBy - ACK_MS).toBeGreaterThanOrEqual(before - 10);
    expect(request.ackBy - ACK_MS).toBeLessThanOrEqual(after + 10);
  });

  it('holds Bun.connect and not the Node twin', async () => {
    const bin = (await readFile(ANNOUNCER)).toString('latin1');
    expect(bin).toContain('Bun.connect needs the Bun runtime');
    // The build refuses node:net from any module (scripts/build/plugin.ts): the Node twin is not in the binary.
    expect(Object.values(BUILTINS_ALLOWED).flat()).not.toContain('net');
  });

  it('runs the command in-process when the announcer refuses it (a CNI error from the local validation)', async () => {
    const fake = await announcer((t) => t.socket.end(encodeReply({ refused: 'version' })));
    const res = await cniExec(ANNOUNCER, call, config(fake.dir));
    expect(fake.taken).toHaveLength(1);
    expect(res.code).toBe(1);
    expect(res.json).toMatchObject({ cniVersion: '1.0.0', code: 7 });
  });

  it('runs the command in-process when the announcer never acks, after closing its connection', async () => {
    const fake = await announcer(() => undefined);
    const res = await cniExec(ANNOUNCER, call, config(fake.dir));
    expect(res.json).toMatchObject({ code: 7 });
    expect(fake.taken).toHaveLength(1);
    expect(fake.taken[0]!.closed).toBe(true);
  });

  it('does not forward a stdin over MAX_FORWARDED_STDIN, and runs it in-process on the whole of it', async () => {
    const fake = await announcer((t) =>
      t.socket.end(encodeReply({ ack: true }) + encodeReply({ exit: 0, stdout: 'ANSWER' })),
    );
    // The bad field comes last, past what the shim read: the in-process run must see every byte.
    const big = JSON.stringify({ pad: 'x'.repeat(MAX_FORWARDED_STDIN), ...config(fake.dir), count: 99 });
    const res = await cniExec(ANNOUNCER, call, big);
    expect(fake.taken).toHaveLength(0);
    expect(res.json).toMatchObject({ code: 7, msg: expect.stringContaining('count') });
  });

  it('answers VERSION itself', async () => {
    const fake = await announcer((t) =>
      t.socket.end(encodeReply({ ack: true }) + encodeReply({ exit: 0, stdout: 'ANSWER' })),
    );
    const res = await cniExec(ANNOUNCER, { command: 'VERSION' }, config(fake.dir));
    expect(res.json).toMatchObject({ supportedVersions: expect.any(Array) });
    expect(fake.taken).toHaveLength(0);
  });
});
