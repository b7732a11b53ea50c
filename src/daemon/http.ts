// The announcer's HTTP endpoint (--listen), served by its one poll(2) loop
// like its unix socket: the listening TCP socket and the connections are
// polled with the rest, so a scrape is answered in the turn it arrives in,
// the idle loop wakes no more often than without it, and a /healthz answer
// proves the loop itself turns. Bounded: MAX_CONNECTIONS at once (more are
// closed at accept), MAX_HEAD_BYTES per request, REQUEST_MS to send it (a slow
// client is dropped), WRITE_MS to take the answer.
//
// It speaks a little HTTP/1.x: one request per connection, its head read whole (bounded), the answer carrying
// `Connection: close`. /metrics: the registry's text; /healthz: `ok` while the loop turns and listens on its socket
// (it is the loop that answers), 503 while it hands over or stops.
import type { TcpAddress } from '../sys/tcp-socket';
import type { Announcer } from './daemon';
import { Endpoint, sendSome } from './server';

/** Connections served at once. */
export const MAX_CONNECTIONS = 16;
/** A connection whose request head is not in within this is dropped. */
export const REQUEST_MS = 5000;
/** A connection that has not taken its whole answer within this is dropped. */
export const WRITE_MS = 5000;
const BACKLOG = 64;

interface Client {
  fd: number;
  /** Boot ms by which the request must be in, or the answer out. */
  until: number;
  inbound: Buffer;
  /** undefined while the request is read; then the bytes left to send (empty while the answer is made). */
  outbound?: Buffer;
}

/** The listening socket and its connections. */
export class HttpEndpoint extends Endpoint<Client> {
  private readonly scratch = Buffer.alloc(MAX_HEAD_BYTES + 1);

  private constructor(
    a: Announcer,
    private readonly state: EndpointState,
    private readonly listenFd: number,
    /** The port it listens on (the kernel's pick for port 0). */
    readonly port: number,
  ) {
    super(a, {
      accept: 'cannot accept an HTTP connection',
      failed: 'HTTP connection failed',
      close: 'cannot close an HTTP socket',
    });
  }

  /**
   * Listens on `address`; when it cannot (EADDRINUSE, EACCES), says so (a.failed) and throws HttpListenError.
   */
  static listen(a: Announcer, address: TcpAddress, state: EndpointState): HttpEndpoint {
    try {
      const { fd, port } = a.libc.listenTcp(address, BACKLOG);
      a.log.info('serving /metrics and /healthz', { port });
      return new HttpEndpoint(a, state, fd, port);
    } catch (err) {
      a.failed('cannot listen for HTTP', err);
      throw new HttpListenError(err);
    }
  }

  /**
   * The sockets to poll for input: the listening one (unless paused), and the connections whose request is still
   * coming.
   */
  fds(): number[] {
    const reading = [...this.clients].filter((c) => c.outbound === undefined).map((c) => c.fd);
    return [...this.accepting(this.listenFd), ...reading];
  }

  /** The connections whose answer waits for room in their socket. */
  writeFds(): number[] {
    return [...this.clients].filter((c) => c.outbound !== undefined && c.outbound.length > 0).map((c) => c.fd);
  }

  /** When the next connection times out or accepting resumes (boot ms); Infinity with none. */
  wakeAt(): number {
    return Math.min(this.acceptResumesAt(), ...[...this.clients].map((c) => c.until));
  }

  /** Accepts, reads requests, writes answers, drops connections past their time. */
  serve(readable: ReadonlySet<number>, writable: ReadonlySet<number>): void {
    const known = [...this.clients];
    if (readable.has(this.listenFd))
      this.acceptAll(
        () => this.a.libc.acceptTcp(this.listenFd),
        (fd) => this.take(fd),
      );
    const now = this.a.timers.bootMs();
    for (const c of known) {
      if (c.outbound === undefined && readable.has(c.fd)) this.guarded(c, () => this.read(c));
      // An answer still being made has no bytes yet: a flush would take it for sent and drop the client.
      else if (c.outbound !== undefined && c.outbound.length > 0 && writable.has(c.fd))
        this.guarded(c, () => this.flush(c));
      if (this.clients.has(c) && now >= c.until) this.drop(c);
    }
  }

  /** Closes every connection and the listening socket. */
  close(): void {
    for (const c of [...this.clients]) this.drop(c);
    this.closeQuietly(this.listenFd);
  }

  /** Serves an accepted connection, unless MAX_CONNECTIONS are served already (it is closed). */
  private take(fd: number): void {
    if (this.clients.size >= MAX_CONNECTIONS) return this.closeQuietly(fd);
    const c: Client = { fd, until: this.a.timers.bootMs() + REQUEST_MS, inbound: Buffer.alloc(0) };
    this.clients.add(c);
    this.guarded(c, () => this.read(c)); // the request usually came with the connection: no turn waits for it
  }

