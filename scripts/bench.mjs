// make bench: ADD's wall time next to `node -e 0`, interleaved in one run, as ratios.
// Runs on a throwaway bridge and netns (real bridge plugin 1.1.1), as root.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);
const announcer = resolve('bin/announcer');
const tag = randomBytes(2).toString('hex');
const bridge = `cnib${tag}`;
const keeper = `cnib-keep-${tag}`;
const pod = `cnib-pod-${tag}`;
const subnet = `10.${90 + (parseInt(tag, 16) % 60)}.0`;

const sh = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', ...opts });
const cni = (plugin, command, netns, containerId, config) =>
  spawnSync(plugin, [], {
    input: JSON.stringify(config),
    encoding: 'utf8',
    env: { ...process.env, CNI_COMMAND: command, CNI_CONTAINERID: containerId, CNI_NETNS: `/var/run/netns/${netns}`, CNI_IFNAME: 'eth0', CNI_PATH: '/usr/lib/cni' },
  });
const bridgeConf = (address) => ({
  cniVersion: '1.0.0', name: 'bench', type: 'bridge', bridge, isGateway: true,
  ipam: { type: 'static', addresses: [{ address, gateway: `${subnet}.1` }] },
});

function timeMs(fn) {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function cleanup() {
  for (const [id, ns, addr] of [['pod', pod, `${subnet}.5/24`], ['keep', keeper, `${subnet}.9/24`]]) {
    cni('/usr/lib/cni/bridge', 'DEL', ns, id, bridgeConf(addr));
    spawnSync('ip', ['netns', 'del', ns]);
  }
  spawnSync('ip', ['link', 'del', bridge]);
}

process.on('SIGINT', () => { cleanup(); process.exit(130); });
try {
  sh('ip', ['netns', 'add', keeper]);
  sh('ip', ['netns', 'add', pod]);
  cni('/usr/lib/cni/bridge', 'ADD', keeper, 'keep', bridgeConf(`${subnet}.9/24`));
  const added = cni('/usr/lib/cni/bridge', 'ADD', pod, 'pod', bridgeConf(`${subnet}.5/24`));
  if (added.status !== 0) throw new Error(`bridge ADD failed: ${added.stdout}${added.stderr}`);
  const prevResult = JSON.parse(added.stdout);
  const conf = (extra) => ({ cniVersion: '1.0.0', name: 'bench', type: 'announcer', ...extra, prevResult });
  const configs = { 'ADD (count 1)': conf({ count: 1 }), 'ADD (default: count 3, tail)': conf({}) };
  const samples = { 'node -e 0': [], ...Object.fromEntries(Object.keys(configs).map((k) => [k, []])) };

  for (let i = 0; i < ROUNDS + 2; i++) {
    const warm = i < 2;
    const base = timeMs(() => spawnSync(process.execPath, ['-e', '0']));
    if (!warm) samples['node -e 0'].push(base);
    for (const [name, config] of Object.entries(configs)) {
      let res;
      const t = timeMs(() => (res = cni(announcer, 'ADD', pod, 'pod', config)));
      if (res.status !== 0) throw new Error(`announcer ADD failed: ${res.stdout}${res.stderr}`);
      if (!warm) samples[name].push(t);
      cni(announcer, 'DEL', pod, 'pod', config); // stops the tail; not timed
    }
  }
  const baseline = median(samples['node -e 0']);
  console.log(`cni-announcer bench: ${ROUNDS} interleaved rounds, medians (wall time)`);
  for (const [name, xs] of Object.entries(samples)) {
    const m = median(xs);
    console.log(`  ${name.padEnd(30)} ${m.toFixed(1).padStart(7)} ms   ${(m / baseline).toFixed(2)}x node -e 0`);
  }
} finally {
  cleanup();
}
