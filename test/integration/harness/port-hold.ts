// Holding a pod's bridge port out of forwarding (by hand, or by the kernel's
// STP, which BPDUs the test sends can make block), and putting a marker frame
// into a capture to show when the test let go.
import { readFile } from 'node:fs/promises';
import type { Capture } from './capture';
import { run, runOk } from './exec';
import { deleteLink } from './links';
import { uniqueName } from './names';
import { createNetns, type Netns } from './netns';
import { readPcap } from './pcap';
import type { Scope } from './scope';
import { setSysctl } from './sysctl';

/** Bridge port states as `bridge link set … state N` numbers them (IFLA_BRPORT_STATE). */
export const PORT_STATES = { disabled: 0, listening: 1, learning: 2, forwarding: 3, blocking: 4 } as const;

/** A bridge port state by name. */
export type PortStateName = keyof typeof PORT_STATES;

/** Sets a bridge port's state by hand; the kernel allows it only while the bridge's STP is off. */
export async function setPortState(dev: string, state: PortStateName): Promise<void> {
  await runOk('bridge', ['link', 'set', 'dev', dev, 'state', String(PORT_STATES[state])]);
}

/**
 * Turns the kernel's STP on for `bridge`, each of listening and learning
 * `forwardDelayCs` centiseconds long (with STP on, the kernel accepts 200 to
 * 3000). Throws when the bridge runs user-space STP (a /sbin/bridge-stp took
 * it over), whose timing is not the kernel's.
 */
export async function enableKernelStp(bridge: string, forwardDelayCs: number): Promise<void> {
  const stp = ['forward_delay', String(forwardDelayCs), 'stp_state', '1'];
  await runOk('ip', ['link', 'set', bridge, 'type', 'bridge', ...stp]);
  const { stdout } = await runOk('ip', ['-j', '-d', 'link', 'show', bridge]);
  const data = (
    JSON.parse(stdout) as { linkinfo?: { info_data?: { stp_state?: number; forward_delay?: number } } }[]
  )[0]?.linkinfo?.info_data;
  if (data?.stp_state !== 1 || data.forward_delay !== forwardDelayCs)
    throw new Error(`${bridge}: not kernel STP with forward_delay ${forwardDelayCs}: ${JSON.stringify(data)}`);
}

/**
 * Sends one ARP request, "who has `target`? tell `sender`", out of `iface` in
 * `netns` (Habets' arping; it waits for no answer). The pod's own sender IP
 * is never `sender`, so the frame tells itself apart from announcements.
 */
export async function sendArpMarker(netns: string, iface: string, sender: string, target: string): Promise<void> {
  const out = await run('arping', ['-c1', '-w0', '-S', sender, '-I', iface, target], { netns });
  if (!/\b1 packets transmitted/.test(out.stdout))
    throw new Error(`arping sent no marker (exit ${out.code}): ${out.stdout}${out.stderr}`);
}

/** The IPv4 sender of an Ethernet frame carrying ARP, else undefined. */
export function arpSenderIp(frame: Buffer): string | undefined {
  if (frame.length < 42 || frame.readUInt16BE(12) !== 0x0806) return undefined;
  return frame.subarray(28, 32).join('.');
}

/** Whether the capture so far holds an ARP frame whose sender IP is `ip` (read from its pcap file, undecoded). */
export async function capturedArpFrom(capture: Capture, ip: string): Promise<boolean> {
  const { packets } = readPcap(await readFile(capture.file));
  return packets.some((p) => arpSenderIp(p.data) === ip);
}

/** A bridge ID: priority and MAC. */
export interface BridgeId {
  priority: number;
  mac: string;
}

const macBytes = (mac: string): Buffer => Buffer.from(mac.replaceAll(':', ''), 'hex');

/**
 * An 802.1D configuration BPDU from bridge `root`, which claims to be the root
 * (root path cost 0), sent from its port `portId`, its information valid for
 * `maxAgeS` seconds. A bridge hearing such BPDUs on two ports makes the one
 * that hears the higher port ID an alternate port: blocking.
 */
export function configBpdu(src: string, root: BridgeId, portId: number, maxAgeS: number): Buffer {
  const id = Buffer.concat([Buffer.from([root.priority >> 8, root.priority & 0xff]), macBytes(root.mac)]);
  const ticks = (s: number): Buffer => Buffer.from([(s * 256) >> 8, (s * 256) & 0xff]);
  const bpdu = Buffer.concat([
    Buffer.from([0, 0, 0, 0, 0]), // protocol 0, version 0, type 0 (configuration), flags 0
    id,
    Buffer.alloc(4), // root path cost 0
    id, // the sender is the root itself
    Buffer.from([portId >> 8, portId & 0xff]),
    ticks(0), // message age
    ticks(maxAgeS),
    ticks(2), // hello time
    ticks(2), // forward delay
  ]);
  const llc = Buffer.from([0x42, 0x42, 0x03]);
  const frame = Buffer.concat([
    macBytes('01:80:c2:00:00:00'),
    macBytes(src),
    Buffer.from([0, llc.length + bpdu.length]),
    llc,
    bpdu,
  ]);
  return Buffer.concat([frame, Buffer.alloc(Math.max(0, 60 - frame.length))]);
}

/** Sends one raw Ethernet frame out of `iface` in `netns` (python3, an AF_PACKET socket). */
export async function sendRawFrame(netns: string, iface: string, frame: Buffer): Promise<void> {
  const script =
    'import socket,sys\ns=socket.socket(socket.AF_PACKET,socket.SOCK_RAW)\ns.bind((sys.argv[1],0))' +
    '\ns.send(bytes.fromhex(sys.argv[2]))';
  await runOk('python3', ['-c', script, iface, frame.toString('hex')], { netns });
}

/** A port of `bridge` whose far end, `eth0`, sits in a netns of its own: somewhere to send BPDUs from. */
export interface FarPort {
  netns: Netns;
  /** The bridge port (host netns). */
  port: string;
}

/**
 * Adds a FarPort to `bridge`, both ends up and without IPv6; the port goes at scope close, the far end with its netns.
 */
export async function addFarPort(scope: Scope, bridge: string, prefix: string): Promise<FarPort> {
  const netns = await createNetns(scope, prefix);
  const port = uniqueName(prefix);
  await runOk('ip', ['link', 'add', port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns.name]);
  scope.defer(() => deleteLink(port), `veth ${port}`);
  await setSysctl(`net.ipv6.conf.${port}.disable_ipv6`, 1);
  await setSysctl('net.ipv6.conf.eth0.disable_ipv6', 1, netns.name);
  await runOk('ip', ['link', 'set', port, 'master', bridge]);
  await runOk('ip', ['-n', netns.name, 'link', 'set', 'eth0', 'up']);
  await runOk('ip', ['link', 'set', port, 'up']);
  return { netns, port };
}
