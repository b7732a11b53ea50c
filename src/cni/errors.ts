// What a failure reports: the CNI error codes, CniError (the spec's error object) and the texts its
// messages are made of: a field's path, a value as received, a list of problems. It imports
// nothing, so that the shim takes the codes from here without loading more.

/** CNI error codes: spec codes below 100, the announcer's own codes from 100. */
export const ErrorCode = {
  /** The config's cniVersion is not supported, or the command needs a newer one. */
  IncompatibleVersion: 1,
  /** A config field is not supported. */
  UnsupportedField: 2,
  /** The container (or its network namespace) is unknown or gone. */
  UnknownContainer: 3,
  /** A CNI_* environment variable is missing or invalid. */
  InvalidEnvironment: 4,
  /** Reading stdin or another I/O step failed. */
  IoFailure: 5,
  /** stdin could not be decoded as JSON. */
  DecodeFailure: 6,
  /** The network config (including prevResult) is invalid. */
  InvalidConfig: 7,
  /** A transient condition: the runtime may retry later. */
  TryAgainLater: 11,
  /** STATUS: the plugin cannot serve ADD at all. */
  NotAvailable: 50,
  /** STATUS: the plugin can serve ADD only in a limited way. */
  NotAvailableLimited: 51,
  /** A syscall or netlink request failed. */
  SystemCall: 100,
  /** A pod interface named by prevResult or CNI_IFNAME does not exist. */
  InterfaceNotFound: 101,
  /** An address listed in prevResult is not on the pod interface. */
  AddressMissing: 102,
  /** The pod interface's MAC is not the IP-derived one (CHECK). */
  MacMismatch: 103,
  /** Sending an announcement frame failed. */
  SendFailed: 104,
  /** Reading or writing the state directory failed. */
  StateFailure: 105,
  /** An IPv4 address of the pod is already used by another host (conflictCheck: fail): nothing was announced. */
  AddressConflict: 106,
  /** A routed gateway did not answer the gateway check (gatewayCheck: require): nothing was left behind. */
  GatewayUnanswered: 107,
  /** An unexpected error: a bug in the plugin. */
  Internal: 999,
} as const;

/** One of the numeric codes in ErrorCode. */
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The longest `msg` (and `details`) an error object carries: longer texts are cut, saying how much was left out. */
export const MAX_MESSAGE_CHARS = 4096;

/**
 * A failure the dispatcher prints unchanged as a CNI error object with its code (anything else thrown becomes
 * ErrorCode.Internal).
 */
export class CniError extends Error {
  override name = 'CniError';
  readonly code: number;
  readonly details?: string;

  constructor(code: number, msg: string, opts?: { details?: string; cause?: unknown }) {
    super(msg, opts?.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    if (opts?.details !== undefined) this.details = opts.details;
  }

  /**
   * The error object a plugin prints on stdout, as the CNI spec defines it, in the given CNI version; `msg` and
   * `details` cut at MAX_MESSAGE_CHARS.
   */
  toSpec(cniVersion: string): { cniVersion: string; code: number; msg: string; details?: string } {
    const details = this.details === undefined ? {} : { details: cut(this.details) };
    return { cniVersion, code: this.code, msg: cut(this.message), ...details };
  }
}

/** Whether e is a CniError, also one created by another copy of this module. */
export function isCniError(e: unknown): e is CniError {
  if (e instanceof CniError) return true;
  return (
    e instanceof Error &&
    e.name === 'CniError' &&
    typeof (e as Partial<CniError>).code === 'number' &&
    typeof (e as Partial<CniError>).toSpec === 'function'
  );
}

/** The code-7 error naming the config's problems: `invalid config: a; b; …`. */
export function invalidConfig(problems: readonly string[]): CniError {
  return new CniError(ErrorCode.InvalidConfig, `invalid config: ${listProblems(problems)}`);
}

/** One step of a path into a JSON document: an object key or an array index. */
export type PathSegment = string | number;

/** Shows a received value in a message: JSON, cut short when long. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * The text for one bad field, its path written `a.b[0].c`: `"path" is required` when absent, else
 * `"path" <problem> (got <value>)`.
 */
export function fieldProblem(path: readonly PathSegment[], problem: string, value: unknown): string {
  const at = (out: string, seg: PathSegment) =>
    typeof seg === 'number' ? `${out}[${seg}]` : out === '' ? seg : `${out}.${seg}`;
  const name = `"${path.reduce<string>(at, '')}"`;
  if (value === undefined) return `${name} is required`;
  return `${name} ${problem} (got ${describeValue(value)})`;
}

/** The value at path inside doc, or undefined when any step is missing. */
export function valueAt(doc: unknown, path: readonly PathSegment[]): unknown {
  let cur = doc;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PathSegment, unknown>)[seg];
  }
  return cur;
}

/** How many problems an error message names; the rest are only counted. */
export const MAX_LISTED_PROBLEMS = 5;

/** Joins problems with "; ", the first MAX_LISTED_PROBLEMS and a count of the rest: `a; b; c; d; e; … and 9 more`. */
export function listProblems(problems: readonly string[]): string {
  const named = problems.slice(0, MAX_LISTED_PROBLEMS).join('; ');
  const rest = problems.length - MAX_LISTED_PROBLEMS;
  return rest > 0 ? `${named}; … and ${groupThousands(rest)} more` : named;
}

/** 35995 → "35,995". Intl is avoided: the plugin must not depend on the runtime's ICU data. */
export function groupThousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function cut(text: string): string {
  if (text.length <= MAX_MESSAGE_CHARS) return text;
  const note = ` … (${text.length - MAX_MESSAGE_CHARS} more characters)`;
  return text.slice(0, MAX_MESSAGE_CHARS - note.length) + note;
}
