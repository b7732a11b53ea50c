import { describe, expect, it } from 'vitest';
import { decodeSettings } from '../../../src/daemon/settings';

describe("the background announcer's settings", () => {
  it("are checked against the options' own ranges: anything else is no settings at all", () => {
    for (const bad of [
      { idleExitMs: 99 },
      { idleExitMs: 3_600_001 },
      { idleExitMs: 1.5 },
      { metricsFile: '/m' },
      { idleExitMs: 300, metricsFile: 'm' },
      null,
      'x',
    ]) {
      expect(decodeSettings(bad)).toBeUndefined();
    }
    expect(decodeSettings({ idleExitMs: 300, metricsFile: '/run/m.prom' })).toEqual({
      idleExitMs: 300,
      metricsFile: '/run/m.prom',
    });
    expect(decodeSettings({ idleExitMs: 300, stateDir: '/x' })).toStrictEqual({ idleExitMs: 300 });
  });
});
