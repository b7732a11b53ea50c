// The unix stream transport in the compiled binary: Bun.connect, which costs a run less time and
// memory than node:net (figures in docs/performance.md). Loaded only under Bun (scripts/build/plugin.ts
// resolves src/sys/unix-stream there in the binary); its twin, src/sys/unix-stream.ts, serves Node.
// Bun reports a reset (ECONNRESET) through `close` alone, never through `end` or `error`: `close` is
// wired, so a connection the peer reset is heard at once.
import { streamError } from './sys-error';
import type { Connection, StreamHandlers } from './unix-stream';

/** The little of Bun's socket this module uses (the project's types are Node's). */
interface BunSocket {
  write(data: Uint8Array): number;
  terminate(): void;
}

interface BunSocketHandlers {
  data(socket: BunSocket, data: Uint8Array): void;
  drain(socket: BunSocket): void;
  end(socket: BunSocket): void;
  error(socket: BunSocket, err: Error): void;
  close(socket: BunSocket, err?: Error): void;
}

interface BunGlobal {
  connect(options: { unix: string; socket: BunSocketHandlers }): Promise<BunSocket>;
}

/** Connects to the unix stream socket at `path` (see ConnectUnix). */
export async function connectUnix(path: string, handlers: StreamHandlers): Promise<Connection> {
  const bun = (globalThis as { Bun?: BunGlobal }).Bun;
  if (bun === undefined) throw streamError(`connect ${path}`, new Error('Bun.connect needs the Bun runtime'));
  // Bun writes what the kernel takes at once; the rest waits for `drain`.
  let pending: Uint8Array = new Uint8Array(0);
  let closed = false;
  const flush = (socket: BunSocket): void => {
    while (pending.length > 0 && !closed) {
      const n = socket.write(pending);
      if (n <= 0) return;
      pending = pending.subarray(n);
    }
  };
  // Nothing is said once this side closed.
  const ended = () => !closed && handlers.end();
  const failed = (err: Error) => !closed && handlers.error(streamError(`unix socket ${path}`, err));
  let socket: BunSocket;
  try {
    socket = await bun.connect({
      unix: path,
      socket: {
        data: (_s, data) => !closed && handlers.data(data),
        drain: flush,
        end: ended,
        error: (_s, err) => failed(err),
        // After `end` or `error` this repeats what was said, which the handlers ignore.
        close: (_s, err) => (err ? failed(err) : ended()),
      },
    });
  } catch (err) {
    throw streamError(`connect ${path}`, err);
  }
  return {
    write: (text) => {
      const bytes = new TextEncoder().encode(text);
      const joined = new Uint8Array(pending.length + bytes.length);
      joined.set(pending);
      joined.set(bytes, pending.length);
      pending = joined;
      flush(socket);
    },
    close: () => {
      if (closed) return;
      closed = true;
      socket.terminate();
    },
  };
}
