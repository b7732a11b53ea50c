// The background announcer serves many networks, each with its own logFile:
// every job logs to its network's file, and the announcer's own lines go to
// the node's log (the node settings' logFile and logLevel), never to a
// network's. With `--log-format` (the DaemonSet's
// announcer), every line at info and above also goes to stdout, structured,
// each pod's naming it (container, ifname, K8S_POD_NAMESPACE/K8S_POD_NAME, IPs)
// so that `kubectl logs … | grep <pod>` says what was sent for it.
import {
  commandLogger,
  createLogger,
  fileSink,
  silentLogger,
  teeLogger,
  type LogFormat,
  type Logger,
  type LogLevel,
  type LogSink,
} from '../log';
import type { BackgroundJob, PodRef } from '../announce/background-job';
import { podOf } from '../cni/env';
import type { CommandLog } from './host';

/** Where structured lines go (stdout), and in which format. */
export interface StdoutLog {
  format: Exclude<LogFormat, 'text'>;
  sink: LogSink;
  now?: () => Date;
}

/**
 * The announcer's own logger, the factory of per-job loggers that steers it, and the loggers of the commands it runs.
 */
export function daemonLoggers(
  fields: Record<string, unknown>,
  own: { logFile?: string | undefined; logLevel: LogLevel },
  stdout?: StdoutLog,
): {
  log: Logger;
  jobLog(job: BackgroundJob): Logger;
  commandLog: CommandLog;
} {
  const out = stdout ? createLogger(stdout.sink, 'info', fields, stdout.now, stdout.format) : undefined;
  const toStdout = (file: Logger, more: Record<string, unknown>): Logger =>
    out ? teeLogger(file, out.with(more)) : file;
  const log = own.logFile ? createLogger(fileSink(own.logFile), own.logLevel, fields) : silentLogger;
  return {
    log: toStdout(log, {}),
    jobLog(job) {
      const file = job.logFile ? createLogger(fileSink(job.logFile), job.logLevel, fields) : silentLogger;
      return toStdout(file.with({ containerId: job.containerId, ifname: job.ifname }), jobFields(job));
    },
    commandLog(config, ids) {
      const pod = ids.args ? podOf(ids.args.raw) : undefined;
      return toStdout(commandLogger(config, ids), {
        containerId: ids.containerId,
        ifname: ids.ifname,
        ...podFields(pod),
      });
    },
  };
}

/** What names a job's pod in a structured line. */
export function jobFields(job: BackgroundJob): Record<string, unknown> {
  const ips = job.interfaces.flatMap((i) => [...i.ipv4, ...i.ipv6]);
  return { network: job.network, containerId: job.containerId, ifname: job.ifname, ...podFields(job.pod), ips };
}

function podFields(pod: PodRef | undefined): Record<string, unknown> {
  return pod ? { K8S_POD_NAMESPACE: pod.namespace, K8S_POD_NAME: pod.name } : {};
}
