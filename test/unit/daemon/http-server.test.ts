// The announcer's HTTP endpoint through in-memory sockets: the routes, the
// answers' bytes, and its bounds (connections, request size, slow clients,
// clients that do not read), with a manual boot clock.
import { beforeEach, describe, expect, it } from 'vitest';
import { headEnd, parseHead, responseBytes, textAnswer } from '../../../src/daemon/http-request';
import { route, type EndpointState } from '../../../src/daemon/http-routes';
import {
  HttpEndpoint,
  HttpListenError,
  MAX_CONNECTIONS,
  REQUEST_MS,
  WRITE_MS,
  type HttpDeps,
} from '../../../src/daemon/http-server';
import { MAX_HEAD_BYTES } from '../../../src/daemon/http-request';
import { errnoNumber } from '../../../src/sys/sys-error';
import { SysError } from '../../../src/sys/sys-error';
import { parseListenAddress } from '../../../src/sys/tcp-socket';
import { silentLogger } from '../../../src/log';
import { FakeSockets } from '../../support/fake-sockets';
import { fakeTcp, HttpClient, PICKED_PORT } from '../../support/fake-tcp';

const METRICS = {
  contentType: 'text/plain; version=0.0.4; charset=utf-8',
  text: async () => 'cni_announcer_errors_total 3\n',
};

