// The seed bug's fix, guarded: the announcer sends nothing while the pod's
// bridge port is not forwarding, and sends its round once it is, whether the
// port is held by hand (disabled, listening, learning) or by the kernel's STP
// (disabled or blocking, then listening → learning → forwarding), within ADD's
// wait or after it (the background announcer). And no NA while the address is
// tentative (DAD). Blocking cannot be held by hand: with STP off, the kernel
// turns a port set to blocking into a forwarding one at once
// (br_make_forwarding); BPDUs the test sends make the pod's port an alternate.
//
// Proof from the captures, not from clocks: one capture inside the pod on eth0
// sees every frame the pod sends, even those the port drops; one on the bridge
// sees only what the port forwarded. Every announcement must be in both
// (exactly the known count), and must follow a marker frame the test sends
// from the pod after the announcer said it waits and before the test lets the
// port forward. The kernel's own arp_notify and ndisc_notify are off in the pod.
import { WAITING_FOR_POD, waitingForPod } from './harness/executor-steps';
import { describe, expect, it } from 'vitest';
import {
  addFarPort,
  allocSubnet,
  announcerAdd,
  announcerDel,
  announcerFiles,
  announcerLeftovers,
  capturedArpFrom,
  configBpdu,
  createBridgePod,
  createStandInPod,
  enableKernelStp,
  killStrays,
  podPrevResult,
  portState,
  runOk,
  RUN_TAG,
  scopePerTest,
  sendArpMarker,
  sendRawFrame,
  setPortState,
  setSysctl,
  skipIntegration,
  startCapture,
  waitDaemonGone,
  waitFor,
  type AnnouncerOutput,
  attachmentOf,
  type LogLevelName,
  type Frame,
  type PortStateName,
} from './harness';

/** Every netns and link this file creates starts with this. */
const PREFIX = `ps${RUN_TAG}`;
const POD_HOST = 5;
/** The marker's sender IP: no pod has it. */
const MARKER_HOST = 77;
/** The kernel's shortest forward delay with STP on: 2 s in listening, 2 s in learning. */
const FORWARD_DELAY_CS = 200;

/** The root bridge the test's BPDUs claim: priority 0 beats any bridge of the node. */
const ROOT = { priority: 0, mac: '02:00:00:00:00:01' };

/**
 * The pod's announcements: GARPs for its IPv4 address and unsolicited NAs for its IPv6 one, sent by its MAC, in capture
 * order.
 */
function announcements(frames: readonly Frame[], mac: string, ip4: string, ip6: string | undefined): string[] {
  return frames
    .filter((f) => f.eth.src === mac)
    .flatMap((f) => {
      if (f.arp?.isGratuitous && f.arp.senderIp === ip4 && f.arp.targetIp === ip4) return [`garp ${ip4}`];
      if (ip6 && f.icmpv6?.type === 136 && f.icmpv6.flags?.solicited === false && f.icmpv6.target === ip6)
        return [`na ${ip6}`];
      return [];
    });
}

