import type { AnnounceOptions } from '../cni/options';
import type { PrevResult } from '../cni/result';
import { planAnnouncement, type AnnouncePlan } from '../plan';
import type { CallerView } from '../sys/caller-view';
import { fileIdAt, sameFile, type FileId } from '../sys/file-id';

/**
 * Plans an attachment; a prevResult `sandbox` spelled unlike CNI_NETNS (a symlink, /proc/PID/ns/net) still names the
 * pod when it is the same netns file (each path as the caller, `view`, sees it).
 */
export function planFor(
  options: AnnounceOptions,
  prevResult: PrevResult,
  env: { netns: string; ifname: string },
  netnsId: FileId,
  view: CallerView,
): AnnouncePlan {
  const interfaces = prevResult.interfaces.map((i) => {
    if (!i.sandbox || i.sandbox === env.netns) return i;
    return sameFile(fileIdAt(view.path(i.sandbox)), netnsId) ? { ...i, sandbox: env.netns } : i;
  });
  return planAnnouncement(options, { interfaces, ips: prevResult.ips, routes: prevResult.routes }, env);
}
