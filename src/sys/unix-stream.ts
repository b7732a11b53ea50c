// The unix stream transport on Node (node:net): the twin the unit tests run. The compiled
// binary carries src/sys/unix-stream.bun.ts instead (scripts/build/plugin.ts takes it there),
// which takes this file's types (only types: the binary never loads this file).
import { connect } from 'node:net';
import { streamError, type StreamError } from './sys-error';

/** What a connection reports: bytes as they come, the peer's end of stream, an error after connecting. */
export interface StreamHandlers {
  data(chunk: Uint8Array): void;
  end(): void;
  error(err: StreamError): void;
}

/** A connected stream: write queues all of `text` (never partial), close drops the socket at once. */
export interface Connection {
  write(text: string): void;
  close(): void;
}

/** Connects to the unix stream socket at `path`; rejects with a StreamError (ENOENT, ECONNREFUSED, EAGAIN...). */
export type ConnectUnix = (path: string, handlers: StreamHandlers) => Promise<Connection>;

/** Connects to the unix stream socket at `path` (see ConnectUnix). */
export function connectUnix(path: string, handlers: StreamHandlers): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const socket = connect({ path });
    let connected = false;
    socket.on('error', (err) => {
      const e = streamError(connected ? `unix socket ${path}` : `connect ${path}`, err);
      if (connected) handlers.error(e);
      else reject(e);
    });
    socket.once('connect', () => {
      connected = true;
      socket.on('data', (chunk: Buffer) => handlers.data(chunk));
      socket.on('end', () => handlers.end());
      resolve({ write: (text) => void socket.write(text), close: () => void socket.destroy() });
    });
  });
}
