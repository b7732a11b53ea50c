// The hand-over file between an announcer whose executable was replaced and
// the next one: written whole, taken once, anything invalid left out, the
// file removed in every case.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { takeHandover, writeHandover } from '../../../src/daemon/handover';
import { HANDOVER_FILE } from '../../../src/state-files';
import { jobIn, makeStateDir, type StateDir } from '../../support/daemon-fakes';

let state: StateDir;
let file: string;
beforeEach(() => {
  state = makeStateDir();
  file = join(state.dir, HANDOVER_FILE);
});
afterEach(() => state.remove());

describe('the hand-over file', () => {
  it('carries each burst and its next round to the next announcer, once', () => {
    const job = jobIn(state);
    writeHandover(state.dir, new Map([['c1@eth0.json', { job, next: 2 }]]));
    expect(takeHandover(state.dir)).toEqual(new Map([['c1@eth0.json', { job, next: 2 }]]));
    expect(existsSync(file)).toBe(false);
    expect(takeHandover(state.dir)).toEqual(new Map());
  });

  const takesBurstHandedTitle =
    'takes a burst handed over by a build from before node settings: its idleExitMs and metricsFile are ignored';
  it(takesBurstHandedTitle, () => {
    const job = { ...jobIn(state), idleExitMs: 100, metricsFile: 'relative.prom', rateLimit: { burst: 'x' } };
    writeFileSync(file, JSON.stringify({ 'c1@eth0.json': { job, next: 2 } }));
    expect(takeHandover(state.dir).get('c1@eth0.json')).toMatchObject({ job: { containerId: 'c1' }, next: 2 });
  });

  it('is ignored and removed when not JSON or not an object', () => {
    for (const text of ['{"c1@eth0.json":', 'null', '7']) {
      writeFileSync(file, text);
      expect([text, takeHandover(state.dir)]).toEqual([text, new Map()]);
      expect(existsSync(file)).toBe(false);
    }
  });

  it('leaves out an entry whose job does not check or whose next round is not an integer from 1', () => {
    const job = jobIn(state);
    const entries = {
      good: { job, next: 1 },
      zero: { job, next: 0 },
      half: { job, next: 1.5 },
      badJob: { job: { ...job, schedule: 'x' }, next: 1 },
      bare: 3,
      none: null,
    };
    writeFileSync(file, JSON.stringify(entries));
    expect([...takeHandover(state.dir).keys()]).toEqual(['good']);
    expect(existsSync(file)).toBe(false);
  });

  it("carries a burst's gateway verdict so far; an invalid one is left out, the burst kept", () => {
    const job = jobIn(state);
    const gateway = {
      result: 'pending' as const,
      asks: 1,
      answered: [{ interface: 'eth0', gateway: '10.0.0.1', mac: '02:00:00:00:00:01', afterMs: 3 }],
      unanswered: [{ interface: 'eth0', gateway: 'fd00::1' }],
    };
    writeHandover(state.dir, new Map([['c1@eth0.json', { job, next: 2, gateway }]]));
    expect(takeHandover(state.dir).get('c1@eth0.json')).toMatchObject({ next: 2, gateway });
    writeFileSync(file, JSON.stringify({ 'c1@eth0.json': { job, next: 2, gateway: { result: 'sure' } } }));
    const taken = takeHandover(state.dir).get('c1@eth0.json');
    expect(taken).toMatchObject({ next: 2 });
    expect(taken).not.toHaveProperty('gateway');
  });
});
