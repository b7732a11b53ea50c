// The node settings: from the stateDir's announcer.conf alone, over the defaults, each setting checked by its option's
// own schema (in the file, one line naming the field; as an `announcer install` flag, naming the flag), the file read
// root-only, and what install writes read back the same.
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type * as NodeSettings from '../../../src/cni/node-settings';
import { loadNodeSettings } from '../../../src/daemon/daemon-verb';
import { NODE_SETTINGS_FILE } from '../../../src/state-files';
import { readSmallFile } from '../../../src/sys/safe-file';
import { useTempDir } from '../../support/temp-dir';

const F = '/run/cni-announcer/announcer.conf';

// Each test loads the module afresh, and with it the option table: code that runs when a module loads is then the
// test's own (a mutation run activates a mutant only inside a test).
let { formatNodeSettings, nodeSettingsFromFlags, parseNodeSettings, resolveNodeSettings, whereToSet } =
  {} as typeof NodeSettings;
beforeEach(async () => {
  vi.resetModules();
  ({ formatNodeSettings, nodeSettingsFromFlags, parseNodeSettings, resolveNodeSettings, whereToSet } = await import(
    '../../../src/cni/node-settings'
  ));
});

describe('resolveNodeSettings: file > default', () => {
  it('takes each setting from the file, else its default', () => {
    expect(resolveNodeSettings({})).toStrictEqual({ idleExitMs: 30000, logLevel: 'info' });
    const file = { idleExitMs: 5000, metricsFile: '/m/f.prom', rateLimit: { framesPerSecond: 10, burst: 10 } };
    expect(resolveNodeSettings(file)).toEqual({ ...file, logLevel: 'info' });
  });
});

describe('parseNodeSettings: the file', () => {
  it('reads a JSON object of node settings', () => {
    const text =
      '{"idleExitMs": 600000, "rateLimit": {"framesPerSecond": 20, "burst": 5}, "logFile": "/var/log/a.log"}';
    expect(parseNodeSettings(text, F)).toEqual({
      ok: true,
      settings: { idleExitMs: 600000, rateLimit: { framesPerSecond: 20, burst: 5 }, logFile: '/var/log/a.log' },
    });
    expect(parseNodeSettings('{}', F)).toEqual({ ok: true, settings: {} });
  });

  it.each([
    ['{"idleExitMs": 99}', `${F}: "idleExitMs" must be an integer from 100 to 3600000 (got 99)`],
    ['{"metricsFile": "m.prom"}', `${F}: "metricsFile" must be an absolute path (got "m.prom")`],
    ['{"rateLimit": {"framesPerSecond": 10}}', `${F}: "rateLimit.burst" must be an integer from 1 to 10000`],
    ['{"logLevel": "loud"}', `${F}: "logLevel" must be`],
    [
      '{"stateDir": "/x"}',
      `${F}: "stateDir" is not a node setting (idleExitMs, metricsFile, rateLimit, logFile, logLevel)`,
    ],
    ['[1]', `${F}: must be a JSON object (got`],
    ['{idle', `${F}: not JSON`],
  ])('refuses %s with one line naming the field', (text, problem) => {
    const parsed = parseNodeSettings(text, F);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.problem).toContain(problem);
    expect(!parsed.ok && parsed.problem).not.toContain('\n');
  });

  it('reads back what install writes', () => {
    const given = { idleExitMs: 1000, rateLimit: { framesPerSecond: 3, burst: 4 }, logLevel: 'warn' as const };
    expect(parseNodeSettings(formatNodeSettings(given), F)).toEqual({ ok: true, settings: given });
    expect(formatNodeSettings({ metricsFile: undefined })).toBe('{}\n');
  });
});

