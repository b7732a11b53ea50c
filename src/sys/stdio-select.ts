// Picks the stdio twin for the running runtime, with a dynamic import so that a run loads one:
// Bun's (src/sys/stdio.bun.ts) in the compiled binary, node:fs's under Node.
import { onBun } from './unix-stream-select';
import type { StdinReader } from './stdio';

/** A loaded twin. */
export interface Stdio {
  kind: string;
  stdinReader(): StdinReader;
  writeFd(fd: 1 | 2, text: string): Promise<void>;
  readText(path: string): Promise<string>;
}

/** Loads the twin for Bun (`bun`) or Node. */
export async function loadStdio(bun: boolean = onBun()): Promise<Stdio> {
  const twin = bun ? await import('./stdio.bun') : await import('./stdio');
  return { kind: twin.STDIO, stdinReader: twin.stdinReader, writeFd: twin.writeFd, readText: twin.readText };
}
