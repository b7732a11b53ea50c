// The CNI spec versions this plugin speaks, and its answer to VERSION. Loaded at start-up, so that
// a VERSION run (podman sends one per pod) loads only this and stdin's decoding, not dispatch.
import { decodeConfig, MAX_STDIN_BYTES } from './decode';

/** The CNI spec versions this plugin speaks, oldest first. */
export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;

/** A supported CNI spec version. */
export type CniVersion = (typeof SUPPORTED_VERSIONS)[number];

/** The newest supported version: used when no usable version is known. */
export const LATEST_VERSION: CniVersion = '1.1.0';

/** Whether v is one of SUPPORTED_VERSIONS. */
export function isSupportedVersion(v: unknown): v is CniVersion {
  return typeof v === 'string' && (SUPPORTED_VERSIONS as readonly string[]).includes(v);
}

/** Compares two supported versions ("0.4.0" < "1.0.0"): negative, 0 or positive. */
export function compareVersions(a: CniVersion, b: CniVersion): number {
  return SUPPORTED_VERSIONS.indexOf(a) - SUPPORTED_VERSIONS.indexOf(b);
}

/** `{cniVersion, supportedVersions}`: stdin's cniVersion when it names a supported one, else the latest. */
export function versionReply(stdin: Uint8Array | string | undefined) {
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
