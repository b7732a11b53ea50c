// The unix stream transport on Node (node:net): the twin the unit tests run. The compiled
// binary carries src/sys/unix-stream.bun.ts instead (scripts/build/plugin.ts takes it there).
import { connect } from 'node:net';
import { streamError, type Connection, type StreamHandlers } from './stream-connection';

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
