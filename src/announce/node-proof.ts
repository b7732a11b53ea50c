// Pure: what the node itself sees of one bridged pod interface, judged from the bridge's forwarding
// database (AF_BRIDGE entries) and the node's neighbour table (AF_INET, AF_INET6), as dumps and
// notifications feed them in over a bounded window. No I/O.
//
// The FDB verdict keeps everything seen during the window, not only the last state: a bridge keys
// its entries by (MAC, VLAN), so a second port sending from the pod's MAC moves the entry back and
// forth, and a single read could land on either side. Neighbour verdicts keep the latest state:
// the announcement is meant to change them.
import { canonicalIP, ipFamily, parseIPv4, parseIPv6 } from '../wire/ip';
import { formatMac, parseMac } from '../wire/ethernet';
import { AF_BRIDGE, AF_INET, AF_INET6, NeighFlag, NeighState, NUD_VALID, type NeighEntry } from '../wire/rtnetlink';

/** What the node's bridge and neighbour table say about one pod interface. */
export interface NodeVerdict {
  /**
   * The bridge's FDB entry for the pod's MAC: on the pod's own port (`port`, its name), also seen on other ports
   * during the window (`others`: a duplicate MAC), or never seen.
   */
  fdb:
    | { kind: 'converged'; port: string }
    | { kind: 'duplicate'; port: string; others: string[] }
    | { kind: 'not-learned' };
  /** Per pod address, the node's entry on the bridge: none, the pod's MAC, or another MAC (`mac`). */
  neighbours: { address: string; kind: 'absent' | 'converged' | 'stale'; mac?: string }[];
}

/** The pod interface a NodeWatch judges: its MAC and addresses, its host-side bridge port, and the bridge. */
export interface NodeWatchPod {
  mac: string;
  portIndex: number;
  portName: string;
  bridgeIndex: number;
  addresses: string[];
}

/** Collects FDB and neighbour entries about one bridged pod interface and judges them. */
export class NodeWatch {
  private readonly mac: Buffer;
  private seenOnOwnPort = false;
  /** The port the pod's MAC was last seen on (ifindex and name). */
  private last: { ifindex: number; name: string } | undefined;
  /** Other ports the pod's MAC was seen on, by ifindex, named when first seen (a port may vanish later). */
  private readonly others = new Map<number, string>();
  /** The pod's addresses, each with the MAC the node's entry holds now (`held`; undefined when it has none). */
  private readonly watched: { address: string; family: number; bytes: Buffer; held: Buffer | undefined }[];

  constructor(
    private readonly pod: NodeWatchPod,
    private readonly portName: (ifindex: number) => string,
  ) {
    this.mac = parseMac(pod.mac);
    this.watched = [...new Set(pod.addresses.map(canonicalIP))].map((address) => {
      const v4 = ipFamily(address) === 4;
      const bytes = v4 ? parseIPv4(address) : parseIPv6(address);
      return { address, family: v4 ? AF_INET : AF_INET6, bytes, held: undefined };
    });
  }

  /** The entries the verdict rests on, to read one by one: the MAC's on the bridge, and each address's there. */
  entriesToRead(): { bridgeIndex: number; mac: Buffer; neighbours: { family: number; dst: Buffer }[] } {
    const neighbours = this.watched.map(({ family, bytes }) => ({ family, dst: bytes }));
    return { bridgeIndex: this.pod.bridgeIndex, mac: this.mac, neighbours };
  }

  /** Feeds one FDB (AF_BRIDGE) or neighbour (AF_INET/AF_INET6) entry, from a read, a dump or an event. */
  observe(entry: NeighEntry, deleted = false): void {
    if (entry.family === AF_BRIDGE) this.observeFdb(entry, deleted);
    else this.observeNeighbour(entry, deleted);
  }

  /** The verdict on what has been observed so far. */
  verdict(): NodeVerdict {
    const port = this.pod.portName;
    const elsewhere = this.last && this.last.ifindex !== this.pod.portIndex ? [this.last.name] : [];
    const others = this.others.size > 0 ? [...this.others.values()] : elsewhere;
    let fdb: NodeVerdict['fdb'] = { kind: 'not-learned' };
    if (others.length > 0) fdb = { kind: 'duplicate', port, others };
    else if (this.seenOnOwnPort) fdb = { kind: 'converged', port };
    const neighbours = this.watched.map(({ address, held }): NodeVerdict['neighbours'][number] => {
      if (!held) return { address, kind: 'absent' };
      if (held.equals(this.mac)) return { address, kind: 'converged' };
      return { address, kind: 'stale', mac: formatMac(held) };
    });
    return { fdb, neighbours };
  }

  private observeFdb(entry: NeighEntry, deleted: boolean): void {
    // A removal tells nothing new: the entry was seen where it was when it was added or dumped.
    if (deleted || !entry.lladdr?.equals(this.mac)) return;
    const onBridge = entry.master === this.pod.bridgeIndex || entry.ifindex === this.pod.portIndex;
    // The bridge's and its ports' own addresses (local, permanent) and a device's own list (NTF_SELF)
    // are not learned entries.
    const own = (entry.flags & NeighFlag.Self) !== 0 || (entry.state & NeighState.Permanent) !== 0;
    if (!onBridge || own) return;
    const name = this.others.get(entry.ifindex) ?? this.portName(entry.ifindex);
    this.last = { ifindex: entry.ifindex, name };
    if (entry.ifindex === this.pod.portIndex) this.seenOnOwnPort = true;
    // Before the pod's own port has the MAC, another port holding it is where it was before round 1 (the
    // bridge may not have learned from round 1 yet when it is read): a duplicate only if it is still there at
    // the end. Once the own port had it, another port taking it is another host sending from the pod's MAC.
    else if (this.seenOnOwnPort && !this.others.has(entry.ifindex)) this.others.set(entry.ifindex, name);
  }

  private observeNeighbour(entry: NeighEntry, deleted: boolean): void {
    if (entry.ifindex !== this.pod.bridgeIndex || (entry.flags & NeighFlag.Proxy) !== 0 || !entry.dst) return;
    const dst = entry.dst;
    const watched = this.watched.find((w) => w.family === entry.family && w.bytes.equals(dst));
    if (!watched) return;
    // INCOMPLETE, FAILED and NONE entries hold no link-layer address: as good as absent.
    const valid = !deleted && (entry.state & NUD_VALID) !== 0 && entry.lladdr?.length === 6;
    watched.held = valid ? Buffer.from(entry.lladdr!) : undefined;
  }
}

/** One line for the log: the FDB verdict, then each address's neighbour verdict. */
export function describeNodeVerdict(v: NodeVerdict): string {
  const fdb =
    v.fdb.kind === 'converged'
      ? `fdb converged on ${v.fdb.port}`
      : v.fdb.kind === 'duplicate'
        ? `fdb duplicate MAC on ${v.fdb.others.join(', ')} (pod port ${v.fdb.port})`
        : 'fdb not learned';
  const neighbours = v.neighbours.map((n) =>
    n.kind === 'stale' ? `${n.address} stale (held by ${n.mac})` : `${n.address} ${n.kind}`,
  );
  return `${fdb}; neighbours: ${neighbours.length > 0 ? neighbours.join(', ') : 'none'}`;
}
