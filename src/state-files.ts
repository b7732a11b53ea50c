// Pure: the name of every file in stateDir, defined here and nowhere else. Loaded on the shim's
// fast path: no schema library, no FFI, no file system.
//
//   name                            kind                       written by                removed by
//   announcer.sock                  the announcer's socket     the announcer             the announcer
//   announcer-start.marker          a start in progress        the shim that starts one  the announcer, listening;
//                                                                                        the shim, failing
//   announcer-daemon.flock          the announcer's lifetime   the announcer             never (it is reused)
//   announcer-resident.flock        a resident's lifetime      a resident announcer      never (it is reused)
//   announcer-handover              bursts handed over         the announcer             the next announcer
//   announcer.conf                  node settings              announcer install         the operator
//   <containerId>@<ifname>.json,    an attachment's record     the announcer             DEL, GC
//     or sha256-<hex>.json
//   .<name>.<pid>.<hex>.tmp         a file being replaced      replaceFile               its writer; GC
//
// Records and temporary files are told apart by name alone (stateEntryKind); none of the announcer's own files ends
// in .json, or starts with '.'.

/** The announcer's unix socket (mode 0600). */
export const ANNOUNCER_SOCKET = 'announcer.sock';
/** Created O_EXCL by the shim that starts the announcer; the announcer removes it once it listens. */
export const START_MARKER = 'announcer-start.marker';
/** Held (flock) by the running background announcer for its whole life: at most one per stateDir. */
export const DAEMON_LOCK = 'announcer-daemon.flock';
/**
 * Held (flock) by a resident announcer (the DaemonSet's) for its whole life: while it is held, an announcer a shim
 * started leaves the calls to the resident one instead of racing it for DAEMON_LOCK.
 */
export const RESIDENT_LOCK = 'announcer-resident.flock';
/**
 * What an announcer that hands over (src/daemon/table.ts, writeHandover) leaves to the next one: how far each burst
 * got.
 */
export const HANDOVER_FILE = 'announcer-handover';
/** The node settings file (JSON, root's, 0600), written by `announcer install --state-dir`. */
export const NODE_SETTINGS_FILE = 'announcer.conf';
/** The suffix of an attachment's record. */
const RECORD_SUFFIX = '.json';
/** Longest `<containerId>@<ifname>` kept readable as a file name; longer ones are hashed. */
const MAX_READABLE_NAME = 128;
const READABLE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*@[^/\0]+$/;
/** A temporary file's name: `.<name>.<pid>.<hex>.tmp`, with the writer's pid in group 1. */
const TEMP_NAME = /^\..+\.(\d+)\.[0-9a-f]+\.tmp$/;

/**
 * The file stem of an attachment: `<containerId>@<ifname>` when that is short
 * and plain, else `sha256-<hex of sha256("<containerId>@<ifname>")>`, so that
 * any container ID the spec allows fits in a file name (NAME_MAX 255). The two
 * forms never collide: only the first holds '@'. The full ID stays inside the record.
 */
export function attachmentName(containerId: string, ifname: string): string {
  const name = `${containerId}@${ifname}`;
  if (Buffer.byteLength(name) <= MAX_READABLE_NAME && READABLE_NAME.test(name)) return name;
  // Loaded only for long IDs: node:crypto is a cost to start-up.
  const { createHash } = process.getBuiltinModule('node:crypto');
  return `sha256-${createHash('sha256').update(name).digest('hex')}`;
}

/** The record file name of an attachment: `<attachmentName>.json`. */
export function recordName(containerId: string, ifname: string): string {
  return `${attachmentName(containerId, ifname)}${RECORD_SUFFIX}`;
}

/** The attachment name a record file name stands for (`x.json` → `x`). */
export function attachmentOfRecord(record: string): string {
  return record.slice(0, -RECORD_SUFFIX.length);
}

/** The temporary name of `name` while `pid` replaces it: hidden, unique per `hex`, ending `.tmp`. */
export function tempName(name: string, pid: number, hex: string): string {
  return `.${name}.${pid}.${hex}.tmp`;
}

/** The pid of the process that wrote a temporary file, from its name; undefined for any other name. */
export function tempWriterPid(entry: string): number | undefined {
  const pid = TEMP_NAME.exec(entry)?.[1];
  return pid === undefined ? undefined : Number(pid);
}

/** What an entry of stateDir is, by its name. */
export type StateEntryKind = 'record' | 'temp' | 'other';

/** Classifies a stateDir entry name: `*.json` records, `.*.tmp` temporary files. */
export function stateEntryKind(name: string): StateEntryKind {
  if (name.startsWith('.')) return name.endsWith('.tmp') ? 'temp' : 'other';
  return name.endsWith(RECORD_SUFFIX) ? 'record' : 'other';
}
