// The shape a state record must have before anything acts on it. A record
// names MACs to write into a pod and a netns to enter, so a field that is
// missing, of the wrong type or out of range makes the whole record invalid:
// it is never half-trusted.
import { ifnameProblem } from '../cni/ifname';
import {
  accepting,
  arrayOf,
  check,
  intFrom,
  isNumber,
  isString,
  looseObject,
  oneOf,
  optional,
  refined,
  type Schema,
  type Shape,
} from '../cni/schema';
import type { AttachmentRecord } from './state';

const str = () => accepting(isString, 'must be a string');
const nonEmpty = () => refined(str(), (s) => (s.length > 0 ? undefined : 'must not be empty'));
const absPath = () => refined(str(), (s) => (s.startsWith('/') && !s.includes('\0') ? undefined : 'must be an absolute path'));
const count = () => intFrom(0, Number.MAX_SAFE_INTEGER, 'must be an integer ≥ 0');
const ms = () => accepting((v): v is number => isNumber(v) && v >= 0, 'must be a finite number ≥ 0');
const intRange = (min: number, max: number) => intFrom(min, max, `must be an integer from ${min} to ${max}`);
const ifname = () => refined(str(), (s) => (ifnameProblem(s) === undefined ? undefined : 'must be an interface name'));
const mac = () => refined(str(), (s) => (/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i.test(s) ? undefined : 'must be a MAC address'));
const list = <T>(item: Schema<T>, max: number) =>
  refined(arrayOf(item, 'must be an array'), (a) => (a.length <= max ? undefined : `must have at most ${max} entries`));
const obj = <S extends Shape>(shape: S) => looseObject(shape, 'must be an object');
const choice = <const T extends readonly string[]>(values: T) => oneOf(values, `must be one of ${values.join(', ')}`);

const attachmentIds = { network: str(), containerId: nonEmpty(), ifname: ifname(), netns: absPath(), netnsId: obj({ dev: count(), ino: count() }) };

const backgroundJob = obj({
  ...attachmentIds,
  interfaces: list(obj({ name: ifname(), ipv4: list(str(), 4096), ipv6: list(str(), 4096) }), 64),
  hostPeerNames: list(ifname(), 64),
  arpOps: list(choice(['request', 'reply']), 2),
  schedule: list(ms(), 64),
  firstRoundAt: optional(ms()),
  readyDeadline: ms(),
  logFile: optional(absPath()),
  logLevel: choice(['error', 'warn', 'info', 'debug']),
  idleExitMs: optional(ms()),
  metricsFile: optional(absPath()),
  rateLimit: optional(obj({ framesPerSecond: ms(), burst: ms() })),
  conflictCheck: optional(obj({ action: choice(['warn', 'fail']), probeMs: intRange(10, 2000), probes: intRange(1, 3) })),
  conflicts: optional(count()),
});

const recordSchema = obj({
  ...attachmentIds,
  originalMacs: list(obj({ name: ifname(), mac: mac() }), 64),
  job: optional(backgroundJob),
});

/** A record that passed the schema, or the first problem found, e.g. `"job.netnsId" must be an object`. */
export type RecordCheck = { ok: true; record: AttachmentRecord } | { ok: false; problem: string };

/** Validates parsed JSON as an AttachmentRecord. Unknown fields are kept; nothing is coerced. */
export function checkRecord(value: unknown): RecordCheck {
  const checked = check(recordSchema, value);
  if (checked.ok) return { ok: true, record: checked.value satisfies AttachmentRecord };
  const issue = checked.issues[0]!;
  const path = issue.path.map(String).join('.');
  return { ok: false, problem: path === '' ? `the record ${issue.message}` : `"${path}" ${issue.message}` };
}