describe('http-request', () => {
  it('finds the end of a head (CRLF CRLF, or LF LF), or says it is still coming', () => {
    expect(headEnd(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\nrest'))).toBe(27);
    expect(headEnd(Buffer.from('GET / HTTP/1.0\n\n'))).toBe(16);
    expect(headEnd(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n'))).toBe(-1);
  });

  it('takes the method and the path without its query; anything else is 400', () => {
    expect(parseHead(Buffer.from('GET /metrics?x=1 HTTP/1.1\r\n\r\n'))).toEqual({ method: 'GET', path: '/metrics' });
    for (const bad of [
      'GET /metrics\r\n\r\n',
      'GET  /m HTTP/1.1\r\n\r\n',
      'get / HTTP/1.1\r\n\r\n',
      'GET / HTTP/2\r\n\r\n',
      '\x16\x03\x01\r\n\r\n',
    ]) {
      expect(parseHead(Buffer.from(bad)), bad).toMatchObject({ status: 400 });
    }
  });

  it('writes a response that closes the connection, with its length (in bytes) and, for HEAD, no body', () => {
    const bytes = responseBytes(textAnswer(200, 'é\n')).toString('latin1');
    expect(bytes).toBe(
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

  it('/metrics: the registry text with its content type; /healthz: ok while healthy, 503 otherwise', async () => {
    expect(await route('GET', '/metrics', state(true))).toEqual({
      status: 200,
      contentType: METRICS.contentType,
      body: 'cni_announcer_errors_total 3\n',
    });
    expect(await route('GET', '/healthz', state(true))).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await route('GET', '/healthz', state(false))).toMatchObject({ status: 503 });
    // metrics stay readable while handing over
    expect(await route('GET', '/metrics', state(false))).toMatchObject({ status: 200 });
  });

  it('404 for any other path, 405 for a method other than GET and HEAD', async () => {
    for (const path of ['/', '/metrics/', '/healthz.txt', '/../metrics'])
      expect((await route('GET', path, state(true))).status, path).toBe(404);
    expect((await route('POST', '/metrics', state(true))).status).toBe(405);
    expect((await route('HEAD', '/healthz', state(true))).status).toBe(200);
  });
});

describe('HttpEndpoint', () => {
  let sockets: FakeSockets;
  let now: number;
  let healthy: boolean;
  let failures: string[];
  let endpoint: HttpEndpoint;

  const deps = (): HttpDeps => ({
    address: parseListenAddress('127.0.0.1:0'),
    sockets: fakeTcp(sockets),
    log: silentLogger,
    bootMs: () => now,
    failed: (what, err) => void failures.push(`${what}: ${(err as Error).message}`),
  });

  /** One turn of the loop: poll (the fake sockets say what is ready), serve, and let answers being made go out. */
  async function turn(): Promise<void> {
    const fds = endpoint.fds();
    const writeFds = endpoint.writeFds();
    endpoint.serve(
      new Set(fds.filter((fd) => sockets.readable(fd))),
      new Set(writeFds.filter((fd) => sockets.writable(fd))),
    );
    await new Promise((resolve) => setImmediate(resolve));
  }

  beforeEach(() => {
    sockets = new FakeSockets();
    now = 1_000;
    healthy = true;
    failures = [];
    endpoint = HttpEndpoint.listen(deps(), { healthy: () => healthy, metrics: METRICS });
  });

  const listensOnPortTitle =
    'listens on the port the kernel picked and answers /metrics and /healthz ' +
    'in the turn the request came in, then closes';
  it(listensOnPortTitle, async () => {
    expect(endpoint.port).toBe(PICKED_PORT);
    const metrics = new HttpClient(sockets, PICKED_PORT, 'GET /metrics HTTP/1.1\r\nHost: node\r\nAccept: */*\r\n\r\n');
    const health = new HttpClient(sockets, PICKED_PORT, 'GET /healthz HTTP/1.0\r\n\r\n');
    await turn();
    expect([metrics.read(), health.read()]).toEqual([true, true]);
    expect(metrics.status).toBe(200);
    expect(metrics.header('Content-Type')).toBe(METRICS.contentType);
    expect(metrics.body).toBe('cni_announcer_errors_total 3\n');
    expect([health.status, health.body]).toEqual([200, 'ok\n']);
    healthy = false;
    const later = new HttpClient(sockets, PICKED_PORT, 'GET /healthz HTTP/1.1\r\n\r\n');
    await turn();
    later.read();
    expect(later.status).toBe(503);
    expect(endpoint.fds()).toEqual([endpoint.fds()[0]]); // only the listening socket is left
    expect(endpoint.wakeAt()).toBe(Infinity);
    expect(failures).toEqual([]);
  });

  const readsRequestThatTitle =
    'reads a request that comes in pieces, and answers malformed, unknown and oversized ones with 400, 404 and 431';
  it(readsRequestThatTitle, async () => {
    const pieces = new HttpClient(sockets, PICKED_PORT, 'GET /hea');
    await turn();
    sockets.send(pieces.fd, Buffer.from('lthz HTTP/1.1\r\n\r\n'));
    const garbage = new HttpClient(sockets, PICKED_PORT, 'hello\r\n\r\n');
    const unknown = new HttpClient(sockets, PICKED_PORT, 'GET /debug/pprof HTTP/1.1\r\n\r\n');
    const huge = new HttpClient(
      sockets,
      PICKED_PORT,
      `GET /metrics HTTP/1.1\r\nX: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`,
    );
    // no end: not kept growing
    const endless = new HttpClient(sockets, PICKED_PORT, `GET /metrics HTTP/1.1\r\nX: ${'a'.repeat(MAX_HEAD_BYTES)}`);
    await turn();
    const all = [pieces, garbage, unknown, huge, endless];
    for (const c of all) c.read();
    expect(all.map((c) => c.status)).toEqual([200, 400, 404, 431, 431]);
    expect(all.every((c) => c.ended)).toBe(true);
  });

  const dropsClientThatTitle =
    'drops a client that has not sent its whole request within REQUEST_MS (slowloris), and one that left';
  it(dropsClientThatTitle, async () => {
    const slow = new HttpClient(sockets, PICKED_PORT, 'GET /metrics HTTP/1.1\r\nX-a: 1\r\n');
    const silent = new HttpClient(sockets, PICKED_PORT);
    const gone = new HttpClient(sockets, PICKED_PORT);
    await turn();
    sockets.close(gone.fd);
    await turn();
    expect(endpoint.fds()).toHaveLength(3); // the listener, slow and silent
    expect(endpoint.wakeAt()).toBe(1_000 + REQUEST_MS);
    now += REQUEST_MS - 1;
    sockets.send(slow.fd, Buffer.from('X-b: 2\r\n'));
    await turn();
    expect([slow.read(), silent.read()]).toEqual([false, false]);
    now += 1;
    await turn();
    expect([slow.read(), silent.read()]).toEqual([true, true]);
    expect(slow.answer).toBe('');
    expect(endpoint.fds()).toHaveLength(1);
  });

  it(`serves ${MAX_CONNECTIONS} connections at once and closes more at accept`, async () => {
    const held = Array.from({ length: MAX_CONNECTIONS }, () => new HttpClient(sockets, PICKED_PORT));
    const extra = new HttpClient(sockets, PICKED_PORT, 'GET /healthz HTTP/1.1\r\n\r\n');
    await turn();
    expect(extra.read()).toBe(true);
    expect(extra.answer).toBe('');
    expect(held.some((c) => c.read())).toBe(false);
    expect(endpoint.fds()).toHaveLength(1 + MAX_CONNECTIONS);
  });

  const writesAnswerSocketTitle =
    'writes an answer the socket cannot take at once as room comes, and drops a ' +
    'client that takes none of it within WRITE_MS';
  it(writesAnswerSocketTitle, async () => {
    sockets.room = 40;
    const reader = new HttpClient(sockets, PICKED_PORT);
    const stuck = new HttpClient(sockets, PICKED_PORT);
    await turn();
    now += 3000; // WRITE_MS counts from the answer, not from the connection
    for (const c of [reader, stuck]) sockets.send(c.fd, Buffer.from('GET /metrics HTTP/1.1\r\n\r\n'));
    await turn();
    expect(endpoint.writeFds()).toHaveLength(2);
    for (let i = 0; i < 10 && !reader.ended; i++) {
      reader.read();
      await turn();
    }
    expect(reader.read()).toBe(true);
    expect(reader.body).toBe('cni_announcer_errors_total 3\n');
    expect(endpoint.writeFds()).toHaveLength(1);
    expect(endpoint.wakeAt()).toBe(4_000 + WRITE_MS);
    now += WRITE_MS - 1;
    await turn();
    expect(endpoint.writeFds()).toHaveLength(1);
    now += 1;
    await turn();
    expect(endpoint.writeFds()).toEqual([]);
    expect(stuck.read()).toBe(true); // closed, with what its socket took
    expect(stuck.answer).toHaveLength(40);
  });

  const stopsAcceptingForTitle =
    'stops accepting for a moment when accept fails (EMFILE), instead of spinning on the listening socket';
  it(stopsAcceptingForTitle, async () => {
    const tcp = fakeTcp(sockets);
    const failing: HttpDeps = {
      ...deps(),
      address: parseListenAddress('127.0.0.1:9000'),
      sockets: {
        ...tcp,
        acceptTcp: () => {
          throw new SysError('accept', errnoNumber('EMFILE')!);
        },
      },
    };
    const e = HttpEndpoint.listen(failing, { healthy: () => true, metrics: METRICS });
    new HttpClient(sockets, 9000, 'GET /healthz HTTP/1.1\r\n\r\n');
    const listening = e.fds();
    e.serve(new Set(listening), new Set());
    expect(e.fds()).toEqual([]);
    expect(e.wakeAt()).toBe(now + 100);
    now += 100;
    expect(e.fds()).toEqual(listening);
    expect(failures).toEqual(['cannot accept an HTTP connection: not accepting for 100 ms: accept: EMFILE']);
  });

  const readsHeadOfTitle =
    `reads a head of up to MAX_HEAD_BYTES (${MAX_HEAD_BYTES}) bytes, waits while one of that size has not ` +
    `ended, and answers 431 past it`;
  it(readsHeadOfTitle, async () => {
    const head = (size: number): string => {
      const start = 'GET /nowhere HTTP/1.1\r\nX: ';
      return `${start}${'a'.repeat(size - start.length - 4)}\r\n\r\n`;
    };
    const fits = new HttpClient(sockets, PICKED_PORT, head(MAX_HEAD_BYTES));
    const over = new HttpClient(sockets, PICKED_PORT, head(MAX_HEAD_BYTES + 1));
    // its end not in yet
    const unended = new HttpClient(sockets, PICKED_PORT, head(MAX_HEAD_BYTES + 4).slice(0, MAX_HEAD_BYTES));
    await turn();
    expect([fits.read(), over.read(), unended.read()]).toEqual([true, true, false]);
    expect([fits.status, over.status]).toEqual([404, 431]);
  });

  const whileAnswerIsTitle =
    'while an answer is being made, reads nothing more from that client and polls it ' +
    'for nothing; one that timed out meanwhile gets nothing';
  it(whileAnswerIsTitle, async () => {
    const pending: (() => void)[] = [];
    const slowMetrics = {
      contentType: METRICS.contentType,
      text: () => new Promise<string>((resolve) => pending.push(() => resolve('m 1\n'))),
    };
    endpoint.close();
    endpoint = HttpEndpoint.listen(deps(), { healthy: () => true, metrics: slowMetrics });
    const late = new HttpClient(sockets, PICKED_PORT, 'GET /metrics HTTP/1.1\r\n\r\n');
    await turn();
    now += REQUEST_MS - 1;
    const waiting = new HttpClient(sockets, PICKED_PORT, 'GET /metrics HTTP/1.1\r\n\r\n');
    await turn();
    expect(pending).toHaveLength(2);
    expect(endpoint.fds()).toHaveLength(1); // the listener alone: neither client is read again
    expect(endpoint.writeFds()).toEqual([]); // nothing to write yet
    sockets.send(waiting.fd, Buffer.from('GET /healthz HTTP/1.1\r\n\r\n'));
    const every = new Set(Array.from({ length: 256 }, (_, fd) => fd));
    endpoint.serve(every, every); // even when poll says every fd is ready
    expect(pending).toHaveLength(2);
    now += 1; // `late` times out before its answer is made
    await turn();
    expect([late.read(), waiting.read()]).toEqual([true, false]);
    for (const resolve of pending) resolve();
    await turn();
    expect(waiting.read()).toBe(true);
    expect([waiting.status, waiting.body]).toEqual([200, 'm 1\n']);
    expect(late.answer).toBe('');
    expect(failures).toEqual([]);
  });

  it('drops a client that left (EPIPE, ECONNRESET) quietly, and reports any other failure of its socket', async () => {
    const tcp = fakeTcp(sockets);
    let errno = 'EPIPE';
    const throwing: HttpDeps = {
      ...deps(),
      address: parseListenAddress('127.0.0.1:9001'),
      sockets: {
        ...tcp,
        send: () => {
          throw new SysError('send', errnoNumber(errno)!);
        },
      },
    };
    const e = HttpEndpoint.listen(throwing, { healthy: () => true, metrics: METRICS });
    const serveOnce = async (): Promise<void> => {
      e.serve(new Set(e.fds()), new Set());
      await new Promise((resolve) => setImmediate(resolve));
    };
    const first = new HttpClient(sockets, 9001, 'GET /healthz HTTP/1.1\r\n\r\n');
    await serveOnce();
    expect(first.read()).toBe(true);
    errno = 'EIO';
    const second = new HttpClient(sockets, 9001, 'GET /healthz HTTP/1.1\r\n\r\n');
    await serveOnce();
    expect(second.read()).toBe(true);
    expect(failures).toEqual(['HTTP connection failed: send: EIO']);
    expect(e.fds()).toHaveLength(1);
  });

  it('reports a close that fails, and goes on', () => {
    const tcp = fakeTcp(sockets);
    const e = HttpEndpoint.listen(
      {
        ...deps(),
        address: parseListenAddress('127.0.0.1:9002'),
        sockets: {
          ...tcp,
          close: () => {
            throw new SysError('close', errnoNumber('EIO')!);
          },
        },
      },
      { healthy: () => true, metrics: METRICS },
    );
    e.close();
    expect(failures).toEqual(['cannot close an HTTP socket: close: EIO']);
  });

  it('a bind that fails is reported and thrown as HttpListenError, its cause kept; close() closes everything', () => {
    const busy = { ...deps(), address: parseListenAddress(`127.0.0.1:${PICKED_PORT}`) };
    const thrown = (() => {
      try {
        HttpEndpoint.listen(busy, { healthy: () => true, metrics: METRICS });
      } catch (err) {
        return err;
      }
    })();
    expect(thrown).toBeInstanceOf(HttpListenError);
    expect((thrown as HttpListenError).message).toMatch(/^cannot listen for HTTP: bind tcp:40123: EADDRINUSE/);
    expect((thrown as Error).cause).toBeInstanceOf(SysError);
    expect(failures).toHaveLength(1);
    const open = new HttpClient(sockets, PICKED_PORT);
    endpoint.serve(new Set(endpoint.fds()), new Set());
    endpoint.close();
    expect(sockets.paths).toEqual([]);
    expect(open.read()).toBe(true);
  });
});
