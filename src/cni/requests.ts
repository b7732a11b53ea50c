// The plugin's side of the CNI protocol: the requests dispatch() hands each command, validated,
// and the commands the plugin implements.
import type { Attachment, PluginConfig } from './config';
import type { AttachmentEnv, DelEnv, NetworkEnv } from './env';
import type { CniError } from './errors';
import type { AnnounceOptions, OptionNote } from './options';
import type { PrevResult } from './result';
import type { CniVersion } from './versions';

/** The process as the dispatcher sees it: env, stdin and stdout, injected so that tests can fake them. */
export interface CniIo {
  env: Readonly<Record<string, string | undefined>>;
  /**
   * Reads stdin to its end, but never more than maxBytes + 1 bytes: more than maxBytes means stdin is over the limit.
   */
  readStdin(maxBytes: number): Promise<Uint8Array>;
  writeStdout(text: string): void;
}

/** What every command but VERSION gets: the validated config, its version and the attachment's options. */
export interface NetworkRequest {
  config: PluginConfig;
  cniVersion: CniVersion;
  options: AnnounceOptions;
  /** How the options came about (pod overrides ignored, announcing turned off, the runtime's MAC): for ADD's log. */
  notes: readonly OptionNote[];
}

/** ADD: prevResult is required (a chained plugin). */
export interface AddRequest extends NetworkRequest {
  env: AttachmentEnv;
  prevResult: PrevResult;
}

/** CHECK: prevResult is required, as the spec says. */
export type CheckRequest = AddRequest;

/**
 * DEL: netns and prevResult may be absent; an invalid prevResult is dropped, with the reason in prevResultError, so
 * that DEL never fails on it.
 */
export interface DelRequest extends NetworkRequest {
  env: DelEnv;
  prevResult?: PrevResult;
  prevResultError?: CniError;
}

/** STATUS: no container variables. */
export interface StatusRequest extends NetworkRequest {
  env: NetworkEnv;
}

/** GC: the attachments still alive on this network (the union of both spec keys). */
export interface GcRequest extends NetworkRequest {
  env: NetworkEnv;
  validAttachments: Attachment[];
}

/** The plugin's commands. Throw a CniError to report a specific code; anything else becomes code 999. */
export interface CniPlugin {
  /** Returns the result to print (see formatResult). */
  add(req: AddRequest): Promise<Record<string, unknown>>;
  del(req: DelRequest): Promise<void>;
  check(req: CheckRequest): Promise<void>;
  status(req: StatusRequest): Promise<void>;
  gc(req: GcRequest): Promise<void>;
}
