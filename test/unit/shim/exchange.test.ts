// The exchange against a fake announcer on a real unix socket (the node:net twin), with a clock
// whose timers fire when the test says: no test waits for a deadline to pass.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exchange, replyOutcome, type Outcome } from '../../../src/shim/exchange';
import { WIRE_VERSION, encodeReply } from '../../../src/shim/wire';
import { StreamError, type ConnectUnix } from '../../../src/sys/stream-connection';
import { spawn } from 'node:child_process';
import { connectUnix } from '../../../src/sys/unix-stream';
import { fakeAnnouncer, fakeClock, fireOnly, until, type FakeAnnouncer, type Taken } from './fakes';

let announcer: FakeAnnouncer | undefined;
afterEach(async () => {
  await announcer?.stop();
  announcer = undefined;
});

/** What each exchange waits for its end. */
const WAIT = 4000;

const BODY = { cni: { env: { CNI_COMMAND: 'ADD' }, stdin: '{"cniVersion":"1.0.0"}\n' } };

/** Runs one exchange against a fake announcer answering with `answer`. */
async function run(
  answer: (t: Taken) => void,
  clock = fakeClock(),
): Promise<{ outcome: Promise<Outcome>; clock: ReturnType<typeof fakeClock>; fake: FakeAnnouncer }> {
  announcer = await fakeAnnouncer(answer);
  const outcome = exchange({ connect: connectUnix, clock }, announcer.path, BODY, 'build-1', WAIT);
  return { outcome, clock, fake: announcer };
}

