import { accessSync, constants } from 'node:fs';
import { stateDirProblem } from '../sys/private-dir';
import type { StatusRequest } from '../cni/dispatch';
import { CniError, ErrorCode } from '../cni/errors';
import { ensurePrivateDir } from '../sys/private-dir';
import type { CommandDeps } from './deps';

/**
 * STATUS: ready when a packet socket opens and stateDir (created 0700 if missing) is private and writable; code 50
 * naming what to fix otherwise.
 */
export async function status(deps: CommandDeps, req: StatusRequest): Promise<void> {
  const problems: string[] = [];
  try {
    // Its last close waits for an RCU grace period: the announcer closes it on another thread.
    deps.release([deps.libc().openPacketSocket()]);
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
