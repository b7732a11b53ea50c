// Where one ADD's AF_PACKET release happens, read from an strace of it: which
// process closes its copy of the packet socket and how long that close takes,
// how long each process takes to exit (an exit that drops the last copy pays
// packet_release()'s RCU wait), and which processes end after the plugin did.
// The parse is pure; tracing is one extra run, outside the timed rounds.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from './measure';

/** One process (thread group) seen in the trace. */
export interface TracedProcess {
  pid: number;
  /** The argv of its last execve, if the trace saw one. */
  program?: string;
  /** close(2) durations (ms) of the AF_PACKET sockets this process opened. */
  packetCloseMs: number[];
  /** From exit_group(2) to the process being gone (ms); undefined if not seen. */
  exitMs?: number;
  /** When it was gone (epoch seconds). */
  goneAt?: number;
}

/** strace, from Debian's `strace` package (scripts/ensure-system-deps.sh). */
export const STRACE = '/usr/bin/strace';

/** The syscalls traced: enough to follow sockets, threads and exits. */
export const TRACED = 'trace=execve,socket,close,clone,clone3,fork,vfork,exit_group';

interface Call {
  name: string;
  text: string;
}

/** The argv of a traced execve, as one line (strace shows each argument quoted). */
function execArgv(args: string): string | undefined {
  const list = /^"[^"]*", \[(.*?)\]/.exec(args)?.[1];
  return list === undefined ? undefined : [...list.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((a) => a[1]).join(' ');
}

/** Parses `strace -f -ttt -T -e <TRACED>` output; the first pid is the traced program. */
export function parseTrace(text: string): TracedProcess[] {
  const tgid = new Map<number, number>();
  const procs = new Map<number, TracedProcess & { openPackets: Set<number>; exitGroupAt?: number }>();
  const pending = new Map<number, string>();
  const proc = (pid: number) => {
    const id = tgid.get(pid) ?? pid;
    tgid.set(pid, id);
    let p = procs.get(id);
    if (!p) procs.set(id, (p = { pid: id, packetCloseMs: [], openPackets: new Set() }));
    return p;
  };
  for (const line of text.split('\n')) {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const pid = Number(m[1]);
    const at = Number(m[2]);
    let rest = m[3]!;
    const p = proc(pid);
    if (/^\+\+\+ (exited|killed)/.test(rest)) {
      if (pid === p.pid) {
        p.goneAt = at;
        if (p.exitGroupAt !== undefined) p.exitMs = (at - p.exitGroupAt) * 1000;
      }
      continue;
    }
    const unfinished = /^(.*) <unfinished \.\.\.>$/.exec(rest);
    if (unfinished) {
      pending.set(pid, unfinished[1]!);
      continue;
    }
    const resumed = /^<\.\.\. \w+ resumed>(.*)$/.exec(rest);
    if (resumed) {
      rest = `${pending.get(pid) ?? ''}${resumed[1]}`;
      pending.delete(pid);
    }
    const call = /^(\w+)\((.*)$/.exec(rest);
    if (!call) continue;
    const c: Call = { name: call[1]!, text: call[2]! };
    const ret = /\) += (-?\d+)(?: [^<]*)?(?: <(\d+\.\d+)>)?$/.exec(c.text);
    const value = ret ? Number(ret[1]) : undefined;
    const seconds = ret?.[2] === undefined ? undefined : Number(ret[2]);
    if (c.name === 'exit_group') p.exitGroupAt = at;
    else if (c.name === 'execve' && value === 0) p.program = execArgv(c.text);
    else if (c.name === 'socket' && c.text.startsWith('AF_PACKET') && value !== undefined && value >= 0) p.openPackets.add(value);
    else if (c.name === 'close' && seconds !== undefined) {
      const fd = Number(/^(\d+)/.exec(c.text)?.[1]);
      if (p.openPackets.delete(fd)) p.packetCloseMs.push(seconds * 1000);
    } else if (/^(clone3?|fork|vfork)$/.test(c.name) && value !== undefined && value > 0) {
      // A thread joins its creator's thread group; anything else is a process of its own.
      tgid.set(value, c.text.includes('CLONE_THREAD') ? p.pid : value);
    }
  }
  return [...procs.values()].map(({ openPackets: _o, exitGroupAt: _e, ...p }) => p);
}

const ms = (x: number | undefined): string => (x === undefined ? '?' : `${x.toFixed(2)} ms`);

/** The finding in a few lines: the plugin's own close and exit, and the processes that outlived it. */
export function describeTrace(procs: readonly TracedProcess[]): string[] {
  const [plugin, ...others] = procs;
  if (!plugin) return ['no trace'];
  const lines = [
    `the plugin (pid ${plugin.pid}) closed its AF_PACKET socket(s) in ${plugin.packetCloseMs.map((x) => ms(x)).join(', ') || '— (none seen)'}; its exit took ${ms(plugin.exitMs)}`,
  ];
  for (const o of others) {
    const after = o.goneAt !== undefined && plugin.goneAt !== undefined ? (o.goneAt - plugin.goneAt) * 1000 : undefined;
    const when = after === undefined ? 'still running when the trace ended' : after > 0 ? `gone ${ms(after)} after the plugin` : 'gone before the plugin';
    lines.push(`child pid ${o.pid} (${o.program ?? 'no exec seen'}): exit took ${ms(o.exitMs)}, ${when}`);
  }
  return lines;
}

/** Runs cmd under `strace -f` and returns the parsed processes; strace waits for every traced process. */
export function traceRun(cmd: Command, strace = STRACE): TracedProcess[] {
  const dir = mkdtempSync(join(tmpdir(), 'cni-bench-trace-'));
  try {
    const out = join(dir, 'trace');
    const res = spawnSync(strace, ['-f', '-ttt', '-T', '-e', TRACED, '-o', out, cmd.file, ...cmd.args], {
      env: cmd.env,
      input: cmd.stdin ?? '',
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (res.error) throw new Error(`cannot run ${strace}: ${res.error.message}`, { cause: res.error });
    if (res.status !== 0) throw new Error(`traced ${cmd.file} exited ${res.status}: ${(res.stdout.trim() || res.stderr.trim()).slice(0, 2000)}`);
    return parseTrace(readFileSync(out, 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
