// Kernel settings, per netns: /proc/sys/net is resolved in the reader's netns,
// so settings inside a namespace go through `sysctl` run there.
import { runOk } from './exec';

/** Sets a sysctl (dotted key, e.g. net.ipv6.conf.eth0.disable_ipv6) in the host or inside netns. */
export async function setSysctl(key: string, value: string | number, netns?: string): Promise<void> {
  await runOk('sysctl', ['-q', '-w', `${key}=${value}`], netns === undefined ? {} : { netns });
}
