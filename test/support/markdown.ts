// Pure: what the docs tests read from Markdown: headings as GitHub anchors them,
// relative links outside code, and the rows of a table under a heading.

/** The text outside fenced code blocks and inline code spans (each line kept, so line numbers hold). */
export function proseOf(markdown: string): string {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line.replace(/`[^`]*`/g, '');
    })
    .join('\n');
}

/** GitHub's anchor for a heading's text: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of every heading outside code, numbered as GitHub numbers repeats (`x`, `x-1`, …). */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** A link of the prose: its target's path (empty for `#anchor` alone) and anchor, and its line. */
export interface Link {
  path: string;
  anchor: string | undefined;
  line: number;
}

/** The relative links of the prose (`[text](target)`); web and mail links are left out. */
export function relativeLinks(markdown: string): Link[] {
  const links: Link[] = [];
  proseOf(markdown)
    .split('\n')
    .forEach((text, i) => {
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const hash = target.indexOf('#');
        links.push({
          path: hash < 0 ? target : target.slice(0, hash),
          anchor: hash < 0 ? undefined : target.slice(hash + 1),
          line: i + 1,
        });
      }
    });
  return links;
}

/**
 * The cells of each body row of the first table after the heading `heading` (the exact heading line), before the next
 * heading.
 */
export function tableRows(markdown: string, heading: string): string[][] {
  const lines = markdown.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`no heading ${JSON.stringify(heading)}`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,6}\s/.test(line)) break;
    if (!line.startsWith('|')) {
      if (rows.length > 0) break;
      continue;
    }
    rows.push(splitRow(line));
  }
  // The header row and the |---| row.
  return rows.slice(2);
}

/** A table row's cells, trimmed; `\|` stays inside its cell. */
function splitRow(line: string): string[] {
  const cells = line.replace(/^\||\|$/g, '').split(/(?<!\\)\|/);
  return cells.map((c) => c.trim());
}
