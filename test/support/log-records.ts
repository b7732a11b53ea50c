// The plugin's own log lines (`time LEVEL msg k=v…`, src/log.ts's text form) read back as records, so that a
// test asserts the message, the level and the fields it is about, not a whole formatted line.

/** One log line as a record: its level (lower case), its message, and its fields (values as the line holds them). */
export interface LogRecord {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

/** A field's value: a quoted one decoded (JSON), a number as a number, `true`/`false` as booleans, else the text. */
function fieldValue(text: string): unknown {
  if (text.startsWith('"')) return JSON.parse(text);
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}

/** The records of the text form's lines in `text`; a line that is not one is left out. */
export function logRecords(text: string): LogRecord[] {
  return text.split('\n').flatMap((line) => {
    const head = /^\S+ (DEBUG|INFO|WARN|ERROR) (.*)$/.exec(line);
    if (!head) return [];
    // The message runs up to the first ` key=` (a key: letters, digits, `_`, `.`); each field's value is bare (no
    // space) or JSON-quoted.
    const rest = head[2]!;
    const at = rest.search(/ [A-Za-z_][A-Za-z0-9_.]*=/);
    const msg = at < 0 ? rest : rest.slice(0, at);
    const fields: Record<string, unknown> = {};
    const pairs = /([A-Za-z_][A-Za-z0-9_.]*)=("(?:[^"\\]|\\.)*"|\S*)/g;
    for (const m of (at < 0 ? '' : rest.slice(at)).matchAll(pairs)) fields[m[1]!] = fieldValue(m[2]!);
    return [{ level: head[1]!.toLowerCase(), msg, fields }];
  });
}

/** The records of `text` whose message is `msg`. */
export function recordsOf(text: string, msg: string): LogRecord[] {
  return logRecords(text).filter((r) => r.msg === msg);
}
