// A test's own announcer `stateDir` and `logFile`, and reading what the
// announcer left in them.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { logRecords, type LogRecord } from '../../support/log-records';
import { stopDaemonsOf } from './daemon-stop';
import type { Scope } from './scope';
import { waitFor, type WaitOptions } from './wait';

export { logRecords, type LogRecord } from '../../support/log-records';

/**
 * Files the announcer keeps in stateDir: the node settings (written by the harness, as `announcer install` does), its
 * lock file, and its socket while one runs (every command leaves one running for idleExitMs; announcerLeftovers checks
 * that the socket goes with it). The frame budget has no file.
 */
export const DAEMON_STATE_FILES: readonly string[] = [
  'announcer.conf',
  'announcer-daemon.flock',
  'announcer-resident.flock',
  'announcer.sock',
];

/**
 * Names of the entries in stateDir (records and anything else) but DAEMON_STATE_FILES, sorted; none when it does not
 * exist. Any other error (EACCES, ENOTDIR…) rejects: it is never taken for an empty dir.
 */
export async function stateFiles(stateDir: string): Promise<string[]> {
  try {
    return (await readdir(stateDir)).filter((f) => !DAEMON_STATE_FILES.includes(f)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** The log file's text ('' before the first line). */
export async function readLog(logFile: string): Promise<string> {
  return readFile(logFile, 'utf8').catch(() => '');
}

/** A log record's level (lower case), as src/log-format.ts writes it upper case. */
export type LogLevelName = 'debug' | 'info' | 'warn' | 'error';

/** What a field of a record must be: the value itself, a RegExp its text matches, or a predicate. */
export type FieldWant = string | number | boolean | RegExp | ((value: unknown) => boolean);

/**
 * The records of the log file (test/support/log-records.ts: level, message, fields) that are `level msg` (a RegExp
 * matches the message alone) and hold each of `fields` (see FieldWant): a test asserts a record by its fields, never a
 * formatted line.
 */
export async function logged(
  logFile: string,
  level: LogLevelName,
  msg: string | RegExp,
  fields: Record<string, FieldWant> = {},
): Promise<LogRecord[]> {
  const same = (want: FieldWant, got: unknown): boolean =>
    typeof want === 'function'
      ? want(got)
      : want instanceof RegExp
        ? got !== undefined && want.test(String(got))
        : want === got;
  return logRecords(await readLog(logFile)).filter(
    (r) => r.level === level && same(msg, r.msg) && Object.entries(fields).every(([k, v]) => same(v, r.fields[k])),
  );
}

/** logRecords of `text`, each with its line's time (ms since the epoch). */
export function timedLogRecords(text: string): (LogRecord & { at: number })[] {
  return text
    .split('\n')
    .flatMap((line) => logRecords(line).map((r) => ({ ...r, at: Date.parse(line.slice(0, line.indexOf(' '))) })));
}

/** Waits until the log holds a `level msg` record with `fields` (as logged's); resolves with those records. */
export async function waitLogged(
  files: Pick<AnnouncerFiles, 'logFile'>,
  level: LogLevelName,
  msg: string | RegExp,
  fields: Record<string, FieldWant> = {},
  opts: WaitOptions = {},
): Promise<LogRecord[]> {
  const found = async () => {
    const records = await logged(files.logFile, level, msg, fields);
    return records.length > 0 && records;
  };
  return waitFor(found, { what: `${level} "${msg}" ${JSON.stringify(fields)} in the log`, ...opts });
}

/** A test's own announcer `stateDir` and `logFile`, in a temp dir of their own. */
export interface AnnouncerFiles {
  /** The temp dir holding both. */
  dir: string;
  stateDir: string;
  logFile: string;
  /** readLog(logFile). */
  log(): Promise<string>;
  /** stateFiles(stateDir). */
  stateFiles(): Promise<string[]>;
  /** logged(logFile, …): the records that are `level msg` with `fields`. */
  logged(level: LogLevelName, msg: string | RegExp, fields?: Record<string, FieldWant>): Promise<LogRecord[]>;
}

/**
 * Makes a temp dir `${dirPrefix}XXXXXX` holding the announcer's stateDir (not
 * created: the plugin creates it) and log file. Nothing removes it: the caller
 * owns it (or the dir it was made in).
 */
export async function makeAnnouncerFiles(dirPrefix: string): Promise<AnnouncerFiles> {
  const dir = await mkdtemp(dirPrefix);
  const stateDir = join(dir, 'state');
  const logFile = join(dir, 'announcer.log');
  return {
    dir,
    stateDir,
    logFile,
    log: () => readLog(logFile),
    stateFiles: () => stateFiles(stateDir),
    logged: (level, msg, fields) => logged(logFile, level, msg, fields),
  };
}

/**
 * At scope close, after every step registered later (the DELs of the test's
 * attachments), stops the background announcer of stateDir (stopDaemonsOf):
 * it runs for idleExitMs after any command, so it is part of the test's state,
 * not a stray. announcerAdd calls it too; a test that owns a stateDir
 * otherwise calls it once it knows the path. Registered once per scope and stateDir.
 */
export function stopDaemonAtClose(scope: Scope, stateDir: string): void {
  const dirs = stopping.get(scope) ?? new Set<string>();
  stopping.set(scope, dirs);
  if (dirs.has(stateDir)) return; // once, at the first registration's turn: after every DEL registered since
  dirs.add(stateDir);
  scope.defer(() => stopDaemonsOf(stateDir), `stop the announcer of ${stateDir}`);
}

/** The stateDirs each scope stops the announcer of at close. */
const stopping = new WeakMap<Scope, Set<string>>();

/** A fresh temp dir `<base>/<prefix>XXXXXX` (base: the system temp dir), removed with all it holds at scope close. */
export async function tempDir(scope: Scope, prefix: string, base = tmpdir()): Promise<string> {
  const dir = await mkdtemp(join(base, prefix));
  scope.defer(() => rm(dir, { recursive: true, force: true }), `temp dir ${dir}`);
  return dir;
}

/** makeAnnouncerFiles under the system temp dir; at scope close its announcer is stopped, then the dir removed. */
export async function announcerFiles(scope: Scope): Promise<AnnouncerFiles> {
  const files = await makeAnnouncerFiles(join(tmpdir(), 'announcer-e2e-'));
  scope.defer(() => rm(files.dir, { recursive: true, force: true }), `announcer dir ${files.dir}`);
  stopDaemonAtClose(scope, files.stateDir);
  return files;
}
