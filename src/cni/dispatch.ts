// The CNI protocol as skel runs it: one dispatcher over injected I/O that checks env, stdin and
// config in the spec's order, hands each command its validated request, and prints one JSON
// document or nothing; and the commands a plugin implements.
import type { Attachment, parseConfig, PluginConfig } from './config';
import { decodeConfig, MAX_STDIN_BYTES, stdinTooLarge } from './decode';
import {
  parseEnv,
  type AttachmentEnv,
  type CniCommand,
  type CniEnv,
  type DelEnv,
  type NetworkEnv,
  type VersionEnv,
} from './env';
import { CniError, describeValue, ErrorCode, invalidConfig, isCniError } from './errors';
import type { AnnounceOptions, OptionNote } from './options';
import { parsePrevResult, type PrevResult } from './result';
import {
  compareVersions,
  isSupportedVersion,
  LATEST_VERSION,
  SUPPORTED_VERSIONS,
  versionReply,
  type CniVersion,
} from './versions';

/** The process as the dispatcher sees it: env, stdin and stdout, injected so that tests can fake them. */
export interface CniIo<Stdin extends Uint8Array | string = Uint8Array | string> {
  env: Readonly<Record<string, string | undefined>>;
  /**
   * Reads stdin to its end, but never more than maxBytes + 1 bytes: more than maxBytes means stdin is over the limit.
   * Text when the caller holds stdin as text already (the announcer, from the request line), so it is not encoded
   * again only to be decoded here.
   */
  readStdin(maxBytes: number): Promise<Stdin>;
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

/** Commands that need at least a given config version. */
const MIN_VERSION: Partial<Record<CniCommand, CniVersion>> = { CHECK: '0.4.0', STATUS: '1.1.0', GC: '1.1.0' };

/**
 * Runs one CNI command, checking env, stdin and config in spec order; writes one JSON document or nothing, returns the
 * exit code, never throws.
 */
export async function dispatch(io: CniIo, plugin: CniPlugin): Promise<number> {
  let reply: Reply;
  try {
    reply = await run(io, plugin);
  } catch (e) {
    reply = errorReply(e, LATEST_VERSION);
  }
  if (reply.doc === undefined) return reply.exitCode;
  let text: string;
  try {
    text = `${JSON.stringify(reply.doc)}\n`;
  } catch (e) {
    reply = errorReply(new Error(`cannot encode the reply as JSON: ${messageOf(e)}`), LATEST_VERSION);
    text = `${JSON.stringify(reply.doc)}\n`;
  }
  try {
    io.writeStdout(text);
  } catch {
    return 1; // stdout is gone: there is no one left to tell
  }
  return reply.exitCode;
}

/**
 * The line to print for a failure outside dispatch (an uncaught exception): a code-999 error object, no stack trace.
 */
export function crashReply(e: unknown): string {
  return `${JSON.stringify(errorReply(e, LATEST_VERSION).doc)}\n`;
}

type Reply = { exitCode: 0 | 1; doc?: unknown };

async function run(io: CniIo, plugin: CniPlugin): Promise<Reply> {
  let replyVersion: CniVersion = LATEST_VERSION;
  try {
    const env = parseEnv(io.env);
    if (env.command === 'VERSION')
      return { exitCode: 0, doc: versionReply(await io.readStdin(MAX_STDIN_BYTES).catch(() => undefined)) };
    const raw = decodeConfig(await readConfig(io));
    const cniVersion = configVersion(raw);
    replyVersion = cniVersion;
    // Loaded here, not at start-up: VERSION never needs the options' schemas.
    const [{ parseConfig }, { resolveOptions }] = await Promise.all([import('./config'), import('./options')]);
    const config = env.command === 'DEL' ? parseDelConfig(raw, parseConfig) : parseConfig(raw);
    const minVersion = MIN_VERSION[env.command];
    if (minVersion !== undefined && compareVersions(cniVersion, minVersion) < 0) {
      throw new CniError(
        ErrorCode.IncompatibleVersion,
        `${env.command} needs cniVersion ${minVersion} or later (the config has ${cniVersion})`,
      );
    }
    const { options, notes } = resolveOptions(config, env.args);
    const base: NetworkRequest = { config, cniVersion, options, notes };
    const doc = await runCommand(env, base, plugin);
    return doc === undefined ? { exitCode: 0 } : { exitCode: 0, doc };
  } catch (e) {
    return errorReply(e, replyVersion);
  }
}

function errorReply(e: unknown, cniVersion: CniVersion): Reply {
  let doc: unknown;
  try {
    doc = asCniError(e).toSpec(cniVersion);
  } catch {
    doc = { cniVersion, code: ErrorCode.Internal, msg: 'internal error: unprintable error' };
  }
  return { exitCode: 1, doc };
}

async function runCommand(env: Exclude<CniEnv, VersionEnv>, base: NetworkRequest, plugin: CniPlugin): Promise<unknown> {
  const { config } = base;
  switch (env.command) {
    case 'ADD': {
      if (config.prevResult === undefined) {
        throw invalidConfig([
          '"prevResult" is required: announcer is a chained plugin ' +
            'and must follow a main plugin such as bridge or macvlan',
        ]);
      }
      const result = await plugin.add({ ...base, env, prevResult: parsePrevResult(config.prevResult) });
      if (result === null || typeof result !== 'object') throw new Error('ADD produced no result object');
      return result;
    }
    case 'CHECK': {
      if (config.prevResult === undefined) throw invalidConfig(['"prevResult" is required for CHECK']);
      await plugin.check({ ...base, env, prevResult: parsePrevResult(config.prevResult) });
      return undefined;
    }
    case 'DEL': {
      const req: DelRequest = { ...base, env };
      if (config.prevResult !== undefined) {
        try {
          req.prevResult = parsePrevResult(config.prevResult);
        } catch (e) {
          if (!isCniError(e)) throw e;
          req.prevResultError = e;
        }
      }
      await plugin.del(req);
      return undefined;
    }
    case 'STATUS':
      await plugin.status({ ...base, env });
      return undefined;
    case 'GC': {
      if (config.validAttachments === undefined)
        throw invalidConfig(['"cni.dev/valid-attachments" is required for GC']);
      await plugin.gc({ ...base, env, validAttachments: config.validAttachments });
      return undefined;
    }
  }
}

/**
 * DEL must not fail on an option that is wrong (say, after an upgrade made
 * validation stricter): libcni stops a chain's DEL at the first error, and the
 * main plugin's DEL would never run. So DEL falls back to the fields cleanup
 * needs; if even those are invalid, the original error stands.
 */
function parseDelConfig(raw: Record<string, unknown>, parse: typeof parseConfig): PluginConfig {
  try {
    return parse(raw);
  } catch (e) {
    if (!isCniError(e) || e.code !== ErrorCode.InvalidConfig) throw e;
    const keep = ['cniVersion', 'name', 'type', 'stateDir', 'logFile', 'logLevel'];
    const minimal = Object.fromEntries(Object.entries(raw).filter(([k]) => keep.includes(k)));
    try {
      return parse(minimal);
    } catch {
      throw e;
    }
  }
}

async function readConfig(io: CniIo): Promise<Uint8Array | string> {
  let bytes: Uint8Array | string;
  try {
    bytes = await io.readStdin(MAX_STDIN_BYTES);
  } catch (e) {
    throw new CniError(ErrorCode.IoFailure, `cannot read the network config from stdin: ${messageOf(e)}`, { cause: e });
  }
  if (bytes.length > MAX_STDIN_BYTES) throw stdinTooLarge();
  return bytes;
}

function configVersion(raw: Record<string, unknown>): CniVersion {
  const v = raw.cniVersion;
  if (v === undefined) throw invalidConfig(['"cniVersion" is required']);
  if (!isSupportedVersion(v)) {
    throw new CniError(
      ErrorCode.IncompatibleVersion,
      `unsupported cniVersion ${describeValue(v)} (supported: ${SUPPORTED_VERSIONS.join(', ')})`,
    );
  }
  return v;
}

function asCniError(e: unknown): CniError {
  if (isCniError(e)) return e;
  return new CniError(ErrorCode.Internal, `internal error: ${messageOf(e)}`, { cause: e });
}

function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message === '' ? e.name : e.message;
  try {
    return String(e);
  } catch {
    return 'unprintable error';
  }
}
