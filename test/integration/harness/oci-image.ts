// A sandbox ("pause") image built offline, by hand: an OCI image layout
// (oci-layout, index.json, blobs/sha256/…) holding one manifest, its config
// and one uncompressed layer whose only file is busybox-static. The sandbox
// process is `busybox sleep`, which is all a pause container has to do: hold
// the pod's namespaces.
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runOk } from './exec';
import { BUSYBOX } from './podman';

/** How long the sandbox process sleeps: bounded, so a pod a crashed test left goes away on its own. */
const SANDBOX_SLEEP_S = 3600;

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/** Writes `data` into the layout's blob store and returns its descriptor. */
async function addBlob(layout: string, mediaType: string, data: Buffer): Promise<Descriptor> {
  const hex = createHash('sha256').update(data).digest('hex');
  await writeFile(join(layout, 'blobs', 'sha256', hex), data);
  return { mediaType, digest: `sha256:${hex}`, size: data.length };
}

/** A tar (owner root, numeric ids) of `files` taken from directory `from`. */
async function tarOf(from: string, files: readonly string[], out: string): Promise<Buffer> {
  await runOk('tar', ['--numeric-owner', '--owner=0', '--group=0', '--mtime=@0', '-C', from, '-cf', out, ...files]);
  return readFile(out);
}

/**
 * Builds an OCI image archive in `dir` (which it uses as scratch space) for
 * image `name` (e.g. `localhost/pause:test`, recorded as the
 * io.containerd.image.name annotation that `ctr images import` names the
 * image by). Resolves with the archive's path.
 */
export async function buildPauseImage(dir: string, name: string): Promise<string> {
  const rootfs = join(dir, 'rootfs');
  const layout = join(dir, 'layout');
  await mkdir(rootfs, { recursive: true });
  await mkdir(join(layout, 'blobs', 'sha256'), { recursive: true });
  await copyFile(BUSYBOX, join(rootfs, 'busybox'));
  await runOk('chmod', ['0755', join(rootfs, 'busybox')]);

  const layerTar = await tarOf(rootfs, ['busybox'], join(dir, 'layer.tar'));
  const layer = await addBlob(layout, 'application/vnd.oci.image.layer.v1.tar', layerTar);
  const config = await addBlob(
    layout,
    'application/vnd.oci.image.config.v1+json',
    Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: { Entrypoint: ['/busybox', 'sleep', String(SANDBOX_SLEEP_S)] },
        // The layer is uncompressed: its diff ID is its digest.
        rootfs: { type: 'layers', diff_ids: [layer.digest] },
      }),
    ),
  );
  const manifest = await addBlob(
    layout,
    'application/vnd.oci.image.manifest.v1+json',
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config,
        layers: [layer],
      }),
    ),
  );
  const tag = name.slice(name.lastIndexOf(':') + 1);
  manifest.annotations = { 'io.containerd.image.name': name, 'org.opencontainers.image.ref.name': tag };
  await writeFile(join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [manifest] }));
  await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));

  const archive = join(dir, 'pause-image.tar');
  await tarOf(layout, ['oci-layout', 'index.json', 'blobs'], archive);
  await rm(rootfs, { recursive: true, force: true });
  return archive;
}
