// The table of work as hosted commands see it (table-host.ts): what an ADD's
// gateway check found is counted, observed and handed over with the job.
import { describe, expect, it } from 'vitest';
import type { BackgroundJob } from '../../../src/announce/background-job';
import type { GatewayVerdict } from '../../../src/announce/gateway-verdict';
import type { AttachmentRecord } from '../../../src/announce/state';
import { OFF_VERDICT } from '../../../src/announce/gateway-verdict';
import { newCounters } from '../../../src/daemon/counters';
import { tableHost } from '../../../src/daemon/table-host';

const NONE = { garpRequest: 0, garpReply: 0, na: 0 };
const ANSWERED: GatewayVerdict = {
  result: 'answered',
  answered: [{ interface: 'eth0', gateway: '10.88.0.1', mac: '52:54:00:12:34:56', afterMs: 250 }],
  unanswered: [],
  asks: 1,
};
const PENDING: GatewayVerdict = {
  result: 'pending',
  answered: [],
  unanswered: [{ interface: 'eth0', gateway: '10.88.0.1' }],
  asks: 0,
};

/** The record of an ADD that left a job (its fields do not matter to the hand-off). */
const WITH_JOB = { job: {} as BackgroundJob } as AttachmentRecord;

function host() {
  const calls: string[] = [];
  const observed: number[] = [];
  const counters = newCounters();
  const table = tableHost(
    {
      jobs: {
        take: (name, _job, gateway, session) => (calls.push(`take ${name} ${gateway?.result}`), session !== undefined),
        forget: (name, why) => (calls.push(`forget ${name} ${why}`), true),
      },
      counters,
      metrics: { observeAddToFirstRound: () => undefined, observeGatewayAnswer: (s) => void observed.push(s) },
      bootMs: () => 0,
      guard: (_what, work) => work(),
    },
    0,
  );
  return { table, calls, observed, counters };
}

describe('tableHost: the gateway verdict of an ADD', () => {
  it('counts a final verdict and observes its answers; with the job, the table takes both', () => {
    const { table, calls, observed, counters } = host();
    table.added('c1@eth0.json', WITH_JOB, { sent: NONE, gateway: ANSWERED });
    expect(counters.gateway.answered).toBe(1);
    expect(observed).toEqual([0.25]);
    expect(calls).toEqual(['take c1@eth0.json answered']);
  });

  it('a pending verdict is not counted, and goes with its job', () => {
    const { table, calls, counters } = host();
    table.added('c1@eth0.json', WITH_JOB, { sent: NONE, gateway: PENDING });
    expect(counters.gateway).toMatchObject({ answered: 0, noAnswer: 0 });
    expect(calls).toEqual(['take c1@eth0.json pending']);
  });

  it('a check that is off is counted, but nothing is kept for status', () => {
    const { table, calls, counters } = host();
    table.added('c1@eth0.json', { ...WITH_JOB, job: undefined }, { sent: NONE, gateway: OFF_VERDICT });
    expect(counters.gateway.off).toBe(1);
    expect(calls).toEqual(['forget c1@eth0.json no job']);
  });
});
