import { accessSync, constants } from 'node:fs';
import { ensureDir } from '../sys/ensure-dir';
import type { StatusRequest } from '../cni/dispatch';
import { CniError, ErrorCode } from '../cni/errors';
import type { CommandDeps } from './deps';

/** STATUS: ready when a packet socket can be opened and stateDir is writable; code 50 otherwise. */
export async function status(deps: CommandDeps, req: StatusRequest): Promise<void> {
  const problems: string[] = [];
  try {
    const libc = deps.libc();
    libc.close(libc.openPacketSocket());
  } catch (err) {
    problems.push(`cannot open an AF_PACKET socket (${(err as Error).message}): CAP_NET_RAW is needed`);
  }
  try {
    ensureDir(req.config.stateDir, 0o700);
    accessSync(req.config.stateDir, constants.W_OK);
  } catch (err) {
    problems.push(`stateDir ${req.config.stateDir} is not writable (${(err as Error).message})`);
  }
  if (problems.length > 0) throw new CniError(ErrorCode.NotAvailable, `announcer not available: ${problems.join('; ')}`);
}
