// Holding a pod's bridge port out of forwarding (by hand, or by the kernel's
// STP), and putting a marker frame into a capture to show when the test let go.
import { readFile } from 'node:fs/promises';
import type { Capture } from './capture';
import { run, runOk } from './exec';
import { readPcap } from './pcap';

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
  await runOk('ip', ['link', 'set', bridge, 'type', 'bridge', 'forward_delay', String(forwardDelayCs), 'stp_state', '1']);
  const { stdout } = await runOk('ip', ['-j', '-d', 'link', 'show', bridge]);
  const data = (JSON.parse(stdout) as { linkinfo?: { info_data?: { stp_state?: number; forward_delay?: number } } }[])[0]?.linkinfo?.info_data;
  if (data?.stp_state !== 1 || data.forward_delay !== forwardDelayCs) throw new Error(`${bridge}: not kernel STP with forward_delay ${forwardDelayCs}: ${JSON.stringify(data)}`);
}

/**
 * Sends one ARP request, "who has `target`? tell `sender`", out of `iface` in
 * `netns` (Habets' arping; it waits for no answer). The pod's own sender IP
 * is never `sender`, so the frame tells itself apart from announcements.
 */
export async function sendArpMarker(netns: string, iface: string, sender: string, target: string): Promise<void> {
  const out = await run('arping', ['-c1', '-w0', '-S', sender, '-I', iface, target], { netns });
  if (!/\b1 packets transmitted/.test(out.stdout)) throw new Error(`arping sent no marker (exit ${out.code}): ${out.stdout}${out.stderr}`);
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
