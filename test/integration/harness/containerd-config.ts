// The files of a private containerd: where everything lives under its temp
// dir, and its config.toml.
import { join } from 'node:path';

const CRI = 'plugins."io.containerd.grpc.v1.cri"';

/** One CRI runtime handler (runc underneath) with a CNI conf dir of its own holding `conflist`. */
export interface HandlerNetwork {
  handler: string;
  conflist: { name: string; [k: string]: unknown };
}

/** Paths of a private containerd, all under `dir`. */
export interface ContainerdPaths {
  dir: string;
  socket: string;
  root: string;
  state: string;
  cniBinDir: string;
  confDir(handler: string): string;
}

/** The paths of a private containerd in `dir`. */
export function containerdPaths(dir: string): ContainerdPaths {
  return {
    dir,
    socket: join(dir, 'containerd.sock'),
    root: join(dir, 'root'),
    state: join(dir, 'state'),
    cniBinDir: join(dir, 'cni-bin'),
    confDir: (handler) => join(dir, `net.d-${handler}`),
  };
}

/**
 * containerd's config (version 2): private paths, the native snapshotter,
 * restrict_oom_score_adj (runc may not lower oom_score_adj here), netns mounts
 * under the state dir, no AppArmor, and one runc runtime per network, the
 * first the default.
 */
export function containerdConfig(p: ContainerdPaths, sandboxImage: string, handlers: readonly string[]): string {
  const q = JSON.stringify;
  const runtimes = handlers.flatMap((h) => [
    `[${CRI}.containerd.runtimes.${h}]`,
    'runtime_type = "io.containerd.runc.v2"',
    `cni_conf_dir = ${q(p.confDir(h))}`,
    'cni_max_conf_num = 1',
    `[${CRI}.containerd.runtimes.${h}.options]`,
    `Root = ${q(join(p.dir, 'runc'))}`,
  ]);
  return [
    'version = 2',
    `root = ${q(p.root)}`,
    `state = ${q(p.state)}`,
    'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", ' +
      '"io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]',
    '[grpc]',
    `address = ${q(p.socket)}`,
    '[ttrpc]',
    `address = ${q(`${p.socket}.ttrpc`)}`,
    '[plugins."io.containerd.internal.v1.opt"]',
    `path = ${q(join(p.dir, 'opt'))}`,
    `[${CRI}]`,
    `sandbox_image = ${q(sandboxImage)}`,
    'restrict_oom_score_adj = true',
    'netns_mounts_under_state_dir = true',
    'disable_apparmor = true',
    'stream_server_address = "127.0.0.1"',
    'stream_server_port = "0"',
    `[${CRI}.containerd]`,
    'snapshotter = "native"',
    `default_runtime_name = ${q(handlers[0])}`,
    ...runtimes,
    `[${CRI}.cni]`,
    `bin_dir = ${q(p.cniBinDir)}`,
    `conf_dir = ${q(p.confDir(handlers[0]!))}`,
    '',
  ].join('\n');
}
