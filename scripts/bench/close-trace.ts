// Where one ADD's AF_PACKET socket is released, read from an strace of it.
// Closing the last reference to a packet socket waits for an RCU grace period
// (packet_release() calls synchronize_net()); closing a copy while another
// exists costs microseconds. So the trace follows every copy of the socket:
// the plugin's own close(2), copies that children inherit (dup2 onto an fd
// without CLOEXEC, across execve) or that are passed over a unix socket
// (SCM_RIGHTS), and how long each process takes from exit_group(2) to gone (an
// exit that drops the last copy pays the wait there). The parse is pure;
// tracing is one extra run, outside the timed rounds.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from './measure';
import { median } from './stats';

/** strace, from Debian's `strace` package (scripts/ensure-system-deps.sh). */
export const STRACE = '/usr/bin/strace';

/** The syscalls traced: enough to follow the packet socket's copies, threads, children and exits. */
export const TRACED = 'trace=execve,socket,close,close_range,dup2,dup3,sendmsg,clone,clone3,fork,vfork,exit_group';

/** How long the trace may run: ADD may start a long-lived background process, which strace would wait for. */
const TRACE_MS = 5000;

/** One process (thread group) seen in the trace. */
export interface TracedProcess {
  pid: number;
  /** The argv of its last execve, if the trace saw one. */
  program?: string;
  /** It opened an AF_PACKET socket itself. */
  opened: boolean;
  /** It got a copy from its parent that survived its execve. */
  inherited: boolean;
  /** close(2) durations (ms) of its copies. */
  closeMs: number[];
  /** close(2) durations (ms) of its other descriptors: what a close costs under the trace, for comparison. */
  otherCloseMs: number[];
  /** It sent a copy over a unix socket (SCM_RIGHTS). */
  passed: boolean;
  /** It still held a copy when it called exit_group. */
  heldAtExit: boolean;
  /** From exit_group(2) to the process being gone (ms); undefined if not seen. */
  exitMs?: number;
  /** When it was gone (epoch seconds); undefined if it outlived the trace. */
  goneAt?: number;
  /** Its exit status ("killed by SIGx" as 128 + nothing known: -1). */
  exitCode?: number;
}

interface Proc extends TracedProcess {
  /** Its copies of the packet socket: fd → close-on-exec. */
  fds: Map<number, boolean>;
  exitGroupAt?: number;
}

interface Line {
  pid: number;
  at: number;
  /** `name(args…) = ret <dur>`, an unfinished call joined with its resumption; or `+++ …`. */
  text: string;
}

/** The trace's lines, each unfinished call joined with its resumption (stamped with its start). */
function lines(text: string): Line[] {
  const out: Line[] = [];
  const pending = new Map<number, { at: number; text: string }>();
  for (const raw of text.split('\n')) {
    const m = /^(\d+)\s+(\d+\.\d+)\s+(.*)$/.exec(raw);
    if (!m) continue;
    const pid = Number(m[1]);
    const at = Number(m[2]);
    const rest = m[3]!;
    const unfinished = /^(.*) <unfinished \.\.\.>$/.exec(rest);
    if (unfinished) {
      pending.set(pid, { at, text: unfinished[1]! });
      continue;
    }
    const resumed = /^<\.\.\. \w+ resumed>(.*)$/.exec(rest);
    const start = resumed ? pending.get(pid) : undefined;
    if (resumed) pending.delete(pid);
    out.push({ pid, at: start?.at ?? at, text: resumed ? `${start?.text ?? ''}${resumed[1]}` : rest });
  }
  return out;
}

/** A call's name, its text after `(`, its return value and its duration (s). */
function call(text: string): { name: string; args: string; ret?: number; secs?: number } | undefined {
  const m = /^(\w+)\((.*)$/.exec(text);
  if (!m) return undefined;
  const r = /\) += (-?\d+)(?: [^<]*)?(?: <(\d+\.\d+)>)?$/.exec(m[2]!);
  return { name: m[1]!, args: m[2]!, ...(r ? { ret: Number(r[1]) } : {}), ...(r?.[2] === undefined ? {} : { secs: Number(r[2]) }) };
}

/** The argv of a traced execve, as one line (strace shows each argument quoted). */
function execArgv(args: string): string | undefined {
  const list = /^"[^"]*", \[(.*?)\]/.exec(args)?.[1];
  return list === undefined ? undefined : [...list.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((a) => a[1]).join(' ');
}

const isFork = (name: string): boolean => /^(clone3?|fork|vfork)$/.test(name);

