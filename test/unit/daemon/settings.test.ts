import { describe, expect, it } from 'vitest';
import { decodeSettings, settingsArgv, settingsFromArgv } from '../../../src/daemon/settings';

describe("the background announcer's settings", () => {
  it('go through the command line and back', () => {
    for (const settings of [{ idleExitMs: 300 }, { idleExitMs: 100, metricsFile: '/run/announcer.prom' }]) {
      expect(settingsFromArgv(settingsArgv(settings))).toEqual(settings);
    }
    expect(settingsArgv({ idleExitMs: 300, metricsFile: '/m.prom' })).toEqual(['--idle-exit-ms', '300', '--metrics-file', '/m.prom']);
    expect(settingsArgv(undefined)).toEqual([]);
    expect(settingsFromArgv([])).toBeUndefined();
  });

  it("are checked against the options' own ranges: anything else is no settings at all", () => {
    for (const bad of [{ idleExitMs: 99 }, { idleExitMs: 3_600_001 }, { idleExitMs: 1.5 }, { metricsFile: '/m' }, { idleExitMs: 300, metricsFile: 'm' }, null, 'x']) {
      expect(decodeSettings(bad)).toBeUndefined();
    }
    expect(settingsFromArgv(['--idle-exit-ms', '50'])).toBeUndefined();
    expect(settingsFromArgv(['--idle-exit-ms', '300', '--frob'])).toBeUndefined();
  });
});
