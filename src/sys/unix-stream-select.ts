// Picks the unix-stream twin for the running runtime, with a dynamic import so that a run loads
// one: Bun's (src/sys/unix-stream.bun.ts) in the compiled binary, node:net's under Node.
import type { ConnectUnix } from './stream-connection';

/** A loaded twin: its connect, and which it is. */
export interface Transport {
  kind: string;
  connectUnix: ConnectUnix;
}

/** Whether this process runs on Bun. */
export function onBun(versions: NodeJS.ProcessVersions = process.versions): boolean {
  return typeof (versions as { bun?: unknown }).bun === 'string';
}

/** Loads the twin for Bun (`bun`) or Node. */
export async function loadTransport(bun: boolean = onBun()): Promise<Transport> {
  const twin = bun ? await import('./unix-stream.bun') : await import('./unix-stream');
  return { kind: twin.TRANSPORT, connectUnix: twin.connectUnix };
}
