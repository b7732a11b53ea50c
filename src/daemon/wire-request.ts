// Pure: checks a request line of the announcer's socket (src/shim/wire.ts)
// before anything acts on it. A string says what is wrong.
import { WIRE_VERSION } from '../shim/wire';
import { checkControlRequest, type Request } from './protocol';

/** A checked request: a CNI command as it came, or a control operation. */
export type CheckedRequest = { build: string; ackBy: number } & (
  | { kind: 'cni'; env: Record<string, string>; stdin: string }
  | { kind: 'control'; request: Request }
);

/** The request on `line`, or what is wrong with it. */
export function checkRequestLine(line: string): CheckedRequest | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return 'not JSON';
  }
  if (!isObject(value)) return 'not an object';
  if (value.v !== WIRE_VERSION) return `protocol version ${JSON.stringify(value.v)} (this announcer speaks ${WIRE_VERSION})`;
  const { build, ackBy } = value;
  if (typeof build !== 'string' || build.length > 128) return 'bad build';
  if (typeof ackBy !== 'number' || !Number.isFinite(ackBy)) return 'bad ackBy';
  if (isObject(value.cni)) {
    const { env, stdin } = value.cni;
    if (!isObject(env) || !Object.entries(env).every(([k, v]) => k.startsWith('CNI_') && typeof v === 'string')) return 'bad cni.env';
    if (typeof stdin !== 'string') return 'bad cni.stdin';
    return { kind: 'cni', build, ackBy, env: env as Record<string, string>, stdin };
  }
  if (isObject(value.control)) {
    const request = checkControlRequest(value.control);
    return typeof request === 'string' ? request : { kind: 'control', build, ackBy, request };
  }
  return 'neither cni nor control';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
