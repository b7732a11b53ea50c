// The rtnetlink layer against the real kernel, cross-checked with iproute2:
// links, addresses, DAD flags, bridge port state, a MAC change, and change
// notifications. Everything happens inside a netns the test creates.
import { describe, expect, it } from 'vitest';
import { loadLibc } from '../../src/sys/libc';
import { openPodRtnl, openPodSockets } from '../../src/sys/netns';
import { awaitChange } from '../../src/sys/rtnl';
import { PortState } from '../../src/wire/rtnetlink';
import { createNetns, runOk, scopePerTest, skipIntegration } from './harness';

const libc = loadLibc();

describe.skipIf(skipIntegration())('rtnetlink on koffi sockets', () => {
  const scope = scopePerTest();

  async function ipJson(netns: string, args: string[]): Promise<any[]> {
    return JSON.parse((await runOk('ip', ['-n', netns, '-j', ...args])).stdout);
  }

  it('reads links as `ip link` shows them, including the veth peer and its netns id', async () => {
    const ns = await createNetns(scope(), 'rtl');
    await runOk('ip', ['-n', ns.name, 'link', 'add', 'a0', 'type', 'veth', 'peer', 'name', 'b0']);
    await runOk('ip', ['-n', ns.name, 'link', 'set', 'a0', 'address', '02:00:00:00:00:a0', 'up']);
    const rtnl = openPodRtnl(libc, ns.path);
    try {
      const [shown] = await ipJson(ns.name, ['link', 'show', 'a0']);
      const link = rtnl.linkByName('a0')!;
      expect(link).toMatchObject({
        index: shown.ifindex,
        name: 'a0',
        kind: 'veth',
        up: true,
        running: false,
        noarp: false,
      });
      expect(link.mac?.toString('hex')).toBe('0200000000a0');
      const peer = rtnl.linkByName('b0')!;
      expect(link.linkIndex).toBe(peer.index);
      expect(link.linkNetnsid).toBeUndefined(); // both ends in one netns
      expect(rtnl.linkByIndex(link.index)?.name).toBe('a0');
      expect(rtnl.linkByName('nope0')).toBeUndefined();
      expect(rtnl.linkByIndex(99999)).toBeUndefined();
    } finally {
      rtnl.close();
    }
  });

  it('reads addresses with their DAD state, and sets a MAC', async () => {
    const ns = await createNetns(scope(), 'rtl');
    await runOk('ip', ['-n', ns.name, 'link', 'add', 'a0', 'type', 'veth', 'peer', 'name', 'b0']);
    await runOk('ip', ['-n', ns.name, 'addr', 'add', '10.88.7.5/24', 'dev', 'a0']);
    await runOk('ip', ['-n', ns.name, 'addr', 'add', 'fd00:88:7::5/64', 'dev', 'a0']);
    await runOk('ip', ['-n', ns.name, 'link', 'set', 'b0', 'up']);
    await runOk('ip', ['-n', ns.name, 'link', 'set', 'a0', 'up']); // DAD starts: the v6 address is tentative
    const rtnl = openPodRtnl(libc, ns.path);
    try {
      const index = rtnl.linkByName('a0')!.index;
      const found = rtnl.addresses(index).map((a) => [a.family, a.bytes.toString('hex'), a.prefixLength]);
      expect(found).toEqual(
        expect.arrayContaining([
          [4, '0a580705', 24],
          [6, 'fd000088000700000000000000000005', 64],
        ]),
      );
      const v6 = rtnl.addresses(index).find((a) => a.family === 6 && a.bytes[0] === 0xfd)!;
      const [shown] = await ipJson(ns.name, ['addr', 'show', 'a0']);
      const ipSays = shown.addr_info.find((a: any) => a.local === 'fd00:88:7::5');
      expect(v6.tentative).toBe(ipSays.tentative === true);
      rtnl.setMac(index, Buffer.from('0a580a580705', 'hex'));
      const [after] = await ipJson(ns.name, ['link', 'show', 'a0']);
      expect(after.address).toBe('0a:58:0a:58:07:05');
    } finally {
      rtnl.close();
    }
  });

  it('reads a bridge port state and is woken by link notifications', async () => {
    const ns = await createNetns(scope(), 'rtl');
    await runOk('ip', ['-n', ns.name, 'link', 'add', 'br0', 'type', 'bridge']);
    await runOk('ip', ['-n', ns.name, 'link', 'add', 'a0', 'type', 'veth', 'peer', 'name', 'b0']);
    await runOk('ip', ['-n', ns.name, 'link', 'set', 'a0', 'master', 'br0']);
    await runOk('ip', ['-n', ns.name, 'link', 'set', 'br0', 'up']);
    const pod = openPodSockets(libc, ns.path);
    try {
      const port = pod.rtnl.linkByName('a0')!.index;
      expect(pod.rtnl.bridgePortState(port)).toBe(PortState.Disabled);
      expect(pod.rtnl.bridgePortState(pod.rtnl.linkByName('b0')!.index)).toBeUndefined(); // no bridge port
      awaitChange(libc, [pod.events], 0); // forget what creating the links queued
      expect(awaitChange(libc, [pod.events], 0)).toBe(false);
      await runOk('ip', ['-n', ns.name, 'link', 'set', 'b0', 'up']);
      await runOk('ip', ['-n', ns.name, 'link', 'set', 'a0', 'up']);
      expect(awaitChange(libc, [pod.events], 5000)).toBe(true);
      const state = pod.rtnl.bridgePortState(port);
      const [shown] = await ipJson(ns.name, ['-d', 'link', 'show', 'a0']);
      expect(shown.linkinfo.info_slave_data.state).toBe(
        ['disabled', 'listening', 'learning', 'forwarding', 'blocking'][state!],
      );
    } finally {
      pod.close();
    }
  });
});
