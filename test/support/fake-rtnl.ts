// A netns seen through rtnetlink, for unit tests: links, addresses and bridge
// port states a test sets and changes; every call is read from them afresh.
import type { Rtnl } from '../../src/sys/rtnl';
import type { AddressInfo, LinkInfo, RouteEntry } from '../../src/wire/rtnetlink';
import { parseIPv4, parseIPv6 } from '../../src/wire/ip';

/** A link with defaults: a veth, up with carrier, MAC 02:00:00:00:00:<index>. */
export function fakeLink(fields: Partial<LinkInfo> & { index: number; name: string }): LinkInfo {
  return {
    mac: Buffer.from([2, 0, 0, 0, 0, fields.index]),
    up: true,
    running: true,
    noarp: false,
    linkIndex: undefined,
    linkNetnsid: undefined,
    kind: 'veth',
    ipvlanMode: undefined,
    portState: undefined,
    ...fields,
  };
}

/** An address of link `index` from its text (IPv4 or IPv6), no DAD flag unless given. */
export function fakeAddress(
  index: number,
  text: string,
  flags: Partial<Pick<AddressInfo, 'tentative' | 'dadFailed' | 'optimistic'>> = {},
): AddressInfo {
  const v6 = text.includes(':');
  return {
    index,
    family: v6 ? 6 : 4,
    bytes: v6 ? parseIPv6(text) : parseIPv4(text),
    prefixLength: v6 ? 64 : 24,
    tentative: false,
    dadFailed: false,
    optimistic: false,
    ...flags,
  };
}

/** What a fake netns holds; a test mutates it between calls. */
export interface FakeNetns {
  links: LinkInfo[];
  addresses: AddressInfo[];
  /** Bridge port state by ifindex; absent: no bridge port. */
  ports: Map<number, number>;
  /** Every setMac call, MAC as hex. */
  setMacs: { index: number; mac: string }[];
  /** When set, setMac throws it (and changes nothing); a function runs at each call and says whether it fails. */
  setMacError?: Error | ((index: number) => Error | undefined);
  /** The routing table (routes() gives those of the family asked for); default none. */
  routes?: RouteEntry[];
}

/** An empty fake netns. */
export function fakeNetns(init: Partial<FakeNetns> = {}): FakeNetns {
  return { links: [], addresses: [], ports: new Map(), setMacs: [], ...init };
}

/** The Rtnl of `ns`: the calls the announce layer makes, answered from its current content. */
export function fakeRtnl(ns: FakeNetns): Rtnl {
  const fake: Pick<
    Rtnl,
    'linkByName' | 'linkByIndex' | 'links' | 'addresses' | 'bridgePortState' | 'routes' | 'setMac' | 'close'
  > = {
    linkByName: (name) => ns.links.find((l) => l.name === name),
    linkByIndex: (index) => ns.links.find((l) => l.index === index),
    links: () => [...ns.links],
    addresses: (index) => ns.addresses.filter((a) => a.index === index),
    bridgePortState: (index) => ns.ports.get(index),
    routes: (family) => (ns.routes ?? []).filter((r) => r.family === family),
    setMac: (index, mac) => {
      const error = typeof ns.setMacError === 'function' ? ns.setMacError(index) : ns.setMacError;
      if (error) throw error;
      ns.setMacs.push({ index, mac: Buffer.from(mac).toString('hex') });
      ns.links = ns.links.map((l) => (l.index === index ? { ...l, mac: Buffer.from(mac) } : l));
    },
    close: () => undefined,
  };
  return fake as Rtnl;
}
