import { isJsonObject } from './decode';
import { fieldProblem, invalidConfig, type PathSegment } from './errors';
import { compareVersions, type CniVersion } from './versions';
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

/**
 * Validates what the plugin relies on in prevResult (interfaces, ips and their references, routes); throws one code-7
 * CniError naming every bad field.
 */
export function parsePrevResult(raw: unknown): PrevResult {
  if (!isJsonObject(raw)) throw invalidConfig([fieldProblem([ROOT], 'must be an object', raw)]);
  const problems: string[] = [];
  const interfaces = parseList(raw, 'interfaces', problems, parseInterface);
  const ips = parseList(raw, 'ips', problems, parseIp(interfaces.length));
  const routes = parseList(raw, 'routes', problems, parseRoute);
  if (problems.length > 0) throw invalidConfig(problems);
  return { raw, interfaces, ips, routes };
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

type EntryParser<T> = (entry: Record<string, unknown>, path: PathSegment[], problems: string[]) => T | undefined;

function parseList<T>(raw: Record<string, unknown>, key: string, problems: string[], parse: EntryParser<T>): T[] {
  const list = raw[key];
  if (list === undefined) return [];
  if (!Array.isArray(list)) {
    problems.push(fieldProblem([ROOT, key], 'must be an array', list));
    return [];
  }
  return list.flatMap((entry: unknown, i) => {
    const path = [ROOT, key, i];
    if (isJsonObject(entry)) return parse(entry, path, problems) ?? [];
    problems.push(fieldProblem(path, 'must be an object', entry));
    return [];
  });
}

const parseInterface: EntryParser<PrevInterface> = (entry, path, problems) => {
  const { name, mac, sandbox } = entry;
  const ok = checkFields(entry, path, problems, [
    ['name', typeof name === 'string' && name !== '', 'must be a non-empty string'],
    ['mac', mac === undefined || typeof mac === 'string', 'must be a string'],
    ['sandbox', sandbox === undefined || typeof sandbox === 'string', 'must be a string'],
  ]);
  if (!ok) return undefined;
  return definedOnly({ index: path[2] as number, name: name as string, mac, sandbox } as PrevInterface);
};

/** The parser of ips[] entries, whose `interface` must be an index into `interfaceCount` interfaces. */
const parseIp =
  (interfaceCount: number): EntryParser<PrevIp> =>
  (entry, path, problems) => {
    const { address, gateway, version, interface: iface } = entry;
    const cidr = typeof address === 'string' ? parseCidr(address) : undefined;
    const isIndex = Number.isInteger(iface) && (iface as number) >= 0 && (iface as number) < interfaceCount;
    const range = interfaceCount === 0 ? 'there are no interfaces' : `from 0 to ${interfaceCount - 1}`;
    const ok = checkFields(entry, path, problems, [
      ['address', cidr !== undefined, 'must be an IP address with a prefix length, such as "10.88.0.5/24"'],
      ['gateway', gateway === undefined || typeof gateway === 'string', 'must be a string'],
      ['interface', iface === undefined || isIndex, `must be an index into prevResult.interfaces (${range})`],
      ['version', version === undefined || version === '4' || version === '6', 'must be "4" or "6"'],
      [
        'version',
        version === undefined || cidr === undefined || version === String(cidr.family),
        `must match the address, which is IPv${cidr?.family}`,
      ],
    ]);
    if (!ok || cidr === undefined) return undefined;
    const text = address as string;
    const ip = { cidr: text, address: text.slice(0, text.indexOf('/')), ...cidr, gateway, interface: iface };
    return definedOnly(ip as PrevIp);
  };

const parseRoute: EntryParser<PrevRoute> = (entry, path, problems) => {
  const { dst, gw } = entry;
  const ok = checkFields(entry, path, problems, [
    [
      'dst',
      typeof dst === 'string' && parseCidr(dst) !== undefined,
      'must be a network with a prefix length, such as "0.0.0.0/0"',
    ],
    ['gw', gw === undefined || (typeof gw === 'string' && parseIP(gw) !== undefined), 'must be an IP address'],
  ]);
  return ok ? definedOnly({ dst, gw } as PrevRoute) : undefined;
};

/** Pushes a problem for each field of `entry` whose test failed (its first failed test only); whether all passed. */
function checkFields(
  entry: Record<string, unknown>,
  path: PathSegment[],
  problems: string[],
  tests: [key: string, passed: boolean, problem: string][],
): boolean {
  const failed = new Set<string>();
  for (const [key, passed, problem] of tests) {
    if (passed || failed.has(key)) continue;
    failed.add(key);
    problems.push(fieldProblem([...path, key], problem, entry[key]));
  }
  return failed.size === 0;
}

/** `fields` without the ones that are undefined, so that an absent field stays absent. */
function definedOnly<T extends object>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as T;
}
