import { parseConfig, type Attachment, type PluginConfig } from './config';
import { parseEnv, type AttachmentEnv, type CniCommand, type CniEnv, type DelEnv } from './env';
import { CniError, ErrorCode, isCniError } from './errors';
import { describeValue } from './field-path';
import { resolveOptions, type AnnounceOptions } from './options';
import { parsePrevResult, type PrevResult } from './result';
import { compareVersions, isSupportedVersion, LATEST_VERSION, SUPPORTED_VERSIONS, type CniVersion } from './versions';

/** The process as the dispatcher sees it: env, stdin and stdout, injected so that tests can fake them. */
export interface CniIo {
  env: Readonly<Record<string, string | undefined>>;
  readStdin(): Promise<string>;
  writeStdout(text: string): void;
}

/** What every command but VERSION gets: the validated config, its version and the attachment's options. */
export interface NetworkRequest {
  config: PluginConfig;
  cniVersion: CniVersion;
  options: AnnounceOptions;
}

/** ADD: prevResult is required (a chained plugin). */
export interface AddRequest extends NetworkRequest {
  env: AttachmentEnv;
  prevResult: PrevResult;
}

/** CHECK: prevResult is required, as the spec says. */
export interface CheckRequest extends NetworkRequest {
  env: AttachmentEnv;
  prevResult: PrevResult;
}

/** DEL: netns and prevResult may be absent; an invalid prevResult is dropped, with the reason in prevResultError, so that DEL never fails on it. */
export interface DelRequest extends NetworkRequest {
  env: DelEnv;
  prevResult?: PrevResult;
  prevResultError?: CniError;
}

/** STATUS: no container variables. */
export interface StatusRequest extends NetworkRequest {
  env: CniEnv;
}

