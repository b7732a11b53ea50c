// Finds skips in a test file's source that bypass test/support/skip.ts, whose
// helpers print why. A plain text scan, line by line: comment lines are
// ignored, and a skipIf passes only when its condition is a call of an
// approved helper.

/**
 * Helpers a `.skipIf(…)` condition may call; each must go through skipUnless (test/unit/skip-policy.test.ts checks).
 */
export const APPROVED_CONDITIONS = ['skipUnless', 'skipIntegration', 'skipPodman', 'skipContainerd'] as const;

/** One skip that does not say why: its 1-based line and what is wrong. */
export interface BareSkip {
  line: number;
  problem: string;
}

const SKIP_IF = /\.skipIf\(\s*([A-Za-z_$][\w$]*)?\s*(\()?/g;
const OTHER = [
  { re: /\.runIf\(/, problem: 'runIf: write skipIf(skipUnless(capability, missing))' },
  {
    re: /\.skip(\(|\.each\b|\.for\b)/,
    problem: '.skip / ctx.skip: use skipUnless (or skipTestUnless inside a test), which prints why',
  },
  { re: /\.todo\(/, problem: '.todo: a test that is not written is reported as skipped without a reason' },
  { re: /[{,]\s*skip\s*[:,}]/, problem: '{ skip } option or destructured skip: use skipUnless' },
];

function isComment(line: string): boolean {
  const t = line.trimStart();
  return t.startsWith('//') || t.startsWith('*') || t.startsWith('/*');
}

/** The skips in `source` that bypass the approved helpers. */
export function bareSkips(source: string): BareSkip[] {
  const found: BareSkip[] = [];
  source.split('\n').forEach((text, i) => {
    if (isComment(text)) return;
    for (const m of text.matchAll(SKIP_IF)) {
      const callee = m[1];
      const approved =
        callee !== undefined && m[2] !== undefined && (APPROVED_CONDITIONS as readonly string[]).includes(callee);
      if (!approved)
        found.push({
          line: i + 1,
          problem: `skipIf(${callee ?? '…'}…): the condition must be a call of ${APPROVED_CONDITIONS.join(', ')}`,
        });
    }
    for (const { re, problem } of OTHER) if (re.test(text)) found.push({ line: i + 1, problem });
  });
  return found;
}
