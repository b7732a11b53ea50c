// What the announcer wrote to each record file. It alone writes records, into a stateDir only root can
// change, so a record read back with the very bytes it wrote needs no second schema check, a cost each
// DEL and GC would pay (docs/performance.md). Any other bytes (a record from before the announcer's
// start, or one another hand changed) are checked in full.
// Kept in the announcer's memory, by path, while the record lives; bounded, so that records removed by
// another hand cannot make it grow without end.

/** How many records the memory holds at most: past it, the one written longest ago is forgotten (read: checked). */
export const REMEMBERED_RECORDS = 4096;

/** The text last written to each record file. */
export class RecordMemory {
  private readonly texts = new Map<string, string>();

  constructor(private readonly limit = REMEMBERED_RECORDS) {}

  /** `text` was just written to `file` (whole, renamed into place). */
  wrote(file: string, text: string): void {
    this.texts.delete(file);
    this.texts.set(file, text);
    if (this.texts.size > this.limit) this.texts.delete(this.texts.keys().next().value!);
  }

  /** `file` was removed, or holds something else now. */
  forget(file: string): void {
    this.texts.delete(file);
  }

  /** Whether `text`, just read from `file`, is what was last written there. */
  wroteThis(file: string, text: string): boolean {
    return this.texts.get(file) === text;
  }
}
