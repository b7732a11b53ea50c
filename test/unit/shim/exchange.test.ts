// The exchange against a fake announcer on a real unix socket (the node:net twin), with a clock
// whose timers fire when the test says: no test waits for ACK_MS or SILENCE_MS to pass.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { exchange, replyOutcome, type Outcome } from '../../../src/shim/exchange';
import { ACK_MS, SILENCE_MS, WIRE_VERSION, encodeReply } from '../../../src/shim/wire';
import type { ConnectUnix } from '../../../src/sys/stream-connection';
import { connectUnix } from '../../../src/sys/unix-stream';
import { fakeAnnouncer, fakeClock, fireOnly, until, type FakeAnnouncer, type Taken } from './fakes';

let announcer: FakeAnnouncer | undefined;
afterEach(async () => {
  await announcer?.stop();
  announcer = undefined;
});

const BODY = { cni: { env: { CNI_COMMAND: 'ADD' }, stdin: '{"cniVersion":"1.0.0"}\n' } };

/** Runs one exchange against a fake announcer answering with `answer`. */
async function run(
  answer: (t: Taken) => void,
  clock = fakeClock(),
): Promise<{ outcome: Promise<Outcome>; clock: ReturnType<typeof fakeClock>; fake: FakeAnnouncer }> {
  announcer = await fakeAnnouncer(answer);
  const outcome = exchange({ connect: connectUnix, clock }, announcer.path, BODY, 'build-1');
  return { outcome, clock, fake: announcer };
}

// A mutant that never settles fails at the timeout, not after vitest's minute.
describe('exchange', { timeout: 5000 }, () => {
  it('sends one request line: version, build, ackBy = now at the write + ACK_MS, and the body', async () => {
    const clock = fakeClock(5000);
    const { outcome, fake } = await run(
      (t) => t.socket.write(encodeReply({ ack: true }) + encodeReply({ exit: 0, stdout: 'ok' })),
      clock,
    );
    await outcome;
    expect(fake.taken.map((t) => t.request)).toEqual([
      { v: WIRE_VERSION, build: 'build-1', ackBy: 5000 + ACK_MS, ...BODY },
    ]);
  });

  it("ends with the command's stdout and exit status, after beats, and closes the socket", async () => {
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
    expect(await exchange({ connect, clock: fakeClock() }, '/x', BODY, 'b')).toEqual({
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

  it('is hung when no ack comes within ACK_MS of the write, closes, and ignores a later ack', async () => {
    const { outcome, clock, fake } = await run(() => undefined);
    await until(() => fake.taken.length === 1);
    fireOnly(clock, ACK_MS);
    expect(await outcome).toEqual({ hung: true });
    await until(() => fake.taken[0]!.closed);
  });

  it('is hung after the ack when SILENCE_MS pass without a line; a beat restarts the wait', async () => {
    let taken: Taken | undefined;
    const { outcome, clock } = await run((t) => {
      taken = t;
      t.socket.write(encodeReply({ ack: true }));
    });
    await until(() => clock.timers[0]?.ms === SILENCE_MS);
    taken!.socket.write(encodeReply({ beat: true }));
    const first = clock.timers[0];
    await until(() => clock.timers[0] !== first);
    fireOnly(clock, SILENCE_MS);
    expect(await outcome).toEqual({ hung: true });
    await until(() => taken!.closed);
  });

  it('is dropped on EOF after the ack, before the end', async () => {
    const { outcome } = await run((t) => t.socket.end(encodeReply({ ack: true })));
    expect(await outcome).toEqual({ dropped: true });
  });

  it('is dropped on EOF before the ack (a request the announcer left unread)', async () => {
    const { outcome } = await run((t) => t.socket.end());
    expect(await outcome).toEqual({ dropped: true });
  });

  it('is dropped on a line that is not the protocol', async () => {
    const { outcome } = await run((t) => t.socket.write(`${encodeReply({ ack: true })}garbage\n`));
    expect(await outcome).toEqual({ dropped: true });
  });

  it('is unreachable, with the errno name, when connect fails', async () => {
    const clock = fakeClock();
    expect(await exchange({ connect: connectUnix, clock }, '/nonexistent/announcer.sock', BODY, 'b')).toEqual({
      unreachable: 'ENOENT',
    });
    expect(clock.timers).toEqual([]);
  });

  it('is unreachable with ECONNREFUSED when nothing listens on the path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shim-'));
    try {
      writeFileSync(join(dir, 'announcer.sock'), '');
      expect(
        await exchange({ connect: connectUnix, clock: fakeClock() }, join(dir, 'announcer.sock'), BODY, 'b'),
      ).toEqual({ unreachable: 'ECONNREFUSED' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('replyOutcome', () => {
  it('takes ack once, first; refused only before it; beat and the end only after it', () => {
    expect(replyOutcome('{"ack":true}', false)).toBe('ack');
    expect(replyOutcome('{"ack":true}', true)).toEqual({ dropped: true });
    expect(replyOutcome('{"refused":"x"}', false)).toEqual({ refused: 'x' });
    expect(replyOutcome('{"refused":"x"}', true)).toEqual({ dropped: true });
    expect(replyOutcome('{"beat":true}', false)).toEqual({ dropped: true });
    expect(replyOutcome('{"beat":true}', true)).toBe('beat');
    expect(replyOutcome('{"exit":0,"stdout":""}', false)).toEqual({ dropped: true });
    expect(replyOutcome('{"exit":0,"stdout":""}', true)).toEqual({ end: { exit: 0, stdout: '' } });
  });
});
