// Garbage for the announcer's stream socket (`announcer.sock`, one request
// line per connection, src/protocol.ts), sent with node:net from the test
// process: random bytes, a 1 MiB line, a line past the announcer's limit,
// invalid request lines, each on a connection of its own with the line it got
// back; and idle connections that say nothing, held until released.
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Scope } from './scope';

/** How long a garbage connection waits for the announcer's line or close. */
const REPLY_MS = 10_000;
/** A connect that finds the listen backlog full (EAGAIN) is tried again this many times, 10 ms apart. */
const CONNECT_TRIES = 500;

/** Connects to the unix socket at `path` (EAGAIN, a full backlog, is tried again). */
export async function connectUnix(path: string): Promise<Socket> {
  for (let tries = 1; ; tries++) {
    try {
      return await new Promise<Socket>((resolve, reject) => {
        const s = connect(path);
        s.once('connect', () => resolve(s.off('error', reject)));
        s.once('error', reject);
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || tries >= CONNECT_TRIES) throw err;
      await sleep(10);
    }
  }
}

/**
 * Sends `bytes` on a fresh connection and resolves with the first line the
 * announcer wrote back, or null when it closed (or reset) the connection
 * without one. Rejects if neither happens within REPLY_MS.
 */
export async function askRaw(path: string, bytes: Buffer | string): Promise<string | null> {
  const s = await connectUnix(path);
  return new Promise<string | null>((resolve, reject) => {
    let got = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`no line and no close from ${path} within ${REPLY_MS} ms`));
    }, REPLY_MS);
    const settle = (line: string | null): void => {
      clearTimeout(timer);
      s.destroy();
      resolve(line);
    };
    s.setEncoding('utf8');
    s.on('data', (chunk: string) => {
      got += chunk;
      const nl = got.indexOf('\n');
      if (nl >= 0) settle(got.slice(0, nl));
    });
    s.on('error', () => settle(null)); // EPIPE or ECONNRESET: dropped mid-write
    s.on('close', () => settle(null));
    s.write(bytes);
  });
}

/** Random bytes with no newline in them (a newline would end the line early). */
function randomLine(length: number): Buffer {
  const b = randomBytes(length);
  for (let i = 0; i < b.length; i++) if (b[i] === 0x0a) b[i] = 0x20;
  return Buffer.concat([b, Buffer.from('\n')]);
}

/**
 * Request lines that are no request: unfinished JSON, a NUL, not an object, another protocol version, bad fields, a bad
 * control operation.
 */
export const INVALID_LINES: readonly string[] = [
  '{"v": 1, ',
  '\0',
  '[]',
  '{"v": 99, "build": "x", "deadline": 1e15, "control": {"op": "status"}}',
  '{"v": 1, "build": 7, "deadline": 1e15, "control": {"op": "status"}}',
  '{"v": 1, "build": "x", "deadline": 1e15, "cni": {"env": {"PATH": "/"}, "stdin": "{}"}}',
  '{"v": 1, "build": "x", "deadline": 1e15, "control": {"op": "kill", "record": "../x.json"}}',
];

/** What each kind of garbage got back: a line, or null (closed without one). */
export interface GarbageReplies {
  /** 20 lines of random bytes, 1 to 4096 long. */
  random: (string | null)[];
  /** One line of 1 MiB of random bytes; `hugeBytes` its length. */
  huge: string | null;
  hugeBytes: number;
  /** `overLimitBytes` bytes and no newline: past the longest line the announcer reads. */
  overLimit: string | null;
  overLimitBytes: number;
  /** INVALID_LINES, in order. */
  invalid: (string | null)[];
}

/** Sends every kind of garbage but idle connections, one connection each, one after another. */
export async function sendGarbage(path: string, maxLineBytes: number): Promise<GarbageReplies> {
  const random: (string | null)[] = [];
  for (let n = 0; n < 20; n++) random.push(await askRaw(path, randomLine(1 + ((n * 97) % 4096))));
  const huge = randomLine(1 << 20);
  const overLimitBytes = maxLineBytes + 4096;
  const over = Buffer.alloc(overLimitBytes, 'a');
  return {
    random,
    huge: await askRaw(path, huge),
    hugeBytes: huge.length,
    overLimit: await askRaw(path, over),
    overLimitBytes,
    invalid: await Promise.all(INVALID_LINES.map((line) => askRaw(path, `${line}\n`))),
  };
}

/** Idle connections held open. */
export interface IdleConnections {
  readonly count: number;
  /** How many the announcer has closed (or reset) so far. */
  closedByPeer(): number;
  /** Closes every one still open. */
  release(): Promise<void>;
}

/** Opens `count` connections one after another that send nothing; released at scope close if the test did not. */
export async function holdIdleConnections(scope: Scope, path: string, count: number): Promise<IdleConnections> {
  const sockets: Socket[] = [];
  let closedByPeer = 0;
  let released = false;
  const release = async (): Promise<void> => {
    released = true;
    await Promise.all(
      sockets.map(
        (s) => new Promise<void>((resolve) => (s.closed ? resolve() : (s.once('close', () => resolve()), s.destroy()))),
      ),
    );
  };
  scope.defer(release, `${count} idle connections to ${path}`);
  for (let i = 0; i < count; i++) {
    const s = await connectUnix(path);
    s.on('error', () => undefined); // a reset by the announcer: counted at close
    s.on('close', () => {
      if (!released) closedByPeer++;
    });
    s.on('end', () => s.destroy()); // the announcer closed its end
    sockets.push(s);
  }
  return { count, closedByPeer: () => closedByPeer, release };
}
