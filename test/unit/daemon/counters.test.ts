import { describe, expect, it } from 'vitest';
import { addFrames, countServed, newCounters } from '../../../src/daemon/counters';

describe('counters', () => {
  it('adds frames by kind', () => {
    const c = newCounters();
    addFrames(c, { garpRequest: 2, garpReply: 1, na: 3 });
    addFrames(c, { garpRequest: 1, garpReply: 0, na: 0 });
    expect(c.frames).toEqual({ garpRequest: 3, garpReply: 1, na: 3 });
  });
});

describe('countServed', () => {
  it('counts each CNI command the announcer runs, and nothing else', () => {
    const c = newCounters();
    for (const command of ['ADD', 'ADD', 'DEL', 'STATUS', 'VERSION', 'BOGUS', undefined]) countServed(c, command);
    expect(c.served).toEqual({ ADD: 2, DEL: 1, CHECK: 0, GC: 0, STATUS: 1 });
  });
});
