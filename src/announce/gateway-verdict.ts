// Pure: what the gateway check found for one attachment, as status, the log,
// metrics and the record (the journal) hold it. A routed gateway is asked
// after round 1 and again after each later round until it answers; the
// verdict is final once every gateway answered, or the window after the last
// round closed without an answer.
import { describeNodeVerdict, type NodeVerdict } from './node-proof';

/** How the check of one attachment stands. */
export type GatewayResult = 'pending' | 'answered' | 'no-answer' | 'no-gateway' | 'off';

/** A routed gateway of one pod interface. */
export interface RoutedGateway {
  interface: string;
  gateway: string;
}

/** A gateway that answered: the MAC that answered, and the ms from round 1 to the answer. */
export interface GatewayReply extends RoutedGateway {
  mac: string;
  afterMs: number;
}

/**
 * What the node itself sees of one pod interface after round 1 (node-proof.ts): its bridge's FDB and neighbour
 * entries, or why it cannot see the segment.
 */
export type NodeProof = { interface: string } & ({ seen: NodeVerdict } | { unseen: string });

/** What the check found so far. */
export interface GatewayVerdict {
  result: GatewayResult;
  /** The gateways that answered, first answer each. */
  answered: GatewayReply[];
  /** The routed gateways that have not answered (yet). */
  unanswered: RoutedGateway[];
  /** How many times the gateways were asked (one window each). */
  asks: number;
  /** The node-local proof, once its window after round 1 closed. */
  node?: NodeProof[] | undefined;
}

/** The verdict before the first ask: every routed gateway unanswered, or `no-gateway` when there is none. */
export function firstVerdict(gateways: readonly RoutedGateway[]): GatewayVerdict {
  return { result: gateways.length > 0 ? 'pending' : 'no-gateway', answered: [], unanswered: [...gateways], asks: 0 };
}

/** The verdict of an attachment whose check is off. */
export const OFF_VERDICT: Readonly<GatewayVerdict> = { result: 'off', answered: [], unanswered: [], asks: 0 };

/**
 * `verdict` after one more window whose `replies` came in; `last`: no later ask follows, so what is still unanswered
 * is final.
 */
export function afterWindow(verdict: GatewayVerdict, replies: readonly GatewayReply[], last: boolean): GatewayVerdict {
  const answered = [...verdict.answered];
  const isAnswered = (g: RoutedGateway): boolean =>
    answered.some((a) => a.interface === g.interface && a.gateway === g.gateway);
  for (const r of replies) if (!isAnswered(r)) answered.push(r);
  const unanswered = verdict.unanswered.filter((g) => !isAnswered(g));
  const result = unanswered.length === 0 ? 'answered' : last ? 'no-answer' : 'pending';
  return { ...verdict, result, answered, unanswered, asks: verdict.asks + 1 };
}

/** What the node saw of one interface in one line, e.g. `eth0: fdb converged on veth1; neighbours: …`. */
export function describeNodeProof(proof: NodeProof): string {
  return `${proof.interface}: ${'seen' in proof ? describeNodeVerdict(proof.seen) : proof.unseen}`;
}

/** Whether the check is over (nothing more is sent for it). */
export function isFinal(verdict: GatewayVerdict): boolean {
  return verdict.result !== 'pending';
}

/** The verdict in one line, e.g. `answered: 10.88.0.1 by 0a:58:0a:58:00:01 after 3 ms (eth0)`. */
export function describeVerdict(verdict: GatewayVerdict): string {
  const replies = verdict.answered.map((a) => `${a.gateway} by ${a.mac} after ${a.afterMs} ms (${a.interface})`);
  const silent = verdict.unanswered.map((g) => `${g.gateway} (${g.interface})`);
  switch (verdict.result) {
    case 'answered':
      return `answered: ${replies.join(', ')}`;
    case 'no-answer': {
      const also = replies.length > 0 ? `; answered: ${replies.join(', ')}` : '';
      return `no answer from ${silent.join(', ')} after ${verdict.asks} asks${also}`;
    }
    case 'pending':
      return `waiting for ${silent.join(', ')}`;
    case 'no-gateway':
      return 'no routed gateway: nothing sent';
    case 'off':
      return 'off (gatewayCheck: off)';
  }
}
