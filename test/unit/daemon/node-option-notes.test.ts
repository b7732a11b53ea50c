// Node options in conflists: accepted, ignored, and said once per network (on the
// network's log), and once per pair of networks that disagree (on the announcer's),
// naming both; the node settings in force are what every line reports.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/cni/config';
import { NodeOptionNotes } from '../../../src/daemon/node-option-notes';
import { createLogger } from '../../../src/log';

function setup() {
  const own: string[] = [];
  const network: string[] = [];
  const notes = new NodeOptionNotes(
    createLogger(
      (l) => void own.push(l),
      'debug',
      {},
      () => new Date(0),
    ),
    {
      idleExitMs: 30000,
      logLevel: 'info',
    },
  );
  const networkLog = createLogger(
    (l) => void network.push(l),
    'debug',
    {},
    () => new Date(0),
  );
  const conf = (name: string, extra: object) =>
    parseConfig({ cniVersion: '1.0.0', name, type: 'announcer', stateDir: '/run/x', ...extra });
  return { own, network, notes, networkLog, conf };
}

describe('parseConfig and node options', () => {
  it('accepts node options in a conflist unchecked, and applies none: they are only reported', () => {
    const config = parseConfig({
      cniVersion: '1.0.0',
      name: 'a',
      type: 'announcer',
      idleExitMs: 'soon',
      metricsFile: 'relative.prom',
      rateLimit: { framesPerSecond: 0 },
    });
    expect(config.nodeOptions).toEqual({
      idleExitMs: 'soon',
      metricsFile: 'relative.prom',
      rateLimit: { framesPerSecond: 0 },
    });
    expect(config).not.toHaveProperty('idleExitMs');
    expect(config).not.toHaveProperty('rateLimit');
    expect(parseConfig({ cniVersion: '1.0.0', name: 'a', type: 'announcer' })).not.toHaveProperty('nodeOptions');
  });
});

describe('NodeOptionNotes', () => {
  it("one WARN per network, on the network's log, naming the options and where to set them", () => {
    const s = setup();
    for (let i = 0; i < 3; i++) s.notes.note(s.conf('a', { idleExitMs: 5000, metricsFile: '/m.prom' }), s.networkLog);
    s.notes.note(s.conf('b', {}), s.networkLog);
    expect(s.own).toEqual([]);
    expect(s.network).toHaveLength(1);
    const [line] = s.network;
    expect(line).toContain("WARN node options in this network's conflist are ignored: the node settings apply");
    expect(line).toContain('network=a');
    expect(line).toContain('idleExitMs');
    expect(line).toContain('announcer.conf');
    expect(line).toContain('--idle-exit-ms');
    expect(line).toContain('--metrics-file');
    expect(line).toContain('\\"idleExitMs\\":30000'); // in force
  });

  it('two networks of one stateDir with different values: both ignored, one WARN naming both', () => {
    const s = setup();
    s.notes.note(s.conf('a', { idleExitMs: 5000, rateLimit: { framesPerSecond: 1, burst: 1 } }), s.networkLog);
    s.notes.note(s.conf('b', { idleExitMs: 60000, rateLimit: { framesPerSecond: 1, burst: 1 } }), s.networkLog);
    s.notes.note(s.conf('a', { idleExitMs: 5000 }), s.networkLog);
    s.notes.note(s.conf('b', { idleExitMs: 60000 }), s.networkLog);
    const both = s.own.filter((l) => l.includes('two networks'));
    expect(both).toHaveLength(1);
    expect(both[0]).toContain('networks="[\\"a\\",\\"b\\"]"');
    expect(both[0]).toContain('idleExitMs');
    expect(both[0]).not.toContain('rateLimit'); // the same in both
    expect(s.own).toEqual(both);
    expect(s.network.filter((l) => l.includes('conflist are ignored'))).toHaveLength(2);
  });

  it('two networks with the same values: no pair WARN', () => {
    const s = setup();
    s.notes.note(s.conf('a', { idleExitMs: 5000 }), s.networkLog);
    s.notes.note(s.conf('b', { idleExitMs: 5000 }), s.networkLog);
    expect(s.own.filter((l) => l.includes('two networks'))).toEqual([]);
  });
});
