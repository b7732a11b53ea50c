// The announcer's loggers: each job's lines go to its network's logFile as
// before, the announcer's own to the node's log (never a network's), and with
// `--log-format` also to stdout, structured, at info and
// above, each naming its pod (container, ifname, K8S_POD_NAMESPACE/NAME from
// the job or the command's CNI_ARGS, IPs), so that grepping `kubectl logs`
// for a pod answers what was sent for it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { daemonLoggers } from '../../../src/daemon/daemon-verb';
import { jobIn, makeStateDir, type StateDir } from '../../support/daemon-fakes';
import { logRecords, type LogRecord } from '../../support/log-records';

const T = '2026-12-01T23:10:00.000Z';
let state: StateDir;
beforeEach(() => {
  state = makeStateDir();
});
afterEach(() => state.remove());

/** The records of a log file, without their levels' case. */
const recordsIn = (file: string): LogRecord[] => logRecords(readFileSync(file, 'utf8'));

function withStdout(format: 'json' | 'logfmt' = 'json', own: { logFile?: string } = {}) {
  const lines: string[] = [];
  const stdout = { format, sink: (l: string) => void lines.push(l), now: () => new Date(T) };
  const loggers = daemonLoggers({ daemon: 42 }, { logLevel: 'info', ...own }, stdout);
  return { ...loggers, lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('daemonLoggers with --log-format', () => {
  it("a job's lines name its pod, IPs and round on stdout, and still go to its logFile", () => {
    const logFile = join(state.dir, 'announcer.log');
    const job = jobIn(state, {
      pod: { namespace: 'team-a', name: 'web-0' },
      logFile,
      interfaces: [{ name: 'eth0', ipv4: ['10.88.0.5'], ipv6: ['fd00::5'] }],
    });
    const out = withStdout();
    out.jobLog(job).info('announced', { round: 2, of: 3, frames: 2 });
    expect(out.parsed()).toEqual([
      {
        time: T,
        level: 'info',
        msg: 'announced',
        daemon: 42,
        network: 'net',
        containerId: 'c1',
        ifname: 'eth0',
        K8S_POD_NAMESPACE: 'team-a',
        K8S_POD_NAME: 'web-0',
        ips: ['10.88.0.5', 'fd00::5'],
        round: 2,
        of: 3,
        frames: 2,
      },
    ]);
    expect(recordsIn(logFile)).toEqual([
      {
        level: 'info',
        msg: 'announced',
        fields: { daemon: 42, containerId: 'c1', ifname: 'eth0', round: 2, of: 3, frames: 2 },
      },
    ]);
  });

  const leavesDebugLinesTitle =
    'leaves debug lines off stdout (the logFile keeps its own level); the ' +
    "announcer's own lines go to the node's log, not a job's";
  it(leavesDebugLinesTitle, () => {
    const logFile = join(state.dir, 'announcer.log');
    const nodeLog = join(state.dir, 'node.log');
    const out = withStdout('json', { logFile: nodeLog });
    out.jobLog(jobIn(state, { logFile, logLevel: 'debug' })).debug('background work scheduled');
    out.log.info('announcer started', { pid: 42 });
    expect(out.parsed()).toEqual([{ time: T, level: 'info', msg: 'announcer started', daemon: 42, pid: 42 }]);
    expect(recordsIn(logFile).map((r) => [r.level, r.msg])).toEqual([['debug', 'background work scheduled']]);
    expect(recordsIn(nodeLog)).toEqual([{ level: 'info', msg: 'announcer started', fields: { daemon: 42, pid: 42 } }]);
  });

  it("a command's lines name the pod from its CNI_ARGS", () => {
    const out = withStdout('logfmt');
    const args = { raw: { IgnoreUnknown: '1', K8S_POD_NAMESPACE: 'team a', K8S_POD_NAME: 'web-0' } };
    out
      .commandLog({ logLevel: 'info' }, { containerId: 'c9', ifname: 'net1', args })
      .info('announced', { round: 1, ips: ['10.88.0.9'] });
    expect(out.lines).toEqual([
      `time=${T} level=info msg=announced daemon=42 containerId=c9 ifname=net1 K8S_POD_NAMESPACE="team ` +
        `a" K8S_POD_NAME=web-0 round=1 ips="[\\"10.88.0.9\\"]"\n`,
    ]);
  });

  it('without --log-format nothing goes to stdout: the loggers are the files alone', () => {
    const logFile = join(state.dir, 'announcer.log');
    const nodeLog = join(state.dir, 'node.log');
    const { jobLog, log } = daemonLoggers({ daemon: 42 }, { logFile: nodeLog, logLevel: 'warn' });
    jobLog(jobIn(state, { logFile })).info('announced');
    log.info('announcer started');
    log.warn('node options ignored');
    expect(recordsIn(logFile).map((r) => r.msg)).toEqual(['announced']);
    expect(recordsIn(nodeLog).map((r) => [r.level, r.msg])).toEqual([['warn', 'node options ignored']]);
  });
});
