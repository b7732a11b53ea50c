// A CRI client, as the kubelet talks to a runtime: gRPC over a unix socket,
// the RuntimeService and ImageService of k8s.io/cri-api (package runtime.v1),
// loaded from the hand-written subset in cri/api-subset.proto.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PROTO = join(dirname(fileURLToPath(import.meta.url)), 'cri', 'api-subset.proto');
/** How long one CRI call may take before it fails (RunPodSandbox includes the CNI ADD). */
const CALL_DEADLINE_MS = 60_000;

/** PodSandboxMetadata: who the pod is (the plugin sees name, namespace and uid in CNI_ARGS). */
export interface PodMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt?: number;
}

/** PodSandboxConfig, as far as the subset carries it. */
export interface PodSandboxConfig {
  metadata: PodMetadata;
  hostname?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** LinuxPodSandboxConfig: the cgroup the sandbox's cgroup goes under (cgroupfs: a path). */
  linux?: { cgroupParent: string };
}

/** A PodSandbox of ListPodSandbox. */
export interface PodSandboxItem {
  id: string;
  metadata: PodMetadata;
  state: 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
}

/** PodSandboxStatusResponse, with containerd's verbose `info` parsed when asked for. */
export interface PodSandboxStatusReply {
  status: PodSandboxItem & { network?: { ip: string; additionalIps: { ip: string }[] } };
  info: Record<string, string>;
}

/** The RuntimeService and ImageService calls the tests make, as promises. */
export interface CriClient {
  version(): Promise<{ version: string; runtimeName: string; runtimeVersion: string; runtimeApiVersion: string }>;
  /**
   * RunPodSandbox; `runtimeHandler` picks a runtime of containerd's config (its own CNI conf dir). Resolves with the
   * sandbox ID.
   */
  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string): Promise<string>;
  stopPodSandbox(id: string): Promise<void>;
  removePodSandbox(id: string): Promise<void>;
  podSandboxStatus(id: string, verbose?: boolean): Promise<PodSandboxStatusReply>;
  listPodSandbox(): Promise<PodSandboxItem[]>;
  /** ImageStatus: the image's ID, or undefined while the runtime does not know it. */
  imageId(image: string): Promise<string | undefined>;
  close(): void;
}

type Unary = (req: object, opts: { deadline: Date }, cb: (err: grpc.ServiceError | null, res: any) => void) => void;

function loadServices(): { Runtime: grpc.ServiceClientConstructor; Image: grpc.ServiceClientConstructor } {
  const def = protoLoader.loadSync(PROTO, {
    keepCase: false,
    longs: String,
    enums: String,
    defaults: true,
    arrays: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as any;
  return { Runtime: pkg.runtime.v1.RuntimeService, Image: pkg.runtime.v1.ImageService };
}

/** Calls one unary method and resolves with its answer; a gRPC error rejects naming the method. */
function call<T>(client: grpc.Client, method: string, req: object): Promise<T> {
  const fn = (client as unknown as Record<string, Unary>)[method];
  if (typeof fn !== 'function') return Promise.reject(new Error(`CRI client has no method ${method}`));
  return new Promise((resolve, reject) => {
    fn.call(client, req, { deadline: new Date(Date.now() + CALL_DEADLINE_MS) }, (err, res) => {
      if (err) reject(new Error(`CRI ${method}: ${err.details || err.message}`, { cause: err }));
      else resolve(res as T);
    });
  });
}

/** A CRI client on the runtime's unix socket `socketPath`. */
export function criClient(socketPath: string): CriClient {
  const { Runtime, Image } = loadServices();
  const target = `unix://${socketPath}`;
  const credentials = grpc.credentials.createInsecure();
  const runtime = new Runtime(target, credentials);
  const image = new Image(target, credentials);
  return {
    version: () => call(runtime, 'version', { version: 'v1' }),
    async runPodSandbox(config, runtimeHandler = '') {
      const res = await call<{ podSandboxId: string }>(runtime, 'runPodSandbox', { config, runtimeHandler });
      return res.podSandboxId;
    },
    stopPodSandbox: async (id) => void (await call(runtime, 'stopPodSandbox', { podSandboxId: id })),
    removePodSandbox: async (id) => void (await call(runtime, 'removePodSandbox', { podSandboxId: id })),
    podSandboxStatus: (id, verbose = false) => call(runtime, 'podSandboxStatus', { podSandboxId: id, verbose }),
    async listPodSandbox() {
      return (await call<{ items: PodSandboxItem[] }>(runtime, 'listPodSandbox', {})).items;
    },
    async imageId(ref) {
      const res = await call<{ image: { id: string } | null }>(image, 'imageStatus', { image: { image: ref } });
      return res.image?.id || undefined;
    },
    close() {
      runtime.close();
      image.close();
    },
  };
}
