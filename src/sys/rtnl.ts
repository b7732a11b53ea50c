// Typed rtnetlink operations over one `netlink` socket. The socket is bound
// to whatever netns it was created in (see netns.ts); this file never switches.
import type { RtNetlinkSocket, rt } from 'netlink';

type LinkMessage = rt.LinkMessage;
import { bridgePortState, ipvlanMode, linkKind, type IpvlanMode } from './link-info';
import { hasErrno, netlinkCall } from './sys-error';

const AF_INET = 2;
/** Every request gives up after this long (a lost reply must not hang ADD). */
const REQUEST = { timeout: 5000 };
/** IFLA_EXT_MASK with RTEXT_FILTER_SKIP_STATS: link stats are large and unused. */
const SKIP_STATS = Buffer.from([8, 0, 0, 0]);
const AF_BRIDGE = 7;
const AF_INET6 = 10;

/** What the plugin needs to know about one link. */
export interface LinkInfo {
  index: number;
  name: string;
  mac: Buffer | undefined;
  /** IFF_UP: administratively up. */
  up: boolean;
  /** IFF_RUNNING: up with carrier (for a veth, the peer is up too). */
  running: boolean;
  noarp: boolean;
  /** IFLA_MASTER: the ifindex of the bridge (or other master) it is enslaved to. */
  master: number | undefined;
  /** IFLA_LINK: the peer (veth) or parent (macvlan/ipvlan/vlan) ifindex. */
  linkIndex: number | undefined;
  /** IFLA_LINK_NETNSID: set when linkIndex lives in another netns. */
  linkNetnsid: number | undefined;
  kind: string | undefined;
  ipvlanMode: IpvlanMode | undefined;
}

/** One address of a link, with the DAD flags that decide whether it may be announced. */
export interface AddressInfo {
  index: number;
  family: 4 | 6;
  bytes: Buffer;
  prefixLength: number;
  tentative: boolean;
  dadFailed: boolean;
  optimistic: boolean;
}

function toLinkInfo(m: LinkMessage): LinkInfo {
  const flags = m.data.flags ?? {};
  const a = m.attrs;
  return {
    index: m.data.index ?? 0,
    name: a.ifname ?? '',
    mac: a.address,
    up: flags.up === true,
    running: flags.running === true,
    noarp: flags.noarp === true,
    master: a.master,
    linkIndex: a.link && a.link.length >= 4 ? a.link.readUInt32LE(0) : undefined,
    linkNetnsid: a.linkNetnsid,
    kind: linkKind(a.linkinfo),
    ipvlanMode: ipvlanMode(a.linkinfo),
  };
}

/** rtnetlink multicast groups the plugin listens to. */
export type RtnlGroup = 'LINK' | 'IPV4_IFADDR' | 'IPV6_IFADDR';

/** rtnetlink queries and changes over one socket. */
export class Rtnl {
  constructor(private readonly socket: RtNetlinkSocket) {
    // A receive error (ENOBUFS when notifications overflow on a busy node) is
    // emitted as 'error'; unheard, it would crash the plugin. Requests time out
    // on their own, and watchers re-read state (see watch).
    socket.socket.on('error', () => {});
  }

  /** All links of the socket's netns. */
  async links(): Promise<LinkInfo[]> {
    const msgs = await netlinkCall('RTM_GETLINK dump', () => this.socket.getLinks({}, { extMask: SKIP_STATS }, REQUEST));
    return msgs.map(toLinkInfo);
  }

  /** The link called `name`, or undefined. */
  async linkByName(name: string): Promise<LinkInfo | undefined> {
    return this.getLink(`RTM_GETLINK ${name}`, {}, { ifname: name });
  }

  /** The link with ifindex `index`, or undefined. */
  async linkByIndex(index: number): Promise<LinkInfo | undefined> {
    return this.getLink(`RTM_GETLINK ifindex ${index}`, { index }, {});
  }

  // One link by index or name: a dump would make the `netlink` package parse every link.
  private async getLink(operation: string, data: { index?: number }, attrs: { ifname?: string }): Promise<LinkInfo | undefined> {
    try {
      const [msg] = await netlinkCall(operation, () => this.socket.getLink(data, { ...attrs, extMask: SKIP_STATS }, REQUEST));
      return msg ? toLinkInfo(msg) : undefined;
    } catch (err) {
      if (hasErrno(err, 'ENODEV')) return undefined;
      throw err;
    }
  }

  /** The bridge port state of `index` (PortState), or undefined if it is no bridge port. */
  async bridgePortState(index: number): Promise<number | undefined> {
    const msgs = await netlinkCall('RTM_GETLINK AF_BRIDGE dump', () => this.socket.getLinks({ family: AF_BRIDGE }, {}, REQUEST));
    const port = msgs.find((m) => m.data.index === index);
    return port ? bridgePortState(port.attrs.protinfo) : undefined;
  }

  /** The IPv4 and IPv6 addresses of link `index`. */
  async addresses(index: number): Promise<AddressInfo[]> {
    const msgs = await netlinkCall('RTM_GETADDR dump', () => this.socket.getAddresses({}, {}, REQUEST));
    const out: AddressInfo[] = [];
    for (const m of msgs) {
      if (m.data.index !== index) continue;
      const family = m.data.family === AF_INET ? 4 : m.data.family === AF_INET6 ? 6 : undefined;
      const bytes = m.attrs.local ?? m.attrs.address;
      if (!family || !bytes) continue;
      // IFA_FLAGS (32 bit) supersedes ifa_flags (8 bit) when present.
      const flags = m.attrs.flags ?? m.data.flags ?? {};
      out.push({
        index,
        family,
        bytes,
        prefixLength: m.data.prefixlen ?? 0,
        tentative: flags.tentative === true,
        dadFailed: flags.dadfailed === true,
        optimistic: flags.optimistic === true,
      });
    }
    return out;
  }

  /** Sets the MAC address of link `index`. */
  async setMac(index: number, mac: Uint8Array): Promise<void> {
    await netlinkCall(`set MAC of ifindex ${index}`, () => this.socket.setLink({ index }, { address: Buffer.from(mac) }, REQUEST));
  }

  /**
   * Joins `groups` and calls `onEvent` for every notification until the
   * returned function is called. Join before reading state, so that no
   * change slips between the read and the subscription.
   */
  watch(groups: readonly RtnlGroup[], onEvent: () => void): () => void {
    const listener = (): void => onEvent();
    this.socket.on('message', listener);
    // Notifications lost to an overflow are still a change: re-read.
    this.socket.socket.on('error', listener);
    for (const g of groups) this.socket.addMembership(g);
    return () => {
      this.socket.off('message', listener);
      this.socket.socket.off('error', listener);
      for (const g of groups) {
        try {
          this.socket.dropMembership(g);
        } catch {
          // the socket may already be closed
        }
      }
    };
  }

  /** Closes the socket. */
  close(): void {
    this.socket.socket.close();
  }
}
