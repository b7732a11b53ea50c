// The announcer's HTTP endpoint through in-memory sockets: the routes, the answers' bytes, and its bounds
// (connections, request size, slow clients, clients that do not read), with a manual boot clock.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type EndpointState,
  headEnd,
  HttpEndpoint,
  HttpListenError,
  MAX_CONNECTIONS,
  MAX_HEAD_BYTES,
  parseHead,
  REQUEST_MS,
  responseBytes,
  route,
  textAnswer,
  WRITE_MS,
} from '../../../src/daemon/http';
import type { Announcer } from '../../../src/daemon/daemon';
import { parseListenAddress, type TcpAddress } from '../../../src/sys/tcp-socket';
import { errnoNumber, SysError } from '../../../src/sys/sys-error';
import { FakeSockets } from '../../support/fake-sockets';
import { testAnnouncer } from '../../support/announcer';
import { FakePod, makeStateDir, type StateDir } from '../../support/daemon-fakes';
import { fakeLibc } from '../../support/fake-libc';
import { fakeTcp, HttpClient, PICKED_PORT } from '../../support/fake-tcp';
import { ManualTimers } from '../../support/manual-timers';

const METRICS = {
  contentType: 'text/plain; version=0.0.4; charset=utf-8',
  text: async () => 'cni_announcer_errors_total 3\n',
};
const sysError = (errno: string) => new SysError('call', errnoNumber(errno)!);

describe('the HTTP/1.x it speaks', () => {
  it('finds the end of a head (CRLF CRLF, or LF LF), or says it is still coming', () => {
    const ends = ['GET / HTTP/1.1\r\nHost: x\r\n\r\nrest', 'GET / HTTP/1.0\n\n', 'GET / HTTP/1.1\r\nHost: x\r\n'];
    expect(ends.map((head) => headEnd(Buffer.from(head)))).toEqual([27, 16, -1]);
  });

  it('takes the method and the path without its query; anything else is 400', () => {
    expect(parseHead(Buffer.from('GET /metrics?x=1 HTTP/1.1\r\n\r\n'))).toEqual({ method: 'GET', path: '/metrics' });
    for (const bad of ['GET /metrics', 'GET  /m HTTP/1.1', 'get / HTTP/1.1', 'GET / HTTP/2', '\x16\x03\x01'])
      expect(parseHead(Buffer.from(`${bad}\r\n\r\n`)), bad).toMatchObject({ status: 400 });
  });

  it('writes a response that closes the connection, with its length (in bytes) and, for HEAD, no body', () => {
    expect(responseBytes(textAnswer(200, 'é\n')).toString('latin1')).toBe(
      'HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\nConnection: ' +
        'close\r\n\r\n\xc3\xa9\n',
    );
    expect(responseBytes(textAnswer(405, 'no\n'), true).toString()).toBe(
      'HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ' +
        '3\r\nAllow: GET, HEAD\r\nConnection: close\r\n\r\n',
    );
  });
});

describe('route', () => {
  const state = (healthy: boolean): EndpointState => ({ healthy: () => healthy, metrics: METRICS });

  it(
    '/metrics: the registry text with its content type (while ' +
      'handing over too); /healthz: ok while healthy, else 503',
    async () => {
      const metrics = { status: 200, contentType: METRICS.contentType, body: 'cni_announcer_errors_total 3\n' };
      const got = [await route('GET', '/metrics', state(true)), await route('GET', '/metrics', state(false))];
      expect(got).toEqual([metrics, metrics]);
      expect(await route('GET', '/healthz', state(true))).toMatchObject({ status: 200, body: 'ok\n' });
      expect(await route('GET', '/healthz', state(false))).toMatchObject({ status: 503 });
    },
  );

  it('404 for any other path, 405 for a method other than GET and HEAD', async () => {
    for (const path of ['/', '/metrics/', '/healthz.txt', '/../metrics'])
      expect((await route('GET', path, state(true))).status, path).toBe(404);
    const statuses = [await route('POST', '/metrics', state(true)), await route('HEAD', '/healthz', state(true))];
    expect(statuses.map((a) => a.status)).toEqual([405, 200]);
  });
});

