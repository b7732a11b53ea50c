// What ADD hands to the background announcer: everything it needs, as plain JSON.
import type { ArpOp } from '../wire/arp';
import type { FileId } from '../sys/file-id';
import type { LogLevel } from '../log';
import type { ProbeSettings } from './conflict-probe';
import type { RoutedGateway } from './gateway-verdict';

/** Which attachment a record or a job is about. */
export interface AttachmentIds {
  network: string;
  containerId: string;
  ifname: string;
  netns: string;
  /**
   * The netns file's identity at ADD: a different one at the path means the pod is gone, and MACs are restored only
   * into this one.
   */
  netnsId: FileId;
  /**
   * The namespaces of the process that sent the ADD (of its /proc/PID/ns/mnt and ns/net): `netns` and `logFile` resolve
   * in its mount namespace, the pod's host side is in its netns.
   */
  caller: { mnt: FileId; net: FileId };
}

/** The Kubernetes pod of an attachment, from CNI_ARGS (K8S_POD_NAMESPACE, K8S_POD_NAME), for log lines. */
export interface PodRef {
  namespace?: string | undefined;
  name?: string | undefined;
}

/** The background announcer's work order for one attachment, kept in its record. */
export interface BackgroundJob extends AttachmentIds {
  /** The pod, when CNI_ARGS named it: the announcer's lines name it. */
  pod?: PodRef | undefined;
  interfaces: { name: string; ipv4: string[]; ipv6: string[] }[];
  hostPeerNames: string[];
  arpOps: ArpOp[];
  /** Round offsets in ms from round 1. */
  schedule: number[];
  /** Boot ms (CLOCK_BOOTTIME) when round 1 went out; absent when the pod was not ready: wait, then send every round. */
  firstRoundAt?: number | undefined;
  /** Boot ms after which readiness is no longer awaited. */
  readyDeadline: number;
  logFile?: string | undefined;
  logLevel: LogLevel;
  /**
   * IPv4 conflict detection for a deferred round 1 (conflictCheck warn or fail; absent: off).
   * In the background `fail` acts as `warn`: ADD has returned.
   */
  conflictCheck?: ConflictCheckJob | undefined;
  /**
   * IPv4 addresses ADD's probe left out: an announcer that reads this job from the records (not told by ADD) counts
   * them.
   */
  conflicts?: number | undefined;
  /**
   * The gateway check (gatewayCheck report or require; absent: off): the asks after round 1 until every routed
   * gateway answered (a `require` ADD had them all), and the node-local proof. Once ADD has returned, require acts as
   * report.
   */
  gatewayCheck?: GatewayCheckJob | undefined;
}

/** How the announcer asks an attachment's routed gateways (gateway-ask.ts): one window of `windowMs` per ask. */
export interface GatewayCheckJob {
  windowMs: number;
  gateways: RoutedGateway[];
}

/** How a deferred round 1 probes for IPv4 conflicts (see conflict-probe.ts). */
export interface ConflictCheckJob extends ProbeSettings {
  action: 'warn' | 'fail';
}
