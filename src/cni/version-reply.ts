// Pure: VERSION's answer. Apart from dispatch so that a VERSION run (podman sends one per pod)
// loads only this and the versions, not the protocol layer of the other commands.
import { decodeConfig, MAX_STDIN_BYTES } from './decode';
import { isSupportedVersion, LATEST_VERSION, SUPPORTED_VERSIONS, type CniVersion } from './versions';

/** `{cniVersion, supportedVersions}`: stdin's cniVersion when it names a supported one, else the latest. */
export function versionReply(stdin: Uint8Array | undefined): {
  cniVersion: CniVersion;
  supportedVersions: CniVersion[];
} {
  let asked: unknown;
  try {
    if (stdin !== undefined && stdin.length <= MAX_STDIN_BYTES) asked = decodeConfig(stdin).cniVersion;
  } catch {
    asked = undefined;
  }
  return {
    cniVersion: isSupportedVersion(asked) ? asked : LATEST_VERSION,
    supportedVersions: [...SUPPORTED_VERSIONS],
  };
}
