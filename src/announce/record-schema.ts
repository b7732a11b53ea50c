// The shape a state record must have before anything acts on it. A record
// names a process to signal and MACs to write into a pod, so a field that is
// missing, of the wrong type or out of range makes the whole record invalid:
// it is never half-trusted. The schema is built on first use: most plugin
// runs (VERSION, a first ADD) never read a record.
import * as z from 'zod/mini';
import { ifnameProblem } from '../cni/ifname';
import type { AttachmentRecord } from './state';

const fail = (error: string) => ({ error });
const str = () => z.string(fail('must be a string'));
const nonEmpty = () => str().check(z.minLength(1, fail('must not be empty')));
const absPath = () => str().check(z.refine((s) => s.startsWith('/') && !s.includes('\0'), fail('must be an absolute path')));
const count = () => {
  const error = 'must be an integer ≥ 0';
  return z.int(fail(error)).check(z.gte(0, fail(error)));
};
const ms = () => {
  const error = 'must be a finite number ≥ 0';
  return z.number(fail(error)).check(z.gte(0, fail(error)));
};
const intFrom = (min: number, max: number) => {
  const error = `must be an integer from ${min} to ${max}`;
  return z.int(fail(error)).check(z.gte(min, fail(error)), z.lte(max, fail(error)));
};
const ifname = () => str().check(z.refine((s) => ifnameProblem(s) === undefined, fail('must be an interface name')));
const list = <T extends z.core.SomeType>(item: T, max: number) =>
  z.array(item, fail('must be an array')).check(z.maxLength(max, fail(`must have at most ${max} entries`)));
const obj = <T extends z.core.$ZodLooseShape>(shape: T) => z.looseObject(shape, fail('must be an object'));
const oneOf = <const T extends readonly string[]>(values: T) => z.enum(values, fail(`must be one of ${values.join(', ')}`));

function buildRecordSchema() {
  const netnsId = obj({ dev: count(), ino: count() });

  const backgroundJob = obj({
    network: str(),
    containerId: nonEmpty(),
    ifname: ifname(),
    netns: absPath(),
    netnsId,
    interfaces: list(obj({ name: ifname(), ipv4: list(str(), 4096), ipv6: list(str(), 4096) }), 64),
    hostPeerNames: list(ifname(), 64),
    arpOps: list(oneOf(['request', 'reply']), 2),
    schedule: list(ms(), 64),
    firstRoundAt: z.optional(ms()),
    readyDeadline: ms(),
    logFile: z.optional(absPath()),
    logLevel: oneOf(['error', 'warn', 'info', 'debug']),
    idleExitMs: z.optional(ms()),
    metricsFile: z.optional(absPath()),
    rateLimit: z.optional(obj({ framesPerSecond: ms(), burst: ms() })),
    conflictCheck: z.optional(obj({ action: oneOf(['warn', 'fail']), probeMs: intFrom(10, 2000), probes: intFrom(1, 3) })),
    conflicts: z.optional(count()),
  });

  return obj({
    network: str(),
    containerId: nonEmpty(),
    ifname: ifname(),
    netns: absPath(),
    netnsId,
    originalMacs: list(
      obj({ name: ifname(), mac: str().check(z.regex(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i, fail('must be a MAC address'))) }),
      64,
    ),
    job: z.optional(backgroundJob),
  });
}

let recordSchema: ReturnType<typeof buildRecordSchema> | undefined;

/** A record that passed the schema, or the first problem found, e.g. `"tail.pid" must be an integer from 2 to 4194304`. */
export type RecordCheck = { ok: true; record: AttachmentRecord } | { ok: false; problem: string };

/** Validates parsed JSON as an AttachmentRecord. Unknown fields are kept; nothing is coerced. */
export function checkRecord(value: unknown): RecordCheck {
  recordSchema ??= buildRecordSchema();
  const parsed = recordSchema.safeParse(value);
  if (parsed.success) return { ok: true, record: parsed.data satisfies AttachmentRecord };
  const issue = parsed.error.issues[0]!;
  const path = issue.path.map(String).join('.');
  return { ok: false, problem: path === '' ? `the record ${issue.message}` : `"${path}" ${issue.message}` };
}
