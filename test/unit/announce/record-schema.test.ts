import { describe, expect, it } from 'vitest';
import { checkRecord } from '../../../src/announce/record-schema';
import { checkOption } from '../../../src/cni/option-schema';

const IDS = { network: 'podnet', containerId: 'c0ffee', ifname: 'eth0', netns: '/var/run/netns/pod', netnsId: { dev: 4, ino: 4026532300 } };
const JOB = { ...IDS, interfaces: [], hostPeerNames: [], arpOps: ['request'], schedule: [0], readyDeadline: 5000, logLevel: 'info' };

/** Whether a record whose job has `fields` is valid. */
const jobValid = (fields: object): boolean => checkRecord({ ...IDS, originalMacs: [], job: { ...JOB, ...fields } }).ok;

describe('checkRecord', () => {
  it("takes a job's probe settings and log level exactly when the config's options take them", () => {
    for (let probeMs = 0; probeMs <= 5000; probeMs += 5) {
      expect(jobValid({ conflictCheck: { action: 'warn', probeMs, probes: 2 } })).toBe(checkOption('probeMs', probeMs) !== undefined);
    }
    for (const probes of [0, 1, 2, 3, 4, 5, 10, 1.5]) {
      expect(jobValid({ conflictCheck: { action: 'warn', probeMs: 100, probes } })).toBe(checkOption('probes', probes) !== undefined);
    }
    for (const logLevel of ['error', 'warn', 'info', 'debug', 'trace', 'INFO']) {
      expect(jobValid({ logLevel })).toBe(checkOption('logLevel', logLevel) !== undefined);
    }
  });
});
