// ADD's plan (planFor): what the pod interfaces announce and which gateways the check asks. ADD itself, under its
// lock, is test/unit/announce/add.test.ts: the command's own part needs a real netns (test/integration).
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/cni/config';
import { resolveOptions } from '../../../src/cni/options';
import { parsePrevResult } from '../../../src/cni/result';
import { planFor } from '../../../src/commands/add';
import type { CallerView } from '../../../src/sys/caller-view';

const NETNS = '/var/run/netns/pod';
const { options } = resolveOptions(parseConfig({ cniVersion: '1.1.0', name: 'podnet', type: 'announcer' }), {
  raw: {},
});
/** Every sandbox below is CNI_NETNS as written: nothing is looked up. */
const VIEW: CallerView = {
  caller: { mnt: { dev: 1, ino: 1 }, net: { dev: 1, ino: 2 } },
  path: (p) => {
    throw new Error(`unexpected look-up of ${p}`);
  },
};

describe('planFor', () => {
  it("plans prevResult's routes: the pod interface's routed gateways", () => {
    const prev = parsePrevResult({
      interfaces: [{ name: 'cni-t0' }, { name: 'eth0', sandbox: NETNS }],
      ips: [
        { address: '10.88.0.5/24', gateway: '10.88.0.1', interface: 1 },
        { address: 'fd00:88::5/64', gateway: 'fd00:88::1', interface: 1 },
      ],
      routes: [{ dst: '0.0.0.0/0', gw: '10.88.0.1' }, { dst: '::/0' }],
    });
    const plan = planFor(options, prev, { netns: NETNS, ifname: 'eth0' }, { dev: 1, ino: 3 }, VIEW);
    const got = plan.interfaces.map((i) => [i.name, i.gateways]);
    expect(got).toEqual([['eth0', { ipv4: ['10.88.0.1'], ipv6: ['fd00:88::1'] }]]);
  });
});
