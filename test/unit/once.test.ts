import { describe, expect, it } from 'vitest';
import { once } from '../../src/once';

describe('once', () => {
  it('makes the value on the first call, not before, and hands the same value back after', () => {
    let made = 0;
    const value = once(() => ({ n: ++made }));
    expect(made).toBe(0);
    const first = value();
    expect(value()).toBe(first);
    expect(made).toBe(1);
  });
});
