import { describeValue } from './errors';

/** CNI_ARGS as the announcer reads it: the keys it knows, plus every pair as given. */
export interface CniArgs {
  /** ANNOUNCE=true|false: turn announcing on or off for this attachment. */
  announce?: boolean;
  /**
   * MAC=: the MAC the runtime asked for (podman's `--mac-address`); empty counts as absent. Not validated: the
   * announcer never sets it.
   */
  mac?: string;
  /** Every K=V pair, known or not (the last one wins for a repeated key). */
  raw: Record<string, string>;
}

/**
 * The pod CNI_ARGS names (K8S_POD_NAMESPACE, K8S_POD_NAME, as kubelet's runtimes send them); undefined when neither is
 * there.
 */
export function podOf(raw: Readonly<Record<string, string>>): { namespace?: string; name?: string } | undefined {
  const { K8S_POD_NAMESPACE: namespace, K8S_POD_NAME: name } = raw;
  if (namespace === undefined && name === undefined) return undefined;
  return { ...(namespace !== undefined ? { namespace } : {}), ...(name !== undefined ? { name } : {}) };
}

/** The outcome of parsing CNI_ARGS: the args, or the problem text naming what is wrong. */
export type CniArgsParse = { ok: true; args: CniArgs } | { ok: false; problem: string };

/**
 * Parses CNI_ARGS (`K=V;K=V`). Unknown keys are kept in `raw` and otherwise ignored, as with
 * IgnoreUnknown; empty segments (a trailing `;`) are skipped. A pair without `=` or with an empty
 * key, and an ANNOUNCE value other than `true` or `false`, are problems. MAC is read as given.
 */
export function parseCniArgs(text: string): CniArgsParse {
  const raw: Record<string, string> = {};
  for (const pair of text.split(';')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 0) return { ok: false, problem: `has a pair without "=" (got ${describeValue(pair)})` };
    if (eq === 0) return { ok: false, problem: `has a pair with an empty key (got ${describeValue(pair)})` };
    raw[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const args: CniArgs = { raw };
  const announce = raw.ANNOUNCE;
  if (announce !== undefined) {
    if (announce !== 'true' && announce !== 'false') {
      return { ok: false, problem: `ANNOUNCE must be "true" or "false" (got ${describeValue(announce)})` };
    }
    args.announce = announce === 'true';
  }
  if (raw.MAC) args.mac = raw.MAC;
  return { ok: true, args };
}