/** GC: the attachments still alive on this network (the union of both spec keys). */
export interface GcRequest extends NetworkRequest {
  env: CniEnv;
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
 * Runs one CNI command: validates env, stdin and config in spec order, calls the plugin, and
 * writes exactly one JSON document (the result, the VERSION reply or an error object) or nothing.
 * Returns the exit code: 0, or 1 after printing an error object.
 */
export async function dispatch(io: CniIo, plugin: CniPlugin): Promise<number> {
  const reply = await run(io, plugin);
  if (reply.doc !== undefined) io.writeStdout(`${JSON.stringify(reply.doc)}\n`);
  return reply.exitCode;
}

interface Reply {
  exitCode: 0 | 1;
  doc?: unknown;
}

async function run(io: CniIo, plugin: CniPlugin): Promise<Reply> {
  let replyVersion: CniVersion = LATEST_VERSION;
  try {
    const env = parseEnv(io.env);
    if (env.command === 'VERSION') return { exitCode: 0, doc: versionReply(await io.readStdin().catch(() => '')) };
    const raw = decodeConfig(await readConfig(io));
    const cniVersion = configVersion(raw);
    replyVersion = cniVersion;
    const config = env.command === 'DEL' ? parseDelConfig(raw) : parseConfig(raw);
    const minVersion = MIN_VERSION[env.command];
    if (minVersion !== undefined && compareVersions(cniVersion, minVersion) < 0) {
      throw new CniError(
        ErrorCode.IncompatibleVersion,
        `${env.command} needs cniVersion ${minVersion} or later (the config has ${cniVersion})`,
      );
    }
    const base: NetworkRequest = { config, cniVersion, options: resolveOptions(config, env.args) };
    const doc = await runCommand(env, base, plugin);
    return doc === undefined ? { exitCode: 0 } : { exitCode: 0, doc };
  } catch (e) {
    return { exitCode: 1, doc: asCniError(e).toSpec(replyVersion) };
  }
}

async function runCommand(env: CniEnv, base: NetworkRequest, plugin: CniPlugin): Promise<unknown> {
  const { config } = base;
  switch (env.command) {
    case 'ADD': {
      if (config.prevResult === undefined) {
        throw configError(
          '"prevResult" is required: announcer is a chained plugin and must follow a main plugin such as bridge or macvlan',
        );
      }
      const req: AddRequest = { ...base, env: attachmentEnv(env), prevResult: parsePrevResult(config.prevResult) };
      const result = await plugin.add(req);
      if (result === null || typeof result !== 'object') throw new Error('ADD produced no result object');
      return result;
    }
    case 'CHECK': {
      if (config.prevResult === undefined) throw configError('"prevResult" is required for CHECK');
      await plugin.check({ ...base, env: attachmentEnv(env), prevResult: parsePrevResult(config.prevResult) });
      return undefined;
    }
    case 'DEL': {
      const req: DelRequest = { ...base, env: delEnv(env) };
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
      if (config.validAttachments === undefined) {
        throw configError('"cni.dev/valid-attachments" is required for GC');
      }
      await plugin.gc({ ...base, env, validAttachments: config.validAttachments });
      return undefined;
    }
    case 'VERSION':
      throw new Error('VERSION reached runCommand');
  }
}

/**
 * DEL must not fail on an option that is wrong (say, after an upgrade made
 * validation stricter): libcni stops a chain's DEL at the first error, and the
 * main plugin's DEL would never run. So DEL falls back to the fields cleanup
 * needs; if even those are invalid, the original error stands.
 */
function parseDelConfig(raw: Record<string, unknown>): PluginConfig {
  try {
    return parseConfig(raw);
  } catch (e) {
    if (!isCniError(e) || e.code !== ErrorCode.InvalidConfig) throw e;
    const keep = ['cniVersion', 'name', 'type', 'stateDir', 'logFile', 'logLevel'];
    const minimal = Object.fromEntries(Object.entries(raw).filter(([k]) => keep.includes(k)));
    try {
      return parseConfig(minimal);
    } catch {
      throw e;
    }
  }
}

function versionReply(stdin: string): { cniVersion: CniVersion; supportedVersions: CniVersion[] } {
  let asked: unknown;
  try {
    asked = (JSON.parse(stdin) as { cniVersion?: unknown } | null)?.cniVersion;
  } catch {
    asked = undefined;
  }
  return {
    cniVersion: isSupportedVersion(asked) ? asked : LATEST_VERSION,
    supportedVersions: [...SUPPORTED_VERSIONS],
  };
}

async function readConfig(io: CniIo): Promise<string> {
  try {
    return await io.readStdin();
  } catch (e) {
    throw new CniError(ErrorCode.IoFailure, `cannot read the network config from stdin: ${messageOf(e)}`, { cause: e });
  }
}

function decodeConfig(text: string): Record<string, unknown> {
  if (text.trim() === '') throw new CniError(ErrorCode.DecodeFailure, 'stdin is empty: expected the network config as JSON');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new CniError(ErrorCode.DecodeFailure, `stdin is not JSON: ${messageOf(e)}`, { cause: e });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CniError(ErrorCode.DecodeFailure, `stdin is not a JSON object (got ${describeValue(value)})`);
  }
  return value as Record<string, unknown>;
}

function configVersion(raw: Record<string, unknown>): CniVersion {
  const v = raw.cniVersion;
  if (v === undefined) throw configError('"cniVersion" is required');
  if (!isSupportedVersion(v)) {
    throw new CniError(
      ErrorCode.IncompatibleVersion,
      `unsupported cniVersion ${describeValue(v)} (supported: ${SUPPORTED_VERSIONS.join(', ')})`,
    );
  }
  return v;
}

function attachmentEnv(env: CniEnv): AttachmentEnv {
  const { containerId, netns, ifname } = env;
  if (containerId === undefined || netns === undefined || ifname === undefined) {
    throw new Error(`parseEnv let ${env.command} through without its container variables`);
  }
  return { ...env, containerId, netns, ifname };
}

function delEnv(env: CniEnv): DelEnv {
  const { containerId, ifname } = env;
  if (containerId === undefined || ifname === undefined) {
    throw new Error('parseEnv let DEL through without its container variables');
  }
  return { ...env, containerId, ifname };
}

function configError(problem: string): CniError {
  return new CniError(ErrorCode.InvalidConfig, `invalid config: ${problem}`);
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
