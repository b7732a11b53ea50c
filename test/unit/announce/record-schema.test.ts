import { describe, expect, it } from 'vitest';
import { checkRecord } from '../../../src/announce/record-schema';
import { OPTIONS } from '../../../src/cni/option-schema';
import { check } from '../../../src/cni/zod-checks';

const IDS = {
  network: 'podnet',
  containerId: 'c0ffee',
  ifname: 'eth0',
  netns: '/var/run/netns/pod',
  netnsId: { dev: 4, ino: 4026532300 },
  caller: { mnt: { dev: 4, ino: 4026531841 }, net: { dev: 4, ino: 4026531840 } },
};
const JOB = {
  ...IDS,
  interfaces: [],
  hostPeerNames: [],
  arpOps: ['request'],
  schedule: [0],
  readyDeadline: 5000,
  logLevel: 'info',
};

/** Whether a record whose job has `fields` is valid. */
const jobValid = (fields: object): boolean => checkRecord({ ...IDS, originalMacs: [], job: { ...JOB, ...fields } }).ok;

describe('checkRecord', () => {
  it("takes a job's probe settings and log level exactly when the config's options take them", () => {
    for (let probeMs = 0; probeMs <= 5000; probeMs += 5) {
      expect(jobValid({ conflictCheck: { action: 'warn', probeMs, probes: 2 } })).toBe(
        check(OPTIONS.probeMs.schema, probeMs).ok,
      );
    }
    for (const probes of [0, 1, 2, 3, 4, 5, 10, 1.5]) {
      expect(jobValid({ conflictCheck: { action: 'warn', probeMs: 100, probes } })).toBe(
        check(OPTIONS.probes.schema, probes).ok,
      );
    }
    for (const logLevel of ['error', 'warn', 'info', 'debug', 'trace', 'INFO']) {
      expect(jobValid({ logLevel })).toBe(check(OPTIONS.logLevel.schema, logLevel).ok);
    }
  });
});

describe('checkRecord problems', () => {
  const MAC = '0a:58:0a:58:00:05';
  const RECORD = { ...IDS, originalMacs: [{ name: 'eth0', mac: MAC }], job: JOB };
  /** `count` original MACs `mac` of eth0 (one: `mac` of interface `name`). */
  const originals = (mac: string, count = 1, name = 'eth0') => ({
    originalMacs: Array.from({ length: count }, () => ({ name, mac })),
  });
  const problem = (record: unknown): string | undefined => {
    const checked = checkRecord(record);
    return checked.ok ? undefined : checked.problem;
  };

  it('takes a full record as it is', () => {
    expect(checkRecord(RECORD)).toEqual({ ok: true, record: RECORD });
  });

  it.each([
    ['an empty container ID', { containerId: '' }, '"containerId" must not be empty'],
    ['an ifname that is no interface name', { ifname: 'eth0/x' }, '"ifname" must be an interface name'],
    ['a relative netns', { netns: 'run/netns/pod' }, '"netns" must be an absolute path'],
    ['a netns with a NUL', { netns: '/run/netns/pod\0x' }, '"netns" must be an absolute path'],
    ['a netns that is no string', { netns: 7 }, '"netns" must be a string'],
    ['no netnsId', { netnsId: undefined }, '"netnsId" must be an object'],
    ["no caller's namespaces (a pre-release build's record)", { caller: undefined }, '"caller" must be an object'],
    ['no containerId', { containerId: undefined }, '"containerId" must be a string'],
    ['a MAC that is none', originals('x'), '"originalMacs.0.mac" must be a MAC address'],
    ['a negative device', { netnsId: { dev: -1, ino: 1 } }, '"netnsId.dev" must be an integer ≥ 0'],
    ['an inode that is no number', { netnsId: { dev: 1, ino: '1' } }, '"netnsId.ino" must be an integer ≥ 0'],
    ['a MAC with a prefix', originals('x0a:58:0a:58:00:05'), '"originalMacs.0.mac" must be a MAC address'],
    ['a MAC with a suffix', originals('0a:58:0a:58:00:05:'), '"originalMacs.0.mac" must be a MAC address'],
    ['an original MAC of no interface', originals(MAC, 1, ''), '"originalMacs.0.name" must be an interface name'],
    ['more than 64 original MACs', originals(MAC, 65), '"originalMacs" must have at most 64 entries'],
  ])('refuses %s', (_what, fields, text) => {
    expect(problem({ ...RECORD, ...fields })).toBe(text);
  });

  it('names the first bad field, in the order of the record', () => {
    expect(problem({ ...RECORD, containerId: '', netns: 'rel', job: { ...JOB, logLevel: 'trace' } })).toBe(
      '"containerId" must not be empty',
    );
  });

  it('takes exactly 64 original MACs', () => {
    expect(problem({ ...RECORD, ...originals('0A:58:0A:58:00:05', 64) })).toBeUndefined();
  });

  it(
    'ignores fields a job does not have (idleExitMs, metricsFile, ' + 'rateLimit: node settings), whatever their value',
    () => {
      const legacy = { idleExitMs: -1, metricsFile: 'm.prom', rateLimit: { framesPerSecond: 10, burst: 'x' } };
      expect(checkRecord({ ...RECORD, job: { ...JOB, ...legacy } }).ok).toBe(true);
    },
  );

  it.each([
    [
      'an interface of its job whose IPv4 list is no list',
      { interfaces: [{ name: 'eth0', ipv4: '10.88.0.5', ipv6: [] }] },
      '"job.interfaces.0.ipv4" must be an array',
    ],
    ['an empty container ID in its job', { containerId: '' }, '"job.containerId" must not be empty'],
    ['a job without a netns identity', { netnsId: undefined }, '"job.netnsId" must be an object'],
    ['a job with an unknown ARP op', { arpOps: ['both'] }, '"job.arpOps.0" must be one of request, reply'],
    ['a job with a negative round offset', { schedule: [0, -1000] }, '"job.schedule.1" must be a finite number ≥ 0'],
    ['a job with a relative log file', { logFile: 'log' }, '"job.logFile" must be an absolute path'],
    [
      'a job with an unknown conflict action',
      { conflictCheck: { action: 'off', probeMs: 100, probes: 2 } },
      '"job.conflictCheck.action" must be one of warn, fail',
    ],
  ])('refuses %s', (_what, fields, text) => {
    expect(problem({ ...RECORD, job: { ...JOB, ...fields } })).toBe(text);
  });

  it('names the record itself when it is no object', () => {
    expect(problem('x')).toMatch(/^the record /);
  });
});
