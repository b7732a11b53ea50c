// What the plugin says about itself, as the reference plugins do: the about text for a run without CNI_COMMAND, and
// `announcer --version`; and which build this binary is. Every request between a CNI call and the node's announcer
// carries the build, so two builds notice each other (an upgrade replaced the binary while the old announcer runs).
import { version } from '../package.json';
import { SUPPORTED_VERSIONS } from './cni/versions';

declare const __ANNOUNCER_BUILD_ID__: string | undefined;

/** The plugin's version: package.json's, inlined at build time. */
export const VERSION: string = version;

/**
 * The build's id, written in by scripts/build.mjs (the bundler's `define`): the same sources give the same id; 'dev'
 * where nothing wrote one in (vitest, a run from source).
 */
export const BUILD_ID: string = typeof __ANNOUNCER_BUILD_ID__ === 'string' ? __ANNOUNCER_BUILD_ID__ : 'dev';

/** The reference plugins' answer to a run without CNI_COMMAND (they print it to stderr and exit 0). */
export function aboutText(): string {
  return `CNI announcer plugin v${VERSION}\nCNI protocol versions supported: ${SUPPORTED_VERSIONS.join(', ')}\n`;
}

/** `announcer --version`, for stdout: the about text, the build's id and where the third-party licences are. */
export function versionText(buildId: string = BUILD_ID): string {
  const notices = 'Third-party licences: THIRD_PARTY_NOTICES, shipped next to this executable';
  return `${aboutText()}Build: ${buildId}\n${notices}\n`;
}
