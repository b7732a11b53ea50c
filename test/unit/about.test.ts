import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { aboutText, BUILD_ID, VERSION, versionText } from '../../src/about';

describe('about and --version', () => {
  it('takes the version from package.json', () => {
    expect(VERSION).toBe(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version);
  });

  it('words the about text as the reference plugins do', () => {
    expect(aboutText()).toBe(
      `CNI announcer plugin v${VERSION}\nCNI protocol versions supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0\n`,
    );
  });

  it('prints the build id in --version and points at the third-party notices', () => {
    expect(versionText('0123456789abcdef')).toBe(
      `${aboutText()}Build: 0123456789abcdef\nThird-party licences: THIRD_PARTY_NOTICES, shipped next to ` +
        `this executable\n`,
    );
  });

  it("says 'dev' for the build id where no build wrote one in", () => {
    expect(BUILD_ID).toBe('dev');
    expect(versionText()).toContain('\nBuild: dev\n');
  });
});
