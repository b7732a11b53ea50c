/** How many problems an error message names; the rest are only counted. */
export const MAX_LISTED_PROBLEMS = 5;

/** Joins problems with "; ", the first `max` and a count of the rest: `a; b; c; d; e; … and 35,995 more`. */
export function listProblems(problems: readonly string[], max = MAX_LISTED_PROBLEMS): string {
  const named = problems.slice(0, max).join('; ');
  const rest = problems.length - max;
  return rest > 0 ? `${named}; … and ${groupThousands(rest)} more` : named;
}

/** 35995 → "35,995". Intl is avoided: the plugin must not depend on the runtime's ICU data. */
export function groupThousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
