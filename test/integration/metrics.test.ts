// The announcer's HTTP endpoint for real: `announcer daemon <stateDir>
// --listen=127.0.0.1:0` (the kernel picks the port; ss(8) says which), a real
// ADD with count 2 through it after the real bridge plugin, frames captured
// by tcpdump and decoded by tshark. /metrics is scraped over HTTP and parsed:
// its frame counters equal the frames on the wire, and the ADD-to-round-1
// histogram holds one observation. /healthz answers 200, and nothing once the
// announcer is SIGTERMed. A second announcer on the same port exits 1.
import { describe, expect, it } from 'vitest';
import {
  allocSubnet,
  announcerAdd,
  announcerFiles,
  attachBridgePod,
  bridgeWithKeeper,
  garpsFor,
  attachmentOf,
  nasFor,
  runOk,
  RUN_TAG,
  scopePerTest,
  skipIntegration,
  startCapture,
  waitFor,
  promSamples,
  spawnDaemon,
} from './harness';
import { cleanStart } from './harness/executor-steps';

const PREFIX = `mx${RUN_TAG}`;

/** The TCP port `pid` listens on (ss -ltnp), once it does. */
async function listeningPort(pid: number): Promise<number> {
  let port: number | undefined;
  await waitFor(
    async () => {
      const out = (await runOk('ss', ['-Hltnp'])).stdout;
      const line = out.split('\n').find((l) => l.includes(`pid=${pid},`));
      port = line ? Number(/:(\d+)\s/.exec(line)?.[1]) : undefined;
      return port !== undefined && port > 0;
    },
    { timeoutMs: 10_000, what: `announcer ${pid} listening on TCP` },
  );
  return port!;
}

describe.skipIf(skipIntegration())('announcer daemon --listen: /metrics and /healthz over HTTP', () => {
  const scope = scopePerTest(PREFIX);

  const countsExactlyFramesTitle =
    'counts exactly the frames on the wire, observes one ADD in the histogram, and stops answering once SIGTERMed';
  it(countsExactlyFramesTitle, async () => {
    const { files } = await cleanStart(scope);
    const net = allocSubnet();
    const bridge = await bridgeWithKeeper(scope(), net, { prefix: PREFIX, ip6: true });
    const containerId = `${PREFIX}-pod`;
    const pod = await attachBridgePod(scope(), { prefix: PREFIX, net, bridge, host: 5, containerId, ip6: true });
    const ip6 = net.v6(5);

    const announcer = spawnDaemon(scope(), files.stateDir, ['--listen=127.0.0.1:0']);
    const port = await listeningPort(announcer.pid);
    const base = `http://127.0.0.1:${port}`;
    const healthy = async () => (await fetch(`${base}/healthz`).catch(() => undefined))?.status === 200;
    await waitFor(healthy, { timeoutMs: 10_000, what: '/healthz 200' });

    const capture = await startCapture(scope(), { iface: pod.hostVeth, filter: 'arp or icmp6' });
    // idleExitMs: the announcer stays while the test scrapes; intervalMs: round 2 soon after round 1.
    const add = await announcerAdd(scope(), attachmentOf(pod, files), {
      count: 2,
      intervalMs: 300,
      idleExitMs: 60_000,
    });
    expect(add.code, add.stdout + add.stderr).toBe(0);
    let samples = new Map<string, number>();
    await waitFor(
      async () => {
        samples = promSamples(await (await fetch(`${base}/metrics`)).text());
        return samples.get('cni_announcer_rounds_total{outcome="sent"}') === 2;
      },
      { timeoutMs: 10_000, what: 'two rounds counted' },
    );
    const frames = await capture.stop();

    const requests = garpsFor(frames, pod.mac, pod.ip).filter((f) => f.arp!.opcode === 1);
    const replies = garpsFor(frames, pod.mac, pod.ip).filter((f) => f.arp!.opcode === 2);
    const nas = nasFor(frames, pod.mac, ip6).filter((f) => f.icmpv6!.flags?.solicited === false);
    expect(requests.length).toBe(2); // one per round
    expect(nas.length).toBe(2);
    expect(samples.get('cni_announcer_frames_sent_total{kind="garp_request"}')).toBe(requests.length);
    expect(samples.get('cni_announcer_frames_sent_total{kind="garp_reply"}')).toBe(replies.length);
    expect(samples.get('cni_announcer_frames_sent_total{kind="na"}')).toBe(nas.length);
    expect(samples.get('cni_announcer_errors_total')).toBe(0);
    // The ADD was taken by this announcer: one observation, from its own round 1.
    expect(samples.get('cni_announcer_add_to_first_round_seconds_count')).toBe(1);
    expect(samples.get('cni_announcer_add_to_first_round_seconds_bucket{le="+Inf"}')).toBe(1);
    expect(samples.get('cni_announcer_add_to_first_round_seconds_sum')).toBeGreaterThan(0);

    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect((await fetch(`${base}/nothing`)).status).toBe(404);
    const health = await fetch(`${base}/healthz`);
    expect([health.status, await health.text()]).toEqual([200, 'ok\n']);

    announcer.child.kill('SIGTERM');
    expect(await announcer.exited).toBe(0);
    await expect(fetch(`${base}/healthz`)).rejects.toThrow(); // connection refused: nobody listens
  });

  it('a second announcer on a port in use says so on stderr and exits 1', async () => {
    const [a, b] = [await announcerFiles(scope()), await announcerFiles(scope())];
    const first = spawnDaemon(scope(), a.stateDir, ['--listen=127.0.0.1:0']);
    const port = await listeningPort(first.pid);
    const second = spawnDaemon(scope(), b.stateDir, [`--listen=127.0.0.1:${port}`]);
    expect(await second.exited).toBe(1);
    expect(second.stderr()).toContain(`announcer daemon: cannot listen for HTTP: bind 127.0.0.1:${port}: EADDRINUSE`);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200); // the first one serves on
  });
});