describe.skipIf(skipIntegration())('bridge port states: nothing leaves before the port forwards', () => {
  const scope = scopePerTest(PREFIX);

  /**
   * A pod on a bridge of its own, settled (eth0 up, port forwarding), the kernel's own announcements off; captures on
   * its eth0 and on the bridge.
   */
  async function capturedPod(tag: string, ip6: boolean) {
    killStrays(scope(), { strict: true });
    const files = await announcerFiles(scope());
    const containerId = `${PREFIX}-${tag}`;
    const pod = await createBridgePod(scope(), { prefix: PREFIX, ip6, containerId, settle: true });
    const ns = pod.netns.name;
    await setSysctl('net.ipv4.conf.eth0.arp_notify', 0, ns);
    if (ip6) await setSysctl('net.ipv6.conf.eth0.ndisc_notify', 0, ns);
    const onPod = await startCapture(scope(), { netns: ns, iface: 'eth0', filter: 'arp or icmp6' });
    const onBridge = await startCapture(scope(), { iface: pod.bridge, filter: 'arp or icmp6' });
    const att = attachmentOf(pod, files);
    const ip6Addr = ip6 ? pod.net.v6(POD_HOST) : undefined;
    const expected = [`garp ${pod.ip}`, ...(ip6Addr ? [`na ${ip6Addr}`] : [])];
    return { pod, files, onPod, onBridge, att, ip6: ip6Addr, expected, marker: pod.net.v4(MARKER_HOST) };
  }
  type Captured = Awaited<ReturnType<typeof capturedPod>>;

  /** Checks that one `level msg` record of the log names `reason` among what the pod is waited for. */
  async function expectLogSays(c: Pick<Captured, 'files'>, level: LogLevelName, msg: string, reason: string) {
    const said = await c.files.logged(level, msg, { waitingFor: (v) => String(v).includes(reason) });
    expect(said, `"${msg}" with "${reason}" in the log`).toHaveLength(1);
  }

  /** ADD with one round and up to 20 s to wait for the pod, still running, once its wait for the pod is logged. */
  async function addWaiting(c: Captured): Promise<{ adding: Promise<AnnouncerOutput> }> {
    const adding = announcerAdd(scope(), c.att, { count: 1, addWaitMs: 20_000, logLevel: 'debug' });
    await waitingForPod(c.files, adding); // ended first: the captures tell what it sent too early
    return { adding };
  }

  /**
   * The ADD succeeded; the captures saw the announcements only once the port forwarded; the log said the pod was waited
   * for as the port was `state`; nothing is left.
   */
  async function expectWaitedFor(c: Captured, add: AnnouncerOutput, state: string): Promise<void> {
    expect(add.code, add.stdout).toBe(0);
    await expectSentOnlyOnceForwarding(c);
    await expectLogSays(c, 'debug', WAITING_FOR_POD, `bridge port ${c.pod.hostVeth} is ${state}`);
    expect(await announcerLeftovers(c.files)).toEqual([]);
  }

  /** Sends the marker from the pod and waits until the pod-side capture holds it. */
  async function mark(c: Captured): Promise<void> {
    await sendArpMarker(c.pod.netns.name, 'eth0', c.marker, c.pod.net.v4(1));
    await waitFor(() => capturedArpFrom(c.onPod, c.marker), { what: 'the marker in the pod-side capture' });
  }

  /**
   * Stops both captures and checks them: on eth0 exactly the expected
   * announcements, each after the marker; on the bridge the same ones, so
   * the port forwarded each of them.
   */
  async function expectSentOnlyOnceForwarding(c: Captured): Promise<void> {
    const pod = await c.onPod.stop();
    const bridge = await c.onBridge.stop();
    const markerAt = pod.findIndex((f) => f.arp?.senderIp === c.marker);
    expect(markerAt, 'the marker is in the pod-side capture').toBeGreaterThanOrEqual(0);
    const ours = (frames: readonly Frame[]) => announcements(frames, c.pod.mac, c.pod.ip, c.ip6);
    expect(ours(pod.slice(0, markerAt)), 'announcements before the marker (the port was not forwarding)').toEqual([]);
    expect(ours(pod.slice(markerAt + 1)).sort(), 'announcements after the marker').toEqual([...c.expected].sort());
    expect(ours(bridge).sort(), 'announcements the bridge received through the port').toEqual([...c.expected].sort());
  }

  const handHeld: { state: PortStateName; ip6: boolean }[] = [
    { state: 'disabled', ip6: false },
    { state: 'listening', ip6: true },
    { state: 'learning', ip6: true },
  ];
  it.each(handHeld)(
    'port held in $state (IPv6 $ip6): ADD waits, and sends once the test sets it forwarding',
    async ({ state, ip6 }) => {
      const c = await capturedPod(`hand-${state}`, ip6);
      await setPortState(c.pod.hostVeth, state);

      const { adding } = await addWaiting(c);
      await mark(c);
      await setPortState(c.pod.hostVeth, 'forwarding');
      const add = await adding;

      expect(add.json).toEqual(c.pod.result);
      await expectWaitedFor(c, add, state);
    },
  );

  const kernelSTPForwardTitle =
    'kernel STP (forward delay 2 s): ADD waits while the port is disabled, ' +
    'listening and learning, and sends once it forwards';
  it(kernelSTPForwardTitle, async () => {
    const c = await capturedPod('stp', true);
    await enableKernelStp(c.pod.bridge, FORWARD_DELAY_CS);
    // The host end down: the port is disabled, and starts over (listening) when it comes back up.
    await runOk('ip', ['link', 'set', c.pod.hostVeth, 'down']);

    const { adding } = await addWaiting(c);
    await runOk('ip', ['link', 'set', c.pod.hostVeth, 'up']);
    // eth0 has its carrier back (a frame sent without it never reaches the capture); the port listens for 2 s.
    await mark(c);
    const add = await adding;

    await expectWaitedFor(c, add, 'disabled');
  });

  const kernelSTPPortTitle =
    'kernel STP, the port blocking as an alternate: ADD waits while it blocks, ' +
    'listens and learns, and sends once it forwards';
  it(kernelSTPPortTitle, async () => {
    const c = await capturedPod('alt', false);
    await enableKernelStp(c.pod.bridge, FORWARD_DELAY_CS);
    // The same root heard on two ports: the far port, with the lower port ID, becomes the root
    // port, and the pod's an alternate port. The BPDUs' information lasts 120 s.
    const far = await addFarPort(scope(), c.pod.bridge, PREFIX);
    await sendRawFrame(far.netns.name, 'eth0', configBpdu(ROOT.mac, ROOT, 0x8001, 120));
    await sendRawFrame(c.pod.netns.name, 'eth0', configBpdu(ROOT.mac, ROOT, 0x8002, 120));
    await waitFor(async () => (await portState(c.pod.hostVeth)) === 'blocking', {
      what: `port ${c.pod.hostVeth} blocking`,
    });

    const { adding } = await addWaiting(c);
    await mark(c);
    // The root port goes: the pod's port takes over, through listening and learning (2 s each).
    await runOk('ip', ['link', 'set', far.port, 'down']);
    const add = await adding;

    await expectWaitedFor(c, add, 'blocking');
  });

  const portListeningPastTitle =
    'port listening past addWaitMs: ADD returns, and the background announcer sends round 1 once the port forwards';
  it(portListeningPastTitle, async () => {
    const c = await capturedPod('deferred', true);
    await setPortState(c.pod.hostVeth, 'listening');

    const options = { count: 1, addWaitMs: 300, readyTimeoutMs: 30_000, idleExitMs: 500 };
    const add = await announcerAdd(scope(), c.att, options);
    expect(add.code, add.stdout).toBe(0);
    expect(add.json).toEqual(c.pod.result);
    await mark(c);
    await setPortState(c.pod.hostVeth, 'forwarding');
    await waitFor(async () => (await c.files.logged('info', 'announced')).length > 0, { what: 'round 1' });
    await waitDaemonGone(c.files.stateDir, 10_000);

    await expectSentOnlyOnceForwarding(c);
    const deferred = 'pod not ready yet: announcing from the background once it is';
    await expectLogSays(c, 'info', deferred, `bridge port ${c.pod.hostVeth} is listening`);
    expect(await c.files.logged('info', 'announced', { round: 1, deferred: true })).toHaveLength(1);
    // The record lasts until DEL, as for any attachment with background work.
    expect(await announcerDel(c.att)).toMatchObject({ code: 0, stdout: '' });
    expect(await announcerLeftovers(c.files)).toEqual([]);
  });

  it('IPv6 DAD (3 probes): no NA while the address is tentative, one NA after the last probe', async () => {
    killStrays(scope(), { strict: true });
    const files = await announcerFiles(scope());
    const net = allocSubnet();
    const ip6 = net.v6(POD_HOST);
    const pod = await createStandInPod(scope(), {
      prefix: PREFIX,
      v6: [net.v6Cidr(POD_HOST)],
      dad: true,
      up: false,
      sysctls: { 'net.ipv6.conf.eth0.dad_transmits': 3, 'net.ipv6.conf.eth0.ndisc_notify': 0 },
    });
    const ns = pod.netns.name;
    // eth0 up without carrier: the address stays tentative, and DAD starts only when the peer comes up.
    await runOk('ip', ['-n', ns, 'link', 'set', pod.peer, 'down']);
    await runOk('ip', ['-n', ns, 'link', 'set', pod.ifname, 'up']);
    const capture = await startCapture(scope(), { netns: ns, iface: pod.ifname, filter: 'icmp6' });
    const prevResult = podPrevResult(pod.netns.path, [
      { name: 'eth0', mac: pod.mac, addresses: [net.v6Cidr(POD_HOST)] },
    ]);
    const att = attachmentOf({ ...pod, result: prevResult }, files, {
      network: 'harness',
      containerId: `${PREFIX}-dad`,
    });

    const adding = announcerAdd(scope(), att, { count: 1, addWaitMs: 20_000, logLevel: 'debug' });
    await waitingForPod(files, adding);
    await runOk('ip', ['-n', ns, 'link', 'set', pod.peer, 'up']);
    const add = await adding;
    // Whatever ADD did, the capture goes on until DAD is over: an early NA then shows before the probes.
    const tentative = async () =>
      (await runOk('ip', ['-n', ns, '-6', 'addr', 'show', 'dev', pod.ifname])).stdout.includes('tentative');
    await waitFor(async () => !(await tentative()), { what: 'DAD to end' });
    const frames = await capture.stop();

    expect(add.code, add.stdout).toBe(0);
    const dad = frames.flatMap((f, i) =>
      f.icmpv6?.type === 135 && f.ipv6?.src === '::' && f.icmpv6.target === ip6 ? [i] : [],
    );
    const nas = frames.flatMap((f, i) =>
      f.eth.src === pod.mac && f.icmpv6?.type === 136 && f.icmpv6.target === ip6 ? [i] : [],
    );
    expect(dad, 'DAD probes').toHaveLength(3);
    expect(nas, 'NAs').toHaveLength(1);
    expect(nas[0], 'the NA follows the last DAD probe').toBeGreaterThan(dad[2]!);
    await expectLogSays({ files }, 'debug', WAITING_FOR_POD, `${ip6} is tentative`);
    expect(await announcerLeftovers(files)).toEqual([]);
  });
});