describe('HttpEndpoint', () => {
  let sockets: FakeSockets;
  let now: number;
  let healthy: boolean;
  let failures: string[];
  let endpoint: HttpEndpoint;
  let state: StateDir;

  /** The announcer on the fake sockets and a manual boot clock, and 127.0.0.1:`port`; `over` replaces socket calls. */
  const deps = (port = 0, over: Partial<ReturnType<typeof fakeTcp>> = {}): { a: Announcer; address: TcpAddress } => ({
    a: testAnnouncer(state, new FakePod(), new ManualTimers(), {
      libc: fakeLibc({ ...fakeTcp(sockets), ...over }),
      timers: { now: () => now, bootMs: () => now, sleep: async () => undefined },
      failed: (what, err) => void failures.push(`${what}: ${(err as Error).message}`),
    }),
    address: parseListenAddress(`127.0.0.1:${port}`),
  });
  const listen = (d: ReturnType<typeof deps>, metrics: EndpointState['metrics'] = METRICS) =>
    HttpEndpoint.listen(d.a, d.address, { healthy: () => healthy, metrics });
  /** A client that sends `request` (a GET of it when it starts with '/'), at once. */
  const client = (request?: string, port = PICKED_PORT): HttpClient =>
    new HttpClient(sockets, port, request?.startsWith('/') ? `GET ${request} HTTP/1.1\r\n\r\n` : request);

  /** One turn of the loop: poll (the fake sockets say what is ready), serve, and let answers being made go out. */
  async function turn(e = endpoint): Promise<void> {
    const ready = (fds: number[], is: (fd: number) => boolean) => new Set(fds.filter(is));
    e.serve(
      ready(e.fds(), (fd) => sockets.readable(fd)),
      ready(e.writeFds(), (fd) => sockets.writable(fd)),
    );
    await new Promise((resolve) => setImmediate(resolve));
  }

  afterEach(() => state.remove());
  beforeEach(() => {
    state = makeStateDir();
    sockets = new FakeSockets();
    [now, healthy, failures] = [1_000, true, []];
    endpoint = listen(deps());
  });

  const listensTitle =
    'listens on the port the kernel picked and answers /metrics and /healthz in the turn the request came in, then ' +
    'closes';
  it(listensTitle, async () => {
    expect(endpoint.port).toBe(PICKED_PORT);
    const metrics = client('GET /metrics HTTP/1.1\r\nHost: node\r\nAccept: */*\r\n\r\n');
    const health = client('GET /healthz HTTP/1.0\r\n\r\n');
    await turn();
    expect([metrics.read(), health.read()]).toEqual([true, true]);
    const got = [metrics.status, metrics.header('Content-Type'), metrics.body];
    expect(got).toEqual([200, METRICS.contentType, 'cni_announcer_errors_total 3\n']);
    expect([health.status, health.body]).toEqual([200, 'ok\n']);
    healthy = false;
    const later = client('/healthz');
    await turn();
    later.read();
    expect(later.status).toBe(503);
    // Only the listening socket is left.
    expect([endpoint.fds(), endpoint.wakeAt(), failures]).toEqual([[endpoint.fds()[0]], Infinity, []]);
  });

  const readsTitle =
    `reads a request that comes in pieces, and a head of up to MAX_HEAD_BYTES (${MAX_HEAD_BYTES}) bytes (waiting ` +
    'while one of that size has not ended); answers malformed, unknown and oversized ones with 400, 404 and 431';
  it(readsTitle, async () => {
    const head = (size: number): string => {
      const start = 'GET /nowhere HTTP/1.1\r\nX: ';
      return `${start}${'a'.repeat(size - start.length - 4)}\r\n\r\n`;
    };
    const pieces = client('GET /hea');
    await turn();
    sockets.send(pieces.fd, Buffer.from('lthz HTTP/1.1\r\n\r\n'));
    const unended = client(head(MAX_HEAD_BYTES + 4).slice(0, MAX_HEAD_BYTES)); // its end not in yet
    const endless = client(`GET /metrics HTTP/1.1\r\nX: ${'a'.repeat(MAX_HEAD_BYTES)}`); // not kept growing
    const [bad, fits, over] = [client('hello\r\n\r\n'), client(head(MAX_HEAD_BYTES)), client(head(MAX_HEAD_BYTES + 1))];
    const all = [pieces, bad, fits, over, endless];
    await turn();
    for (const c of all) c.read();
    const seen = [all.map((c) => [c.status, c.ended]), unended.read()];
    expect(seen).toEqual([[200, 400, 404, 431, 431].map((s) => [s, true]), false]);
  });

  it(
    'drops a client that has not sent its whole request ' + 'within REQUEST_MS (slowloris), and one that left',
    async () => {
      const slow = client('GET /metrics HTTP/1.1\r\nX-a: 1\r\n');
      const silent = client();
      const gone = client();
      await turn();
      sockets.close(gone.fd);
      await turn();
      expect([endpoint.fds().length, endpoint.wakeAt()]).toEqual([3, 1_000 + REQUEST_MS]); // the listener, slow, silent
      now += REQUEST_MS - 1;
      sockets.send(slow.fd, Buffer.from('X-b: 2\r\n'));
      await turn();
      expect([slow.read(), silent.read()]).toEqual([false, false]);
      now += 1;
      await turn();
      expect([slow.read(), silent.read(), slow.answer, endpoint.fds().length]).toEqual([true, true, '', 1]);
    },
  );

  it(`serves ${MAX_CONNECTIONS} connections at once and closes more at accept`, async () => {
    const held = Array.from({ length: MAX_CONNECTIONS }, () => client());
    const extra = client('/healthz');
    await turn();
    expect([extra.read(), extra.answer, held.some((c) => c.read())]).toEqual([true, '', false]);
    expect(endpoint.fds()).toHaveLength(1 + MAX_CONNECTIONS);
  });

  const writesTitle =
    'writes an answer the socket cannot take at once as room comes, and drops a client that takes none of it within ' +
    'WRITE_MS';
  it(writesTitle, async () => {
    sockets.room = 40;
    const [reader, stuck] = [client(), client()];
    await turn();
    now += 3000; // WRITE_MS counts from the answer, not from the connection
    for (const c of [reader, stuck]) sockets.send(c.fd, Buffer.from('GET /metrics HTTP/1.1\r\n\r\n'));
    await turn();
    expect(endpoint.writeFds()).toHaveLength(2);
    for (let i = 0; i < 10 && !reader.ended; i++) {
      reader.read();
      await turn();
    }
    expect([reader.read(), reader.body]).toEqual([true, 'cni_announcer_errors_total 3\n']);
    expect([endpoint.writeFds().length, endpoint.wakeAt()]).toEqual([1, 4_000 + WRITE_MS]);
    now += WRITE_MS - 1;
    await turn();
    expect(endpoint.writeFds()).toHaveLength(1);
    now += 1;
    await turn();
    // Closed, with what its socket took.
    expect([endpoint.writeFds(), stuck.read(), stuck.answer.length]).toEqual([[], true, 40]);
  });

  it(
    'stops accepting for a moment when accept fails ' + '(EMFILE), instead of spinning on the listening socket',
    async () => {
      const e = listen(
        deps(9000, {
          acceptTcp: () => {
            throw sysError('EMFILE');
          },
        }),
      );
      client('/healthz', 9000);
      const listening = e.fds();
      e.serve(new Set(listening), new Set());
      expect([e.fds(), e.wakeAt()]).toEqual([[], now + 100]);
      now += 100;
      expect(e.fds()).toEqual(listening);
      expect(failures).toEqual(['cannot accept an HTTP connection: not accepting for 100 ms: call: EMFILE']);
    },
  );

  const makingTitle =
    'while an answer is being made, reads nothing more from that client and polls it for nothing; one that timed out ' +
    'meanwhile gets nothing';
  it(makingTitle, async () => {
    const pending: (() => void)[] = [];
    endpoint.close();
    endpoint = listen(deps(), {
      contentType: METRICS.contentType,
      text: () => new Promise<string>((resolve) => pending.push(() => resolve('m 1\n'))),
    });
    const late = client('/metrics');
    await turn();
    now += REQUEST_MS - 1;
    const waiting = client('/metrics');
    await turn();
    // The listener alone is polled: neither client is read again, and nothing is to be written yet.
    expect([pending.length, endpoint.fds().length, endpoint.writeFds()]).toEqual([2, 1, []]);
    sockets.send(waiting.fd, Buffer.from('GET /healthz HTTP/1.1\r\n\r\n'));
    const every = new Set(Array.from({ length: 256 }, (_, fd) => fd));
    endpoint.serve(every, every); // even when poll says every fd is ready
    expect(pending).toHaveLength(2);
    now += 1; // `late` times out before its answer is made
    await turn();
    expect([late.read(), waiting.read()]).toEqual([true, false]);
    for (const resolve of pending) resolve();
    await turn();
    expect([waiting.read(), waiting.status, waiting.body, late.answer, failures]).toEqual([true, 200, 'm 1\n', '', []]);
  });

  const failuresTitle =
    'drops a client that left (EPIPE, ECONNRESET) quietly, and reports any other failure of its socket; reports a ' +
    'close that fails, and goes on';
  it(failuresTitle, async () => {
    let errno = 'EPIPE';
    const e = listen(
      deps(9001, {
        send: () => {
          throw sysError(errno);
        },
        close: (fd) => {
          sockets.close(fd); // closed all the same, as close(2) does
          throw sysError('EIO');
        },
      }),
    );
    const first = client('/healthz', 9001);
    await turn(e);
    expect([first.read(), failures]).toEqual([true, ['cannot close an HTTP socket: call: EIO']]);
    errno = 'EIO';
    client('/healthz', 9001);
    await turn(e);
    expect(failures.slice(1)).toEqual(['HTTP connection failed: call: EIO', 'cannot close an HTTP socket: call: EIO']);
    expect(e.fds()).toHaveLength(1);
    e.close();
    expect(failures).toHaveLength(4);
  });

  it('a bind that fails is reported and thrown as HttpListenError, its cause kept; close() closes everything', () => {
    let thrown: unknown;
    try {
      listen(deps(PICKED_PORT));
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(HttpListenError);
    expect((thrown as HttpListenError).message).toMatch(/^cannot listen for HTTP: bind tcp:40123: EADDRINUSE/);
    expect([(thrown as Error).cause instanceof SysError, failures.length]).toEqual([true, 1]);
    const open = client();
    endpoint.serve(new Set(endpoint.fds()), new Set());
    endpoint.close();
    expect([sockets.paths, open.read()]).toEqual([[], true]);
  });
});
