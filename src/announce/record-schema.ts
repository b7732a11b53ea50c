// The shape a state record must have before anything acts on it. A record
// names MACs to write into a pod and a netns to enter, so a field that is
// missing, of the wrong type or out of range makes the whole record invalid:
// it is never half-trusted.
// The schemas are built on first use, not when the module loads: an announcer's start with no record
// and a cold ADD check none, and build none.
import type { GatewayVerdict } from './gateway-verdict';
import { optional, refine, z } from 'zod/mini';
import { once } from '../once';
import { LOG_LEVELS, OPTIONS } from '../cni/option-schema';
import { check, choice, ifname as ifnameOf, intRange, listOf, nonEmpty, numRange, obj, str } from '../cni/zod-checks';
import type { BackgroundJob } from './background-job';
import type { AttachmentRecord } from './state';

const absPath = () =>
  str().check(refine((s: string) => s.startsWith('/') && !s.includes('\0'), { error: 'must be an absolute path' }));
const count = () => intRange(0, Number.MAX_SAFE_INTEGER, 'must be an integer ≥ 0');
const ms = () => numRange(0, Infinity, 'must be a finite number ≥ 0');
const ifname = () => ifnameOf('must be an interface name');
const mac = () =>
  str().check(refine((s: string) => /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i.test(s), { error: 'must be a MAC address' }));

const attachmentIds = () => ({
  network: str(),
  containerId: nonEmpty(),
  ifname: ifname(),
  netns: absPath(),
  netnsId: obj({ dev: count(), ino: count() }),
  caller: obj({ mnt: obj({ dev: count(), ino: count() }), net: obj({ dev: count(), ino: count() }) }),
});

const routed = () => obj({ interface: ifname(), gateway: str() });

/** What the node saw of one pod interface (NodeProof): shown as it was written, never acted on. */
function nodeProof() {
  const fdb = z.discriminatedUnion('kind', [
    obj({ kind: z.literal('converged'), port: str() }),
    obj({ kind: z.literal('duplicate'), port: str(), others: listOf(str(), 64) }),
    obj({ kind: z.literal('not-learned') }),
  ]);
  const neighbour = obj({ address: str(), kind: choice(['absent', 'converged', 'stale']), mac: optional(mac()) });
  const seen = obj({ fdb, neighbours: listOf(neighbour, 64) });
  return z.union([obj({ interface: ifname(), seen }), obj({ interface: ifname(), unseen: str() })]);
}

/** The schema of a gateway check's verdict, as records and the announcer's status carry it (built on first use). */
const gatewayVerdictSchema = once(() =>
  obj({
    result: choice(['pending', 'answered', 'no-answer', 'no-gateway', 'off']),
    answered: listOf(obj({ interface: ifname(), gateway: str(), mac: mac(), afterMs: ms() }), 256),
    unanswered: listOf(routed(), 256),
    asks: count(),
    node: optional(listOf(nodeProof(), 64)),
  }),
);

const backgroundJob = once(() =>
  obj({
    ...attachmentIds(),
    interfaces: listOf(obj({ name: ifname(), ipv4: listOf(str(), 4096), ipv6: listOf(str(), 4096) }), 64),
    hostPeerNames: listOf(ifname(), 64),
    arpOps: listOf(choice(['request', 'reply']), 2),
    schedule: listOf(ms(), 64),
    firstRoundAt: optional(ms()),
    readyDeadline: ms(),
    logFile: optional(absPath()),
    logLevel: choice(LOG_LEVELS),
    // idleExitMs, metricsFile and rateLimit, in a job written before they became node settings, are unknown fields:
    // kept, never used, and the job is resumed.
    conflictCheck: optional(
      obj({ action: choice(['warn', 'fail']), probeMs: OPTIONS.probeMs.schema, probes: OPTIONS.probes.schema }),
    ),
    conflicts: optional(count()),
    gatewayCheck: optional(obj({ windowMs: OPTIONS.gatewayCheckMs.schema, gateways: listOf(routed(), 256) })),
    pod: optional(obj({ namespace: optional(str()), name: optional(str()) })),
  }),
);

const recordSchema = once(() =>
  obj({
    ...attachmentIds(),
    originalMacs: listOf(obj({ name: ifname(), mac: mac() }), 64),
    job: optional(backgroundJob()),
    gateway: optional(gatewayVerdictSchema()),
  }),
);

/**
 * Validates parsed JSON as an AttachmentRecord: the record, or the first problem found, e.g. `"job.netnsId" must be an
 * object`. Unknown fields are kept; nothing is coerced.
 */
export function checkRecord(value: unknown): { ok: true; record: AttachmentRecord } | { ok: false; problem: string } {
  const checked = check(recordSchema(), value);
  if (checked.ok) return { ok: true, record: checked.value satisfies AttachmentRecord };
  const issue = checked.issues[0]!;
  const path = issue.path.map(String).join('.');
  return { ok: false, problem: path === '' ? `the record ${issue.message}` : `"${path}" ${issue.message}` };
}

/** A background job that passed the schema (as a record's `job` would), else undefined. */
export function checkJob(value: unknown): BackgroundJob | undefined {
  const checked = check(backgroundJob(), value);
  return checked.ok ? checked.value : undefined;
}

/** A gateway check's verdict that passed the schema (as a record's `gateway` would), else undefined. */
export function checkGatewayVerdict(value: unknown): GatewayVerdict | undefined {
  const checked = check(gatewayVerdictSchema(), value);
  return checked.ok ? (checked.value as GatewayVerdict) : undefined;
}
