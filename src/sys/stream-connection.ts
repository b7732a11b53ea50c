// What both unix-stream twins export (src/sys/unix-stream.ts on Node, src/sys/unix-stream.bun.ts
// in the compiled binary): one connected stream socket, driven by callbacks. Pure types.

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

/**
 * A socket error, with its errno name (`code`, 'EIO' when the runtime gave none) and the runtime's error as `cause`.
 */
export class StreamError extends Error {
  override name = 'StreamError';
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A StreamError for what the runtime threw or emitted: its `code` when it is an errno name. */
export function streamError(what: string, err: unknown): StreamError {
  const raw = (err as { code?: unknown } | null)?.code;
  const code = typeof raw === 'string' && /^E[A-Z0-9]+$/.test(raw) ? raw : 'EIO';
  const detail = err instanceof Error ? err.message : String(err);
  return new StreamError(`${what}: ${detail}`, code, { cause: err });
}
