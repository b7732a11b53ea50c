import { describe, expect, it } from 'vitest';
import { parseFlags } from '../../src/cli-flags';

const SPEC = { netns: 'string', count: 'int', json: 'bool' } as const;

describe('parseFlags', () => {
  it('reads --name value, --name=value and --flag', () => {
    const seen = parseFlags(['--netns', '/run/netns/a', '--count=3', '--json'], SPEC, 'u');
    expect(seen).toEqual({ ok: true, flags: { netns: '/run/netns/a', count: 3, json: true } });
    expect(parseFlags([], SPEC, 'u')).toEqual({ ok: true, flags: {} });
  });

  it('names the argument that is wrong, with the usage', () => {
    const found = parseFlags(['--bogus'], SPEC, 'usage: x');
    expect(found).toEqual({ ok: false, problem: 'unknown argument "--bogus"; usage: x' });
    expect(parseFlags(['netns'], SPEC, 'u')).toEqual({ ok: false, problem: 'unknown argument "netns"; u' });
    const shown = parseFlags(['--count', 'ten'], SPEC, 'u');
    expect(shown).toEqual({ ok: false, problem: '--count must be a whole number (got "ten"); u' });
    expect(parseFlags(['--count'], SPEC, 'u')).toEqual({ ok: false, problem: '--count needs a value; u' });
    expect(parseFlags(['--json=1'], SPEC, 'u')).toEqual({ ok: false, problem: '--json takes no value; u' });
    expect(parseFlags(['--count=1', '--count=2'], SPEC, 'u')).toEqual({ ok: false, problem: '--count given twice; u' });
    expect(parseFlags(['--toString'], SPEC, 'u')).toEqual({ ok: false, problem: 'unknown argument "--toString"; u' });
  });
});