describe('nodeSettingsFromFlags (announcer install)', () => {
  it('takes the flags, checked by the same schemas', () => {
    const flags = { 'idle-exit-ms': '5000', 'metrics-file': '/m/a.prom', 'log-file': '/l/a.log', 'log-level': 'warn' };
    const rateLimit = { framesPerSecond: 10, burst: 20 };
    const settings = { idleExitMs: 5000, metricsFile: '/m/a.prom', rateLimit, logFile: '/l/a.log', logLevel: 'warn' };
    expect(nodeSettingsFromFlags({ ...flags, 'rate-limit': '10/20' })).toEqual({ ok: true, settings });
    expect(nodeSettingsFromFlags({})).toEqual({ ok: true, settings: {} });
  });

  it.each([
    ['idle-exit-ms', '99', '--idle-exit-ms must be an integer from 100 to 3600000 (got "99")'],
    ['idle-exit-ms', 'soon', '--idle-exit-ms must be an integer from 100 to 3600000 (got "soon")'],
    ['metrics-file', 'm.prom', '--metrics-file must be an absolute path (got "m.prom")'],
    ['idle-exit-ms', '1e3', '--idle-exit-ms must be an integer from 100 to 3600000 (got "1e3")'],
    ['idle-exit-ms', '+1000', '--idle-exit-ms must be an integer from 100 to 3600000 (got "+1000")'],
    ['rate-limit', '10', '--rate-limit must be FRAMES_PER_SECOND/BURST, e.g. 10/10'],
    ['rate-limit', 'x10/10', '--rate-limit must be FRAMES_PER_SECOND/BURST, e.g. 10/10'],
    ['rate-limit', '10/10x', '--rate-limit must be FRAMES_PER_SECOND/BURST, e.g. 10/10'],
    ['rate-limit', '0/5', '--rate-limit framesPerSecond must be an integer from 1 to 10000 (got "0/5")'],
    ['log-level', 'loud', '--log-level must be'],
  ])('refuses --%s=%s, naming the flag', (flag, value, problem) => {
    const parsed = nodeSettingsFromFlags({ [flag]: value });
    expect(!parsed.ok && parsed.problem).toContain(problem);
  });

  it('says where to set a node option instead of a conflist', () => {
    expect(whereToSet('rateLimit')).toBe(
      `"rateLimit" in <stateDir>/${NODE_SETTINGS_FILE} (announcer install --rate-limit)`,
    );
  });
});

describe('loadNodeSettings: the stateDir file, read root-only', () => {
  let dir: string;
  const read = (path: string, max: number) => readSmallFile(path, max, process.geteuid!());
  useTempDir('node-settings-', (d) => (dir = d));

  it('the file over defaults; no file: defaults', () => {
    expect(loadNodeSettings(dir, read)).toEqual({ ok: true, settings: { idleExitMs: 30000, logLevel: 'info' } });
    writeFileSync(join(dir, NODE_SETTINGS_FILE), '{"idleExitMs": 4000, "metricsFile": "/m/a.prom"}', { mode: 0o600 });
    const settings = { idleExitMs: 4000, metricsFile: '/m/a.prom', logLevel: 'info' };
    expect(loadNodeSettings(dir, read)).toEqual({ ok: true, settings });
  });

  it('refuses an invalid file, a symlink, a FIFO-like non-file, a file others may write, each in one line', () => {
    const file = join(dir, NODE_SETTINGS_FILE);
    writeFileSync(file, '{"idleExitMs": 5}', { mode: 0o600 });
    const problem = `${file}: "idleExitMs" must be an integer from 100 to 3600000 (got 5)`;
    expect(loadNodeSettings(dir, read)).toEqual({ ok: false, problem });
    chmodSync(file, 0o622);
    writeFileSync(file, '{}');
    expect(loadNodeSettings(dir, read)).toMatchObject({ ok: false, problem: expect.stringContaining('writable') });
    rmSync(file);
    writeFileSync(join(dir, 'real'), '{}', { mode: 0o600 });
    symlinkSync(join(dir, 'real'), file);
    expect(loadNodeSettings(dir, read)).toMatchObject({ ok: false, problem: expect.stringContaining('symbolic') });
    rmSync(file);
    mkdirSync(file);
    expect(loadNodeSettings(dir, read)).toMatchObject({ ok: false, problem: expect.stringContaining('regular') });
  });
});
