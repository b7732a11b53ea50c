// One ICMP echo request, as `ping` sends it, and what came back.
import { run } from './exec';

/** Whether one echo request got its reply within the wait, and the round-trip time it reported. */
export interface PingResult {
  replied: boolean;
  /** As ping printed it, e.g. `0.112`; absent without a reply. */
  rttMs?: string;
}

/** Sends one echo request to ip (from the host, or inside netns) and waits up to waitS seconds for the reply. */
export async function pingOnce(ip: string, waitS = 2, netns?: string): Promise<PingResult> {
  const res = await run('ping', ['-n', '-c1', `-W${waitS}`, ip], netns === undefined ? {} : { netns });
  const rtt = /time=([\d.]+) ms/.exec(res.stdout)?.[1];
  return res.code === 0 ? { replied: true, ...(rtt === undefined ? {} : { rttMs: rtt }) } : { replied: false };
}
