// A tail is started early by ADD (see add.ts) and waits here for its job.
import { watch } from 'node:fs';
import { dirname } from 'node:path';
import { readRecord } from './state';
import type { TailJob } from './tail-job';
import type { Timers } from './timers';

/** Longest pause between two reads of the record, in case a change notification is missed. */
const RECHECK_MS = 250;

/**
 * Waits until ADD writes the tail's job into `file` (inotify on the state dir,
 * rechecked now and then), bounded by the record's jobDeadline. Undefined when
 * the record is gone (DEL came first), or ADD never wrote a job in time.
 */
export async function awaitJob(file: string, timers: Timers): Promise<TailJob | undefined> {
  let wake: (() => void) | undefined;
  // Watch before the first read, so that no write slips between the two.
  const watcher = watch(dirname(file), () => wake?.());
  try {
    for (;;) {
      const record = readRecord(file);
      if (!record) return undefined;
      if (record.job) return record.job;
      const left = (record.jobDeadline ?? 0) - timers.bootMs();
      if (left <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const handle = timers.setTimeout(resolve, Math.min(left, RECHECK_MS));
        wake = () => {
          timers.clearTimeout(handle);
          resolve();
        };
      });
      wake = undefined;
    }
  } finally {
    watcher.close();
  }
}

/**
 * Whether the attachment still wants this tail: its record is there, valid,
 * for the same attachment, and names no other tail (a repeated ADD records its
 * own tail; DEL and GC remove the record). Read before every round and between
 * sleeps, so that a tail whose record is gone stops within NETNS_CHECK_MS.
 */
export function tailStillWanted(file: string, job: TailJob, pid: number = process.pid): boolean {
  const record = readRecord(file);
  if (!record || record.containerId !== job.containerId || record.ifname !== job.ifname) return false;
  // Not recorded yet: ADD records a tail right after starting it.
  return record.tail === undefined || record.tail.pid === pid;
}
