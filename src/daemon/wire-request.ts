// Pure: checks a request line of the announcer's socket (src/shim/wire.ts)
// before anything acts on it. A string says what is wrong.
import { z } from 'zod/mini';
import { check, obj, str } from '../cni/zod-checks';
import { WIRE_VERSION } from '../shim/wire';
import { checkControlRequest, retiredOpRefusal, type Request } from './protocol';

/** A checked request: a CNI command as it came, a control operation, or a retired one (refused by name). */
export type CheckedRequest = { build: string; ackBy: number; deadline?: number } & (
  | { kind: 'cni'; env: Record<string, string>; stdin: string }
  | { kind: 'control'; request: Request }
  | { kind: 'retired'; refusal: string }
);

/** An object, else nothing: which of `cni` and `control` a line carries. */
const body = z.catch(z.optional(obj({})), undefined);

/** The envelope, its fields in the order they are checked. */
const envelope = z.looseObject(
  {
    v: z.literal(WIRE_VERSION, {
      error: (iss) => `protocol version ${JSON.stringify(iss.input)} (this announcer speaks ${WIRE_VERSION})`,
    }),
    build: str('bad build').check(z.maxLength(128, { error: 'bad build' })),
    ackBy: z.number({ error: 'bad ackBy' }),
    deadline: z.optional(z.number({ error: 'bad deadline' })),
    cni: body,
    control: body,
  },
  { error: 'not an object' },
);

/** A CNI command: CNI_* variables only, and stdin as text. */
const cniCommand = obj({
  env: z.record(str().check(z.startsWith('CNI_')), str('bad cni.env'), { error: 'bad cni.env' }),
  stdin: str('bad cni.stdin'),
});

/** The request on `line`, or what is wrong with it. */
export function checkRequestLine(line: string): CheckedRequest | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return 'not JSON';
  }
  const head = check(envelope, value);
  if (!head.ok) return head.issues[0]!.message;
  const { build, ackBy, deadline, cni, control } = head.value;
  const times = deadline === undefined ? { ackBy } : { ackBy, deadline };
  if (cni !== undefined) {
    const command = check(cniCommand, cni);
    return command.ok
      ? { kind: 'cni', build, ...times, env: command.value.env, stdin: command.value.stdin }
      : command.issues[0]!.message;
  }
  if (control !== undefined) {
    const refusal = retiredOpRefusal(control);
    if (refusal !== undefined) return { kind: 'retired', build, ...times, refusal };
    const request = checkControlRequest(control);
    return typeof request === 'string' ? request : { kind: 'control', build, ...times, request };
  }
  return 'neither cni nor control';
}
