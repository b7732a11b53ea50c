// POSIX path joining, the little of node:path we use. Under Bun, node:path is
// a builtin written in JS, and loading it cost every plugin run milliseconds
// and MiBs.

/** `parts` joined with "/" and normalised ("." and empty segments dropped, ".." applied), as node:path's join. */
export function join(...parts: string[]): string {
  const joined = parts.filter((p) => p !== '').join('/');
  if (joined === '') return '.';
  const absolute = joined.startsWith('/');
  const out: string[] = [];
  for (const seg of joined.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..' && out.length > 0 && out[out.length - 1] !== '..') out.pop();
    else if (seg !== '..' || !absolute) out.push(seg);
  }
  const body = out.join('/');
  const trailing = joined.endsWith('/') && body !== '' ? '/' : '';
  return absolute ? `/${body}${trailing}` : (body || '.') + trailing;
}

/** The directory part of `path`, as node:path's dirname ("/a/b" → "/a", "a" → ".", "/" → "/", "/a//b" → "/a/"). */
export function dirname(path: string): string {
  if (path === '') return '.';
  const trimmed = path.replace(/\/+$/, '');
  if (trimmed === '') return '/';
  const slash = trimmed.lastIndexOf('/');
  if (slash < 0) return '.';
  return slash === 0 ? '/' : trimmed.slice(0, slash);
}

/** The last part of `path`, as node:path's basename ("/a/b/" → "b"). */
export function basename(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}
