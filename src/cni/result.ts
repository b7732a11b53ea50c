import { enum as oneOf, optional, refine, unknown } from 'zod/mini';
import { isJsonObject } from './decode';
import { fieldProblem, invalidConfig, valueAt } from './errors';
import { compareVersions, type CniVersion } from './versions';
import { check, list, obj, str } from './zod-checks';
import { parseCidr, parseIP } from '../wire/ip';

/** One entry of prevResult.interfaces. */
export interface PrevInterface {
  /** Position in prevResult.interfaces: what ips[].interface and MAC changes refer to. */
  index: number;
  name: string;
  mac?: string;
  /** The netns path for pod-side interfaces; absent for host-side ones. */
  sandbox?: string;
}

/** One entry of prevResult.ips, with its address parsed. */
export interface PrevIp {
  /** The address as given, e.g. "10.88.0.5/24". */
  cidr: string;
  /** The address without the prefix, as written. */
  address: string;
  family: 4 | 6;
  prefixLength: number;
  gateway?: string;
  /** Index into prevResult.interfaces. */
  interface?: number;
}

/** One entry of prevResult.routes, as written (other fields, such as mtu or table, stay in `raw`). */
export interface PrevRoute {
  /** The destination network, e.g. "0.0.0.0/0". */
  dst: string;
  /** The next hop; absent: the `gateway` of the interface's address of dst's family (ipam.ConfigureIface). */
  gw?: string;
}

/** The previous plugin's result: the typed view the plugin needs, plus the raw object to print back. */
export interface PrevResult {
  /** The result as received, unknown fields (dns, custom keys) included. */
  raw: Readonly<Record<string, unknown>>;
  /** prevResult.interfaces, or [] when absent. */
  interfaces: PrevInterface[];
  /** prevResult.ips, or [] when absent. */
  ips: PrevIp[];
  /** prevResult.routes, or [] when absent. */
  routes: PrevRoute[];
}

const ROOT = 'prevResult';

/** A string that passes `test`; `message` for anything else. */
const textThat = (test: (text: string) => boolean, message: string) =>
  str(message).check(refine(test, { error: message }));

const interfaceSchema = obj({
  name: textThat((name) => name !== '', 'must be a non-empty string'),
  mac: optional(str()),
  sandbox: optional(str()),
});

/** The parts of prevResult the plugin relies on; ips[].interface must index one of `interfaceCount` interfaces. */
function prevResultSchema(interfaceCount: number) {
  const range = interfaceCount === 0 ? 'there are no interfaces' : `from 0 to ${interfaceCount - 1}`;
  const family = (entry: unknown) => {
    const address = (entry as { address?: unknown }).address;
    return typeof address === 'string' ? parseCidr(address)?.family : undefined;
  };
  // Only a valid version beside a valid address can mismatch it.
  const versionMatches = ({ version, ...entry }: Record<string, unknown>) =>
    (version !== '4' && version !== '6') || family(entry) === undefined || version === String(family(entry));
  const ip = obj({
    address: textThat(
      (address) => parseCidr(address) !== undefined,
      'must be an IP address with a prefix length, such as "10.88.0.5/24"',
    ),
    gateway: optional(str()),
    // A refinement, not an integer schema: a failed integer check would stop the version check below.
    interface: optional(
      unknown().check(
        refine((i) => Number.isInteger(i) && (i as number) >= 0 && (i as number) < interfaceCount, {
          error: `must be an index into prevResult.interfaces (${range})`,
        }),
      ),
    ),
    version: optional(oneOf(['4', '6'], { error: 'must be "4" or "6"' })),
  }).check(
    refine(versionMatches, {
      path: ['version'],
      error: (issue) => `must match the address, which is IPv${family(issue.input)}`,
      when: (payload) => isJsonObject(payload.value),
    }),
  );
  const route = obj({
    dst: textThat((dst) => parseCidr(dst) !== undefined, 'must be a network with a prefix length, such as "0.0.0.0/0"'),
    gw: optional(textThat((gw) => parseIP(gw) !== undefined, 'must be an IP address')),
  });
  return obj({ interfaces: optional(list(interfaceSchema)), ips: optional(list(ip)), routes: optional(list(route)) });
}

/**
 * Validates what the plugin relies on in prevResult (interfaces, ips and their references, routes); throws one code-7
 * CniError naming every bad field.
 */
export function parsePrevResult(raw: unknown): PrevResult {
  const entries = (key: string): Record<string, unknown>[] =>
    isJsonObject(raw) && Array.isArray(raw[key]) ? raw[key] : [];
  const interfaceCount = entries('interfaces').filter((e) => interfaceSchema.safeParse(e).success).length;
  const checked = check(prevResultSchema(interfaceCount), raw);
  if (!checked.ok) {
    throw invalidConfig(checked.issues.map((i) => fieldProblem([ROOT, ...i.path], i.message, valueAt(raw, i.path))));
  }
  return {
    raw: raw as Record<string, unknown>,
    interfaces: entries('interfaces').map(({ name, mac, sandbox }, index) =>
      definedOnly({ index, name, mac, sandbox } as PrevInterface),
    ),
    ips: entries('ips').map(({ address, gateway, interface: iface }) => {
      const text = address as string;
      const ip = {
        cidr: text,
        address: text.slice(0, text.indexOf('/')),
        ...parseCidr(text),
        gateway,
        interface: iface,
      };
      return definedOnly(ip as PrevIp);
    }),
    routes: entries('routes').map(({ dst, gw }) => definedOnly({ dst, gw } as PrevRoute)),
  };
}

/**
 * A deep copy of prevResult with `cniVersion`, `ips[].version` (kept for 0.3.x/0.4.0, dropped for 1.x) and the MAC
 * changes, nothing else (RangeError for an unknown index).
 */
export function formatResult(
  prev: PrevResult,
  cniVersion: CniVersion,
  /** Changes the plugin made, to write into the printed result: the new MAC per prevResult.interfaces index. */
  changes?: { macs?: ReadonlyMap<number, string> },
): Record<string, unknown> {
  const out: Record<string, unknown> = { cniVersion, ...structuredClone(prev.raw) };
  out.cniVersion = cniVersion;
  const withVersion = compareVersions(cniVersion, '1.0.0') < 0;
  if (Array.isArray(out.ips)) {
    out.ips = out.ips.map((ip: Record<string, unknown>) => {
      const { version, ...rest } = ip;
      if (!withVersion) return rest;
      const family = typeof ip.address === 'string' ? parseCidr(ip.address)?.family : undefined;
      return { version: family === undefined ? version : String(family), ...rest };
    });
  }
  for (const [index, mac] of changes?.macs ?? []) {
    const list = out.interfaces;
    if (!Array.isArray(list) || !isJsonObject(list[index])) {
      throw new RangeError(`no prevResult.interfaces[${index}] to set the MAC of`);
    }
    list[index].mac = mac;
  }
  return out;
}

/** `fields` without the ones that are undefined, so that an absent field stays absent. */
function definedOnly<T extends object>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as T;
}
