import { describe, expect, it } from 'vitest';
import { addFrames, newCounters } from '../../../src/daemon/counters';

describe('counters', () => {
  it('adds frames by kind', () => {
    const c = newCounters();
    addFrames(c, { garpRequest: 2, garpReply: 1, na: 3 });
    addFrames(c, { garpRequest: 1, garpReply: 0, na: 0 });
    expect(c.frames).toEqual({ garpRequest: 3, garpReply: 1, na: 3 });
  });
});
