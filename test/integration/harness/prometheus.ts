// The Prometheus text the announcer writes (metricsFile) and serves (/metrics), parsed strictly.

/** One sample of the Prometheus text format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const METRIC_NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"';
const SAMPLE_LINE = new RegExp(
  `^(${METRIC_NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*)?\\})? (-?(?:\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?|NaN|[+-]?Inf))$`,
);

/**
 * Parses the Prometheus text exposition format (0.0.4) strictly: every line
 * is `# HELP name text`, `# TYPE name type`, or a sample `name{labels} value`;
 * each sample's family has one HELP and one TYPE line before its samples; the
 * text ends with a newline. Throws naming the first line that is not so.
 */
export function parsePrometheusText(text: string): Sample[] {
  if (!text.endsWith('\n')) throw new Error('metrics text does not end with a newline');
  const help = new Set<string>();
  const type = new Map<string, string>();
  const samples: Sample[] = [];
  for (const [i, line] of text.slice(0, -1).split('\n').entries()) {
    const where = `line ${i + 1} ${JSON.stringify(line)}`;
    if (line === '') continue; // the format ignores empty lines (prom-client puts one between metrics)
    const meta = /^# (HELP|TYPE) (\S+) (.+)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta as unknown as [string, string, string, string];
      if (!new RegExp(`^${METRIC_NAME}$`).test(name)) throw new Error(`${where}: bad metric name`);
      if (kind === 'HELP') {
        if (help.has(name)) throw new Error(`${where}: second HELP`);
        help.add(name);
      } else {
        if (type.has(name) || !['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest))
          throw new Error(`${where}: bad TYPE`);
        type.set(name, rest);
      }
      continue;
    }
    const m = SAMPLE_LINE.exec(line);
    if (!m) throw new Error(`${where}: not a sample line`);
    const [, name, labelText, value] = m as unknown as [string, string, string | undefined, string];
    // A histogram's samples are its family's name with _bucket, _sum or _count.
    const family = [name, name.replace(/_(bucket|sum|count)$/, '')].find(
      (n) => type.has(n) && (n === name || type.get(n) === 'histogram'),
    );
    if (family === undefined || !help.has(family)) throw new Error(`${where}: sample before its HELP and TYPE`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (labelText ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    const number = Number(value);
    if (type.get(family) === 'counter' && !(Number.isInteger(number) && number >= 0))
      throw new Error(`${where}: a counter that is not a whole number ≥ 0`);
    samples.push({ name, labels, value: number });
  }
  if (samples.length === 0) throw new Error('no sample in the metrics text');
  return samples;
}

/** The samples of Prometheus text (parsePrometheusText) by `name{k="v",…}` as the text writes them. */
export function promSamples(text: string): Map<string, number> {
  const key = (x: Sample): string => {
    const labels = Object.entries(x.labels).map(([k, v]) => `${k}="${v}"`);
    return labels.length > 0 ? `${x.name}{${labels.join(',')}}` : x.name;
  };
  return new Map(parsePrometheusText(text).map((x) => [key(x), x.value]));
}