// A mutant that never settles fails at the timeout, not after vitest's minute.
describe('exchange', { timeout: 5000 }, () => {
  it('sends one request line: version, build, deadline = ackBy = now + the wait, and the body', async () => {
    const clock = fakeClock(5000);
    const { outcome, fake } = await run(
      (t) => t.socket.write(encodeReply({ ack: true }) + encodeReply({ exit: 0, stdout: 'ok' })),
      clock,
    );
    await outcome;
    expect(fake.taken.map((t) => t.request)).toEqual([
      { v: WIRE_VERSION, build: 'build-1', ackBy: 5000 + WAIT, deadline: 5000 + WAIT, ...BODY },
    ]);
  });

  it("ends with the command's stdout and exit status, ignoring an older announcer's ack and beats", async () => {
    const { outcome, fake } = await run((t) =>
      t.socket.write(
        [{ ack: true }, { beat: true }, { beat: true }, { exit: 3, stdout: 'out\n' }]
          .map((r) => encodeReply(r as never))
          .join(''),
      ),
    );
    expect(await outcome).toEqual({ end: { exit: 3, stdout: 'out\n' } });
    await until(() => fake.taken[0]!.closed);
  });

  it('takes a reply split anywhere, even inside a UTF-8 character', async () => {
    const bytes = Buffer.from(encodeReply({ ack: true }) + encodeReply({ exit: 0, stdout: 'é€' }));
    // A transport that hands the reply over one byte at a time (a socket may coalesce them).
    const connect: ConnectUnix = async (_path, handlers) => ({
      write: () => queueMicrotask(() => bytes.forEach((_b, i) => handlers.data(bytes.subarray(i, i + 1)))),
      close: () => undefined,
    });
    expect(await exchange({ connect, clock: fakeClock() }, '/x', BODY, 'b', WAIT)).toEqual({
      end: { exit: 0, stdout: 'é€' },
    });
  });

  it("answers a control request with the announcer's value, at once (no ack)", async () => {
    const { outcome } = await run((t) => t.socket.write(encodeReply({ control: { jobs: 2 } })));
    expect(await outcome).toEqual({ control: { jobs: 2 } });
  });

  it('reports a refusal with its reason', async () => {
    const { outcome, fake } = await run((t) => t.socket.write(encodeReply({ refused: 'handover' })));
    expect(await outcome).toEqual({ refused: 'handover' });
    await until(() => fake.taken[0]!.closed);
  });

  it('is hung when no end comes by the deadline, closes, and ignores a later line', async () => {
    let taken: Taken | undefined;
    const { outcome, clock } = await run((t) => {
      taken = t;
      t.socket.write(encodeReply({ ack: true }) + encodeReply({ beat: true }));
    });
    await until(() => taken !== undefined);
    fireOnly(clock, WAIT);
    expect(await outcome).toEqual({ hung: true });
    await until(() => taken!.closed);
  });

  it('is closed on EOF after the ack, before the end (the command may have run)', async () => {
    const { outcome } = await run((t) => t.socket.end(encodeReply({ ack: true })));
    expect(await outcome).toEqual({ closed: true });
  });

  it('is closed on EOF before any answer, once the announcer read the request', async () => {
    const { outcome } = await run((t) => t.socket.end());
    expect(await outcome).toEqual({ closed: true });
  });

  it('is closed on a line that is not the protocol', async () => {
    const { outcome } = await run((t) => t.socket.write(`${encodeReply({ ack: true })}garbage\n`));
    expect(await outcome).toEqual({ closed: true });
  });

  it('is reset, at once, when the connection is reset (ECONNRESET, EPIPE) before any answer', async () => {
    for (const code of ['ECONNRESET', 'EPIPE', 'EIO']) {
      const connect: ConnectUnix = async (_path, handlers) => ({
        write: () => queueMicrotask(() => handlers.error(new StreamError(`unix socket /x: ${code}`, code))),
        close: () => undefined,
      });
      const clock = fakeClock();
      expect(await exchange({ connect, clock }, '/x', BODY, 'b', WAIT)).toEqual(
        code === 'EIO' ? { closed: true } : { reset: true },
      );
      expect(clock.timers).toEqual([]);
    }
  });

  const backlogResetTitle =
    'is reset by a real announcer that closes its listening socket with the request unread in its backlog';
  it(backlogResetTitle, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shim-'));
    const path = join(dir, 'announcer.sock');
    // A listener that never accepts (node:net accepts at once): a Python one in a child process.
    const child = spawn('python3', [
      '-c',
      'import socket,sys,time\ns=socket.socket(socket.AF_UNIX);s.bind(sys.argv[1]);s.listen(4)\n' +
        'print("up",flush=True);sys.stdin.readline();s.close();time.sleep(5)',
      path,
    ]);
    try {
      await new Promise((resolve) => child.stdout.once('data', resolve));
      const outcome = exchange({ connect: connectUnix, clock: fakeClock() }, path, BODY, 'b', WAIT);
      await new Promise((resolve) => setTimeout(resolve, 100)); // connected, the request written, in the backlog
      child.stdin.write('\n');
      expect(await outcome).toEqual({ reset: true });
    } finally {
      child.kill('SIGKILL'); // the child this test started
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is unreachable, with the errno name, when connect fails', async () => {
    const clock = fakeClock();
    expect(await exchange({ connect: connectUnix, clock }, '/nonexistent/announcer.sock', BODY, 'b', WAIT)).toEqual({
      unreachable: 'ENOENT',
    });
    expect(clock.timers).toEqual([]);
  });

  it('is unreachable with ECONNREFUSED when nothing listens on the path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shim-'));
    try {
      writeFileSync(join(dir, 'announcer.sock'), '');
      expect(
        await exchange({ connect: connectUnix, clock: fakeClock() }, join(dir, 'announcer.sock'), BODY, 'b', WAIT),
      ).toEqual({ unreachable: 'ECONNREFUSED' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('replyOutcome', () => {
  it('ignores ack and beat (an older announcer writes them); takes the end, a refusal, a control answer', () => {
    expect(replyOutcome('{"ack":true}')).toBe('ignored');
    expect(replyOutcome('{"beat":true}')).toBe('ignored');
    expect(replyOutcome('{"refused":"x"}')).toEqual({ refused: 'x' });
    expect(replyOutcome('{"control":1}')).toEqual({ control: 1 });
    expect(replyOutcome('{"exit":0,"stdout":""}')).toEqual({ end: { exit: 0, stdout: '' } });
    expect(replyOutcome('nonsense')).toEqual({ closed: true });
  });
});
