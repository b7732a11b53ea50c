// The background announcer serves many networks, each with its own logFile:
// every job logs to its network's file, and the announcer's own lines go to
// the file of the job it heard of last.
import { createLogger, fileSink, silentLogger, type Logger } from '../log';
import type { BackgroundJob } from '../announce/background-job';

/** The announcer's own logger, and the factory of per-job loggers that steers it. */
export function daemonLoggers(fields: Record<string, unknown>): { log: Logger; jobLog(job: BackgroundJob): Logger } {
  let latest: Logger = silentLogger;
  const log: Logger = {
    error: (m, f) => latest.error(m, f),
    warn: (m, f) => latest.warn(m, f),
    info: (m, f) => latest.info(m, f),
    debug: (m, f) => latest.debug(m, f),
    with: (more) => latest.with(more),
  };
  return {
    log,
    jobLog(job) {
      const file = job.logFile ? createLogger(fileSink(job.logFile), job.logLevel, fields) : silentLogger;
      latest = file;
      return file.with({ containerId: job.containerId, ifname: job.ifname });
    },
  };
}
