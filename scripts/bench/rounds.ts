// Interleaved rounds: every round runs every row once, starting one row later
// than the round before, so that each row takes every position in turn and a
// slow spell of the machine is shared by all rows; warm-up rounds are thrown away.

/** One step of a round: takes one sample of one or more table rows. */
export interface Row {
  /** Takes one sample (ms) of each table row it feeds, by row name; untimed set-up and tear-down happen inside. */
  sample(): Record<string, number>;
}

/** How many rounds to run, and what to do between samples. */
export interface RoundsPlan {
  rounds: number;
  warmup: number;
  /** Runs after every sample (the bench yields to the event loop here, so Ctrl-C is seen). */
  between?: () => Promise<void>;
  /** Called after each round with its number (1-based, warm-up included) and the total. */
  progress?: (done: number, total: number) => void;
}

/** The order of the rows in round `round` (0-based): rows rotated left by `round`. */
export function rotation<T>(rows: readonly T[], round: number): T[] {
  if (rows.length === 0) return [];
  const k = round % rows.length;
  return [...rows.slice(k), ...rows.slice(0, k)];
}

/** Runs the rounds and returns the samples of each table row (warm-up rounds left out), by row name. */
export async function runRounds(rows: readonly Row[], plan: RoundsPlan): Promise<Map<string, number[]>> {
  const samples = new Map<string, number[]>();
  const total = plan.warmup + plan.rounds;
  for (let round = 0; round < total; round++) {
    for (const row of rotation(rows, round)) {
      const taken = row.sample();
      if (round >= plan.warmup) {
        for (const [name, ms] of Object.entries(taken)) {
          const xs = samples.get(name) ?? [];
          xs.push(ms);
          samples.set(name, xs);
        }
      }
      await plan.between?.();
    }
    plan.progress?.(round + 1, total);
  }
  return samples;
}
