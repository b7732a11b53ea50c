// Pure: rtnetlink route messages (struct rtmsg; rtnetlink(7), "RTM_NEWROUTE"): a
// dump of a family's routes, and the next hop of each. No I/O.
import { parseAttrs } from './netlink';

export const RTM_GETROUTE = 26;

/** rtm_type RTN_UNICAST: a route to a gateway or a direct route (not local, broadcast, blackhole…). */
const RTN_UNICAST = 1;
const RTA_OIF = 4;
const RTA_GATEWAY = 5;
const RTA_TABLE = 15;
const RTMSG = 12;

/** One unicast route with its next hop, as the kernel reports it. */
export interface RouteEntry {
  family: number;
  /** The destination's prefix length (0: a default route). */
  dstLen: number;
  /** The routing table (RTA_TABLE when present, else rtm_table). */
  table: number;
  /** RTA_OIF: the link the route leaves through. */
  oif?: number;
  /** RTA_GATEWAY: the next hop; absent for a direct route. */
  gateway?: Buffer;
}

/** RTM_GETROUTE dump payload: every route of `family` (AF_INET or AF_INET6), all tables. */
export function routeDumpPayload(family: number): Buffer {
  const out = Buffer.alloc(RTMSG);
  out[0] = family;
  return out;
}

/** Decodes an RTM_NEWROUTE payload; undefined when too short or not a unicast route. */
export function parseRoute(payload: Buffer): RouteEntry | undefined {
  if (payload.length < RTMSG || payload[7] !== RTN_UNICAST) return undefined;
  const a = parseAttrs(payload.subarray(RTMSG));
  const table = a.get(RTA_TABLE);
  const oif = a.get(RTA_OIF);
  const gateway = a.get(RTA_GATEWAY);
  const entry: RouteEntry = {
    family: payload[0]!,
    dstLen: payload[1]!,
    table: table && table.length >= 4 ? table.readUInt32LE(0) : payload[4]!,
  };
  if (oif && oif.length >= 4) entry.oif = oif.readUInt32LE(0);
  if (gateway && (gateway.length === 4 || gateway.length === 16)) entry.gateway = Buffer.from(gateway);
  return entry;
}
