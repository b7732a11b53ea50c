// Pure: `--name value` / `--name=value` / `--flag` arguments of the CLI verbs.

/** What a flag takes: a string, a whole number ≥ 0, or nothing. */
export type FlagKind = 'string' | 'int' | 'bool';

type Value<K extends FlagKind> = K extends 'int' ? number : K extends 'bool' ? boolean : string;
/** The parsed flags, each present only when given. */
export type Flags<S extends Record<string, FlagKind>> = { [N in keyof S]?: Value<S[N]> };

/** Parses `argv` against `spec`; a problem is one line naming the argument, with `usage`. */
export function parseFlags<S extends Record<string, FlagKind>>(
  argv: readonly string[],
  spec: S,
  usage: string,
): { ok: true; flags: Flags<S> } | { ok: false; problem: string } {
  const flags: Record<string, string | number | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') ? arg.slice(2, eq < 0 ? undefined : eq) : undefined;
    const kind = name !== undefined && Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (name === undefined || kind === undefined)
      return { ok: false, problem: `unknown argument ${JSON.stringify(arg)}; ${usage}` };
    if (name in flags) return { ok: false, problem: `--${name} given twice; ${usage}` };
    if (kind === 'bool') {
      if (eq >= 0) return { ok: false, problem: `--${name} takes no value; ${usage}` };
      flags[name] = true;
      continue;
    }
    const text = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
    if (text === undefined || text === '') return { ok: false, problem: `--${name} needs a value; ${usage}` };
    if (kind === 'int') {
      if (!/^\d{1,9}$/.test(text))
        return { ok: false, problem: `--${name} must be a whole number (got ${JSON.stringify(text)}); ${usage}` };
      flags[name] = Number(text);
    } else flags[name] = text;
  }
  return { ok: true, flags: flags as Flags<S> };
}
