// Fakes for the shim's tests: a clock whose timers fire only when a test says so, and an
// announcer on a real unix socket (node:net) that answers each request as the test scripts it.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ShimClock } from '../../../src/shim/shim';

/** A pending timer of the fake clock. */
export interface FakeTimer {
  ms: number;
  fire: () => void;
}

/** A clock at `now` whose timers wait for fire(). */
export function fakeClock(now = 1000): ShimClock & { timers: FakeTimer[]; set(ms: number): void } {
  const timers: FakeTimer[] = [];
  return {
    timers,
    now: () => now,
    set: (ms) => {
      now = ms;
    },
    after: (ms, fire) => {
      const timer = { ms, fire };
      timers.push(timer);
      return () => {
        const i = timers.indexOf(timer);
        if (i >= 0) timers.splice(i, 1);
      };
    },
  };
}

/** Fires the one pending timer, after checking how long it was set for. */
export function fireOnly(clock: { timers: FakeTimer[] }, ms: number): void {
  if (clock.timers.length !== 1) throw new Error(`${clock.timers.length} timers pending`);
  const [timer] = clock.timers;
  if (timer!.ms !== ms) throw new Error(`the timer is set for ${timer!.ms} ms, not ${ms}`);
  clock.timers.length = 0;
  timer!.fire();
}

/** Resolves once `check` holds, looking after each turn of the event loop. */
export async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setImmediate(r));
}

/** One connection the fake announcer took: the request line, the socket, whether the client closed it. */
export interface Taken {
  request: Record<string, unknown>;
  socket: Socket;
  closed: boolean;
}

/** A fake announcer listening in a temp dir; `answer` runs on each request line. */
export interface FakeAnnouncer {
  dir: string;
  path: string;
  taken: Taken[];
  stop(): Promise<void>;
}

/** Starts a fake announcer at `dir`/`name` (a new temp dir when none is given). */
export async function fakeAnnouncer(
  answer: (t: Taken) => void,
  options: { dir?: string; name?: string } = {},
): Promise<FakeAnnouncer> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'shim-'));
  const path = join(dir, options.name ?? 'announcer.sock');
  const taken: Taken[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    let buffered = '';
    const t: Taken = { request: {}, socket, closed: false };
    socket.on('close', () => {
      t.closed = true;
      sockets.delete(socket);
    });
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      buffered += chunk.toString();
      const nl = buffered.indexOf('\n');
      if (nl < 0 || taken.includes(t)) return;
      t.request = JSON.parse(buffered.slice(0, nl));
      taken.push(t);
      answer(t);
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return {
    dir,
    path,
    taken,
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (options.dir === undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}
