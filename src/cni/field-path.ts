/** One step of a path into a JSON document: an object key or an array index. */
export type PathSegment = string | number;

/** Formats a path as `a.b[0].c`, the way error messages name a field. */
export function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? seg : `.${seg}`;
  }
  return out;
}

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

/** The text for one bad field: `"path" is required` when absent, else `"path" <problem> (got <value>)`. */
export function fieldProblem(path: readonly PathSegment[], problem: string, value: unknown): string {
  const name = `"${formatPath(path)}"`;
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