/** Parses `strace -f -ttt -T -e <TRACED>` output; the first process is the traced program. */
export function parseTrace(text: string): TracedProcess[] {
  const all = lines(text);
  // Who started whom, known before the order of lines matters (a vfork child runs before clone returns).
  const parent = new Map<number, { pid: number; thread: boolean }>();
  for (const l of all) {
    const c = call(l.text);
    if (c && isFork(c.name) && c.ret !== undefined && c.ret > 0) parent.set(c.ret, { pid: l.pid, thread: c.args.includes('CLONE_THREAD') });
  }
  const tgidOf = (pid: number): number => {
    const p = parent.get(pid);
    return p?.thread ? tgidOf(p.pid) : pid;
  };
  const procs = new Map<number, Proc>();
  const proc = (pid: number): Proc => {
    const id = tgidOf(pid);
    let p = procs.get(id);
    if (!p) {
      const from = parent.get(id);
      // A new process starts with a copy of its parent's fd table.
      const fds = new Map(from ? procs.get(tgidOf(from.pid))?.fds : []);
      p = { pid: id, fds, opened: false, inherited: false, closeMs: [], otherCloseMs: [], passed: false, heldAtExit: false };
      procs.set(id, p);
    }
    return p;
  };
  for (const l of all) {
    const p = proc(l.pid);
    const gone = /^\+\+\+ (?:exited with (\d+)|killed by)/.exec(l.text);
    if (gone) {
      if (l.pid === p.pid) {
        p.goneAt = l.at;
        p.exitCode = gone[1] === undefined ? -1 : Number(gone[1]);
        if (p.exitGroupAt !== undefined) p.exitMs = (l.at - p.exitGroupAt) * 1000;
      }
      continue;
    }
    const c = call(l.text);
    if (!c) continue;
    const fdArg = Number(/^(-?\d+)/.exec(c.args)?.[1]);
    if (c.name === 'socket' && c.args.startsWith('AF_PACKET') && c.ret !== undefined && c.ret >= 0) {
      p.fds.set(c.ret, c.args.includes('SOCK_CLOEXEC'));
      p.opened = true;
    } else if (c.name === 'close' && c.ret === 0) {
      (p.fds.delete(fdArg) ? p.closeMs : p.otherCloseMs).push((c.secs ?? 0) * 1000);
    } else if ((c.name === 'dup2' || c.name === 'dup3') && c.ret !== undefined && c.ret >= 0) {
      if (p.fds.has(fdArg)) p.fds.set(c.ret, c.name === 'dup3' && c.args.includes('O_CLOEXEC'));
      else p.fds.delete(c.ret);
    } else if (c.name === 'close_range' && c.ret === 0) {
      const [lo, hi] = c.args.split(',').map((s) => Number(s.trim()));
      for (const fd of [...p.fds.keys()]) {
        if (fd < lo! || fd > hi!) continue;
        if (c.args.includes('CLOSE_RANGE_CLOEXEC')) p.fds.set(fd, true);
        else p.fds.delete(fd);
      }
    } else if (c.name === 'execve' && c.ret === 0) {
      for (const [fd, cloexec] of p.fds) if (cloexec) p.fds.delete(fd);
      if (p.fds.size > 0 && !p.opened) p.inherited = true;
      const argv = execArgv(c.args);
      if (argv !== undefined) p.program = argv;
    } else if (c.name === 'sendmsg' && c.args.includes('SCM_RIGHTS')) {
      const sent = (/cmsg_data=\[([\d, ]*)\]/.exec(c.args)?.[1] ?? '').split(',').map((s) => Number(s.trim()));
      if (sent.some((fd) => p.fds.has(fd))) p.passed = true;
    } else if (c.name === 'exit_group') {
      p.exitGroupAt = l.at;
      p.heldAtExit = p.fds.size > 0;
    }
  }
  return [...procs.values()].map(({ fds: _f, exitGroupAt: _e, ...p }) => p);
}

const ms = (x: number | undefined): string => (x === undefined ? '?' : `${x.toFixed(2)} ms`);

/** The finding in a few lines: what the plugin did with its socket, and each process it started. */
export function describeTrace(procs: readonly TracedProcess[]): string[] {
  const [plugin, ...children] = procs;
  if (!plugin) return ['no trace'];
  const own = [
    plugin.closeMs.length > 0
      ? `closed its AF_PACKET socket in ${plugin.closeMs.map((x) => ms(x)).join(', ')} (its other close(2) calls: median ${ms(median(plugin.otherCloseMs))})`
      : 'closed no AF_PACKET socket itself',
    ...(plugin.passed ? ['passed a copy over a unix socket (SCM_RIGHTS)'] : []),
    ...(plugin.heldAtExit ? ['still held a copy at exit'] : []),
    `its exit took ${ms(plugin.exitMs)}`,
  ];
  const out = [`the plugin (pid ${plugin.pid}): ${own.join('; ')}`];
  for (const c of children) {
    const after = c.goneAt !== undefined && plugin.goneAt !== undefined ? (c.goneAt - plugin.goneAt) * 1000 : undefined;
    const when = after === undefined ? 'still running when the trace ended' : after > 0 ? `gone ${ms(after)} after the plugin` : 'gone before the plugin';
    const copy = c.inherited ? 'holds a copy; ' : '';
    out.push(`child pid ${c.pid} (${c.program ?? 'no exec seen'}): ${copy}exit took ${ms(c.exitMs)}, ${when}`);
  }
  return out;
}

/**
 * Runs cmd under `strace -f` and returns the parsed processes. strace waits for
 * every traced process, so after TRACE_MS it is stopped (it then detaches and
 * leaves the rest running). Throws unless the plugin itself exited 0.
 */
export function traceRun(cmd: Command, strace = STRACE): TracedProcess[] {
  const dir = mkdtempSync(join(tmpdir(), 'cni-bench-trace-'));
  try {
    const out = join(dir, 'trace');
    const res = spawnSync(strace, ['-f', '-ttt', '-T', '-e', TRACED, '-o', out, cmd.file, ...cmd.args], {
      env: cmd.env,
      input: cmd.stdin ?? '',
      encoding: 'utf8',
      timeout: TRACE_MS,
      killSignal: 'SIGTERM',
    });
    if (res.error && (res.error as NodeJS.ErrnoException).code !== 'ETIMEDOUT') {
      throw new Error(`cannot run ${strace}: ${res.error.message}`, { cause: res.error });
    }
    const procs = parseTrace(readFileSync(out, 'utf8'));
    if (procs[0]?.exitCode !== 0) {
      throw new Error(`traced ${cmd.file} exited ${procs[0]?.exitCode ?? '(not seen)'}: ${(res.stdout.trim() || res.stderr.trim()).slice(0, 2000)}`);
    }
    return procs;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