  private read(c: Client): void {
    for (;;) {
      const n = this.a.libc.recvNow(c.fd, this.scratch);
      if (n === undefined) return;
      if (n === 0) return this.drop(c); // gone before its request was in
      c.inbound = Buffer.concat([c.inbound, this.scratch.subarray(0, n)]);
      const end = headEnd(c.inbound);
      if (end < 0 && c.inbound.length <= MAX_HEAD_BYTES) continue;
      if (end < 0 || end > MAX_HEAD_BYTES)
        return this.answer(c, Promise.resolve(textAnswer(431, 'request head too large\n')), false);
      const head = parseHead(c.inbound.subarray(0, end));
      if ('status' in head) return this.answer(c, Promise.resolve(head), false);
      return this.answer(c, route(head.method, head.path, this.state), head.method === 'HEAD');
    }
  }

  /** Stops reading `c` and sends `answer` once it is made; the connection ends once it is out. */
  private answer(c: Client, answer: Promise<HttpAnswer>, headOnly: boolean): void {
    c.outbound = Buffer.alloc(0);
    c.inbound = Buffer.alloc(0);
    answer
      .catch((err: unknown) => {
        this.a.failed('cannot answer an HTTP request', err);
        return textAnswer(500, 'internal error\n');
      })
      .then((made) => {
        if (!this.clients.has(c)) return;
        c.outbound = responseBytes(made, headOnly);
        c.until = this.a.timers.bootMs() + WRITE_MS;
        this.guarded(c, () => this.flush(c));
      });
  }

  private flush(c: Client): void {
    c.outbound = sendSome(this.a.libc, c.fd, c.outbound!);
    if (c.outbound.length === 0) this.drop(c);
  }
}

/** The announcer could not listen on its --listen address: it exits non-zero (a DaemonSet restarts it). */
export class HttpListenError extends Error {
  override name = 'HttpListenError';
  constructor(cause: unknown) {
    super(`cannot listen for HTTP: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** The most bytes a request head may take (request line and headers). */
export const MAX_HEAD_BYTES = 8 * 1024;

/** An answer: status, Content-Type and body. */
export interface HttpAnswer {
  status: number;
  contentType: string;
  body: string;
}

const REASONS: Readonly<Record<number, string>> = {
  200: 'OK',
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** A plain-text answer. */
export function textAnswer(status: number, body: string): HttpAnswer {
  return { status, contentType: 'text/plain; charset=utf-8', body };
}

/** Where the request head ends in `bytes` (the index past its blank line), or -1 while it is still coming. */
export function headEnd(bytes: Buffer): number {
  const at = bytes.indexOf('\r\n\r\n');
  if (at >= 0) return at + 4;
  const bare = bytes.indexOf('\n\n'); // a client that ends lines with LF alone (RFC 9112 §2.2 lets a server take it)
  return bare >= 0 ? bare + 2 : -1;
}

/** The method and path (query string left out) of a request head, or the answer to a malformed one. */
export function parseHead(head: Buffer): { method: string; path: string } | HttpAnswer {
  const line = head.toString('latin1').split(/\r?\n/, 1)[0]!;
  const match = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(line);
  if (!match) return textAnswer(400, 'bad request\n');
  return { method: match[1]!, path: match[2]!.split('?', 1)[0]! };
}

/** The bytes of `answer` as an HTTP/1.1 response that closes the connection (`headOnly`: for HEAD, no body). */
export function responseBytes(answer: HttpAnswer, headOnly = false): Buffer {
  const body = Buffer.from(answer.body, 'utf8');
  const head = [
    `HTTP/1.1 ${answer.status} ${REASONS[answer.status] ?? 'Unknown'}`,
    `Content-Type: ${answer.contentType}`,
    `Content-Length: ${body.length}`,
    ...(answer.status === 405 ? ['Allow: GET, HEAD'] : []),
    'Connection: close',
    '',
    '',
  ].join('\r\n');
  return headOnly ? Buffer.from(head, 'latin1') : Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** What the answers are made of. */
export interface EndpointState {
  /** Whether the announcer serves: listening on its socket, not handing over nor stopping. */
  healthy(): boolean;
  metrics: { readonly contentType: string; text(): Promise<string> };
}

/** The answer to `method` `path`. */
export async function route(method: string, path: string, state: EndpointState): Promise<HttpAnswer> {
  if (path !== '/metrics' && path !== '/healthz') return textAnswer(404, 'not found\n');
  if (method !== 'GET' && method !== 'HEAD') return textAnswer(405, 'method not allowed\n');
  if (path === '/healthz') return state.healthy() ? textAnswer(200, 'ok\n') : textAnswer(503, 'unavailable\n');
  return { status: 200, contentType: state.metrics.contentType, body: await state.metrics.text() };
}
