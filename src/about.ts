// What the plugin says about itself, as the reference plugins do: the about
// text for a run without CNI_COMMAND, and `announcer --version`.
import { version } from '../package.json';
import { BUILD_ID } from './build-id';
import { SUPPORTED_VERSIONS } from './cni/versions';

/** The plugin's version: package.json's, inlined at build time. */
export const VERSION: string = version;

/** The reference plugins' answer to a run without CNI_COMMAND (they print it to stderr and exit 0). */
export function aboutText(): string {
  return `CNI announcer plugin v${VERSION}\nCNI protocol versions supported: ${SUPPORTED_VERSIONS.join(', ')}\n`;
}

/** `announcer --version`, for stdout: the about text, the build's id and where the third-party licences are. */
export function versionText(buildId: string = BUILD_ID): string {
  const notices = 'Third-party licences: THIRD_PARTY_NOTICES, shipped next to this executable';
  return `${aboutText()}Build: ${buildId}\n${notices}\n`;
}
