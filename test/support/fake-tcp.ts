// TCP on top of FakeSockets: a listener per port, clients that connect, send a
// request and read what came back, for the announcer's HTTP endpoint without a kernel.
import type { TcpSockets } from '../../src/sys/tcp-socket';
import type { UnixSockets } from '../../src/sys/unix-socket';
import type { FakeSockets } from './fake-sockets';

/** The port listenTcp gives for port 0. */
export const PICKED_PORT = 40123;

/** The TCP calls and stream calls of the HTTP endpoint over `sockets`; a listener's "path" is `tcp:PORT`. */
export function fakeTcp(sockets: FakeSockets): TcpSockets & Pick<UnixSockets, 'send' | 'recvNow' | 'close'> {
  return {
    listenTcp: (address) => {
      const port = address.port || PICKED_PORT;
      return { fd: sockets.listen(`tcp:${port}`), port };
    },
    acceptTcp: (fd) => sockets.accept(fd)?.fd,
    send: (fd, bytes) => sockets.send(fd, bytes),
    recvNow: (fd, buf) => sockets.recvNow(fd, buf),
    close: (fd) => sockets.close(fd),
  };
}

/** A client of `port`: it sends `request` (what fits) at once; `read()` gathers the answer until the server closes. */
export class HttpClient {
  readonly fd: number;
  answer = '';
  ended = false;

  constructor(
    private readonly sockets: FakeSockets,
    port: number,
    request?: string,
  ) {
    this.fd = sockets.connect(`tcp:${port}`);
    if (request !== undefined) sockets.send(this.fd, Buffer.from(request));
  }

  /** Reads what came; true once the server closed. */
  read(): boolean {
    const buf = Buffer.alloc(64 * 1024);
    for (
      let n = this.sockets.recvNow(this.fd, buf);
      n !== undefined && !this.ended;
      n = this.sockets.recvNow(this.fd, buf)
    ) {
      if (n === 0) this.ended = true;
      else this.answer += buf.subarray(0, n).toString('utf8');
    }
    return this.ended;
  }

  /** The status code, or undefined before an answer. */
  get status(): number | undefined {
    const m = /^HTTP\/1\.1 (\d{3}) /.exec(this.answer);
    return m ? Number(m[1]) : undefined;
  }

  /** The body (after the blank line). */
  get body(): string {
    return this.answer.slice(this.answer.indexOf('\r\n\r\n') + 4);
  }

  /** A header's value. */
  header(name: string): string | undefined {
    return new RegExp(`^${name}: (.*)\\r$`, 'im').exec(this.answer)?.[1];
  }
}
