import { accessSync, constants } from 'node:fs';
import type { CommandContext } from '../announce/context';
import type { StatusRequest } from '../cni/dispatch';
import { CniError, ErrorCode } from '../cni/errors';
import { ensurePrivateDir, stateDirProblem } from '../sys/private-dir';

/**
 * STATUS: ready when a packet socket opens and stateDir (created 0700 if missing) is private and writable; code 50
 * naming what to fix otherwise.
 */
export async function status(ctx: CommandContext, req: StatusRequest): Promise<void> {
  const problems: string[] = [];
  try {
    // Its last close waits for an RCU grace period: the announcer closes it on another thread.
    ctx.closeInBackground(ctx.libc.openPacketSocket());
  } catch (err) {
    problems.push(`cannot open an AF_PACKET socket (${(err as Error).message}): CAP_NET_RAW is needed`);
  }
  const { stateDir } = req.config;
  try {
    ensurePrivateDir(stateDir);
    accessSync(stateDir, constants.W_OK);
  } catch (err) {
    problems.push(stateDirProblem(stateDir, err));
  }
  if (problems.length > 0)
    throw new CniError(ErrorCode.NotAvailable, `announcer not available: ${problems.join('; ')}`);
}
