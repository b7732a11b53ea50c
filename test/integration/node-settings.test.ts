// Node settings from one place, with the compiled binary: two networks sharing a
// stateDir with different `idleExitMs` in their conflists do not change the
// announcer's idle exit (both are ignored, one WARN per network, one naming both),
// and `<stateDir>/announcer.conf` does. STATUS needs no pod: each call reaches the
// stateDir's announcer, started on demand. The conflists go to the plugin as raw
// text, so that the harness does not move their node options into the file.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ANNOUNCER,
  assertCniOk,
  cniExec,
  daemonsOf,
  logged,
  run,
  RUN_TAG,
  skipIntegration,
  stopDaemonsOf,
  waitDaemonGone,
  writeNodeSettings,
} from './harness';

/** The node's idleExitMs in announcer.conf: between the conflists' 100 and 60000. */
const NODE_IDLE_EXIT_MS = 2500;

/** Each test's dir, and the stateDir in it. */
let dir = '';
let stateDir = '';
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), `ns${RUN_TAG}-`));
  stateDir = join(dir, 'state');
});
afterEach(async () => {
  await stopDaemonsOf(stateDir);
  await rm(dir, { recursive: true, force: true });
});

/** A STATUS of network `name` whose conflist sets `idleExitMs`, its logFile in the test's dir. */
async function statusOf(name: string, idleExitMs: number): Promise<void> {
  const conf = {
    cniVersion: '1.1.0',
    name,
    type: 'announcer',
    stateDir,
    logFile: join(dir, `${name}.log`),
    idleExitMs,
  };
  assertCniOk(`STATUS ${name}`, await cniExec(ANNOUNCER, { command: 'STATUS' }, JSON.stringify(conf)));
}

describe.skipIf(skipIntegration())('node settings', () => {
  const twoNetworksConflistsTitle =
    "two networks' conflists with different idleExitMs change nothing: " +
    "announcer.conf's idleExitMs holds, both WARNed";
  it(twoNetworksConflistsTitle, async () => {
    const nodeLog = join(dir, 'node.log');
    writeNodeSettings(stateDir, { idleExitMs: NODE_IDLE_EXIT_MS, logFile: nodeLog });
    const [a, b] = [`long-${RUN_TAG}`, `short-${RUN_TAG}`];
    await statusOf(a, 60_000);
    await statusOf(b, 100); // the latest: under "latest wins" the announcer would be gone 100 ms later
    await statusOf(b, 100);
    const [daemon, ...more] = await daemonsOf(stateDir);
    expect(more).toEqual([]);
    expect(daemon).toBeDefined();
    const lastCall = Date.now();
    await sleep(1000);
    expect((await daemonsOf(stateDir)).map((p) => p.pid)).toEqual([daemon!.pid]); // not 100 ms
    await waitDaemonGone(stateDir, 15_000); // not 60 s, nor the default 30 s
    expect(Date.now() - lastCall).toBeGreaterThanOrEqual(NODE_IDLE_EXIT_MS - 500);

    const ignored = "node options in this network's conflist are ignored: the node settings apply";
    expect(await logged(nodeLog, 'warn', ignored)).toEqual([]); // said on each network's log
    const differently = 'two networks of this stateDir set node options differently: both are ignored';
    const both = await logged(nodeLog, 'warn', differently, {
      networks: (v) => [a, b].every((n) => String(v).includes(n)),
    });
    expect(both).toHaveLength(1);
    for (const name of [a, b])
      expect(await logged(join(dir, `${name}.log`), 'warn', ignored, { network: name }), name).toHaveLength(1);
  }, 40_000);

  const invalidAnnouncerConfTitle =
    'an invalid announcer.conf: the announcer refuses to start, in one line naming the field; no flag sets a node ' +
    'setting instead';
  it(invalidAnnouncerConfTitle, async () => {
    writeNodeSettings(stateDir, { idleExitMs: 5 });
    const bad = await run(ANNOUNCER, ['daemon', stateDir], { timeoutMs: 20_000 });
    expect({ code: bad.code, stderr: bad.stderr }).toEqual({
      code: 2,
      stderr:
        `announcer daemon: ${stateDir}/announcer.conf: "idleExitMs" must be an integer from 100 to 3600000 ` +
        `(got 5)\n`,
    });
    const flagged = await run(ANNOUNCER, ['daemon', stateDir, '--idle-exit-ms=300'], { timeoutMs: 20_000 });
    expect({ code: flagged.code, stderr: flagged.stderr }).toEqual({
      code: 2,
      stderr: expect.stringMatching(/^announcer daemon: unknown argument "--idle-exit-ms=300"; usage: /),
    });
  }, 60_000);

  it('announcer.conf sets the idle exit of the announcer a call starts; flags are not needed', async () => {
    writeNodeSettings(stateDir, { idleExitMs: 300 });
    await statusOf(`net-${RUN_TAG}`, 60_000);
    await waitDaemonGone(stateDir, 10_000); // 300 ms, not the conflist's minute nor the default 30 s
  }, 20_000);
});
