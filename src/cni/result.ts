import { isJsonObject } from './decode';
import { fieldProblem, invalidConfig, type PathSegment } from './errors';
import { compareVersions, type CniVersion } from './versions';
import { ipFamily, parseCidr } from '../wire/ip';

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

/** Changes the plugin made, to write into the printed result. */
export interface ResultChanges {
  /** New MAC per prevResult.interfaces index. */
  macs?: ReadonlyMap<number, string>;
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
  const ips = parseList(raw, 'ips', problems, (entry, path, p) => parseIp(entry, path, p, interfaces.length));
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
  changes?: ResultChanges,
): Record<string, unknown> {
  const out: Record<string, unknown> = { cniVersion, ...structuredClone(prev.raw) };
  out.cniVersion = cniVersion;
  const withVersion = compareVersions(cniVersion, '1.0.0') < 0;
  if (Array.isArray(out.ips)) {
    out.ips = out.ips.map((ip: Record<string, unknown>) => {
      const { version, ...rest } = ip;
      if (!withVersion) return rest;
      const family = cidrOf(ip.address)?.family;
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
  const out: T[] = [];
  list.forEach((entry: unknown, i) => {
    const path = [ROOT, key, i];
    if (!isJsonObject(entry)) problems.push(fieldProblem(path, 'must be an object', entry));
    else {
      const parsed = parse(entry, path, problems);
      if (parsed !== undefined) out.push(parsed);
    }
  });
  return out;
}

function parseInterface(
  entry: Record<string, unknown>,
  path: PathSegment[],
  problems: string[],
): PrevInterface | undefined {
  const before = problems.length;
  const { name, mac, sandbox } = entry;
  if (typeof name !== 'string' || name === '') {
    problems.push(fieldProblem([...path, 'name'], 'must be a non-empty string', name));
  }
  if (mac !== undefined && typeof mac !== 'string')
    problems.push(fieldProblem([...path, 'mac'], 'must be a string', mac));
  if (sandbox !== undefined && typeof sandbox !== 'string') {
    problems.push(fieldProblem([...path, 'sandbox'], 'must be a string', sandbox));
  }
  if (problems.length > before) return undefined;
  const out: PrevInterface = { index: path[2] as number, name: name as string };
  if (mac !== undefined) out.mac = mac as string;
  if (sandbox !== undefined) out.sandbox = sandbox as string;
  return out;
}

function parseIp(
  entry: Record<string, unknown>,
  path: PathSegment[],
  problems: string[],
  interfaceCount: number,
): PrevIp | undefined {
  const before = problems.length;
  const { address, gateway, version } = entry;
  const iface = entry.interface;
  const cidr = cidrOf(address);
  if (cidr === undefined) {
    problems.push(
      fieldProblem([...path, 'address'], 'must be an IP address with a prefix length, such as "10.88.0.5/24"', address),
    );
  }
  if (gateway !== undefined && typeof gateway !== 'string') {
    problems.push(fieldProblem([...path, 'gateway'], 'must be a string', gateway));
  }
  if (
    iface !== undefined &&
    !(Number.isInteger(iface) && (iface as number) >= 0 && (iface as number) < interfaceCount)
  ) {
    const range = interfaceCount === 0 ? 'there are no interfaces' : `from 0 to ${interfaceCount - 1}`;
    problems.push(
      fieldProblem([...path, 'interface'], `must be an index into prevResult.interfaces (${range})`, iface),
    );
  }
  if (version !== undefined && version !== '4' && version !== '6') {
    problems.push(fieldProblem([...path, 'version'], 'must be "4" or "6"', version));
  } else if (version !== undefined && cidr !== undefined && version !== String(cidr.family)) {
    problems.push(fieldProblem([...path, 'version'], `must match the address, which is IPv${cidr.family}`, version));
  }
  if (problems.length > before || cidr === undefined) return undefined;
  const text = address as string;
  const out: PrevIp = {
    cidr: text,
    address: text.slice(0, text.indexOf('/')),
    family: cidr.family,
    prefixLength: cidr.prefixLength,
  };
  if (gateway !== undefined) out.gateway = gateway as string;
  if (iface !== undefined) out.interface = iface as number;
  return out;
}

function parseRoute(entry: Record<string, unknown>, path: PathSegment[], problems: string[]): PrevRoute | undefined {
  const before = problems.length;
  const { dst, gw } = entry;
  if (cidrOf(dst) === undefined) {
    problems.push(fieldProblem([...path, 'dst'], 'must be a network with a prefix length, such as "0.0.0.0/0"', dst));
  }
  if (gw !== undefined && !isIP(gw)) problems.push(fieldProblem([...path, 'gw'], 'must be an IP address', gw));
  if (problems.length > before) return undefined;
  return gw === undefined ? { dst: dst as string } : { dst: dst as string, gw: gw as string };
}

function isIP(text: unknown): boolean {
  if (typeof text !== 'string') return false;
  try {
    ipFamily(text);
    return true;
  } catch {
    return false;
  }
}

/** The family and prefix length of an "address/prefix" string, or undefined for anything else. */
function cidrOf(text: unknown): { family: 4 | 6; prefixLength: number } | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    return parseCidr(text);
  } catch {
    return undefined;
  }
}
