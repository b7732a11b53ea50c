// deploy/: the DaemonSet against the Kubernetes schemas (kubernetes-models),
// and the NetworkAttachmentDefinition (a Multus CRD) for its shape and its
// `config`, a conflist whose announcer entry must pass the plugin's own config
// parsing. The example conflists in examples/ get the same check.
import { ANNOUNCER_RUNTIME_ENV } from '../../src/sys/detached';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DaemonSet, type IDaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { ObjectMeta } from '@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseConfig } from '../../src/cni/config';
import { parseInstallArgs } from '../../src/commands/install';
import { parseDaemonArgs } from '../../src/daemon/daemon-verb';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CNI_BIN = '/opt/cni/bin';
const INSTALL_DEST = '/host/opt/cni/bin';
const STATE_DIR = '/run/cni-announcer';

/** The YAML documents of a file, as plain objects; a YAML error fails. */
function yamlDocs(path: string): unknown[] {
  return parseAllDocuments(readFileSync(join(ROOT, path), 'utf8')).map((doc) => {
    expect(doc.errors, path).toEqual([]);
    return doc.toJS();
  });
}

/** A value to check as an object literal of type `typeName` from `module`. */
interface TypeCase {
  module: string;
  typeName: string;
  value: unknown;
}

/**
 * TypeScript's verdict on each case's value as an object literal of its type:
 * excess property checks catch unknown (misspelt) fields at any depth, which
 * the JSON-schema validation lets through. One program for all cases (and
 * lib.es5 only), since each program costs seconds.
 */
function typeErrors(cases: readonly TypeCase[]): string[][] {
  const files = cases.map((_, i) => join(ROOT, `test/unit/__deploy_check_${i}__.ts`));
  const sources = new Map(
    cases.map((c, i) => [
      files[i]!,
      `import type { ${c.typeName} } from ${JSON.stringify(c.module)};\nexport const ` +
        `value: ${c.typeName} = ${JSON.stringify(c.value, null, 2)};\n`,
    ]),
  );
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    skipLibCheck: true,
    lib: ['lib.es5.d.ts'],
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (f) => sources.get(f) ?? readFile(f);
  host.fileExists = (f) => sources.has(f) || fileExists(f);
  host.getSourceFile = (f, lang, ...rest) => {
    const text = sources.get(f);
    return text === undefined ? getSourceFile(f, lang, ...rest) : ts.createSourceFile(f, text, lang);
  };
  const program = ts.createProgram(files, options, host);
  const message = (d: ts.Diagnostic): string =>
    ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n').slice(-1)[0]!.trim();
  const global = ts.getPreEmitDiagnostics(program).filter((d) => d.file === undefined || !sources.has(d.file.fileName));
  expect(global.map(message)).toEqual([]);
  return files.map((f) => ts.getPreEmitDiagnostics(program, program.getSourceFile(f)).map(message));
}

describe('deploy/daemonset.yaml', () => {
  const docs = yamlDocs('deploy/daemonset.yaml');
  const ds = docs[0] as IDaemonSet;
  const pod = ds.spec!.template.spec!;

  it('is one apps/v1 DaemonSet that validates against the Kubernetes schema', () => {
    expect(docs).toHaveLength(1);
    expect([ds.apiVersion, ds.kind]).toEqual(['apps/v1', 'DaemonSet']);
    expect(() => new DaemonSet(ds).validate()).not.toThrow();
  });

  it('lives in kube-system, on every node, as system-node-critical', () => {
    expect(ds.metadata?.namespace).toBe('kube-system');
    expect(pod.tolerations).toEqual([{ operator: 'Exists' }]);
    expect(pod.priorityClassName).toBe('system-node-critical');
    expect(ds.spec!.selector.matchLabels).toEqual(ds.spec!.template.metadata?.labels);
  });

  it('installs with an init container into the hostPath /opt/cni/bin, mounted where `install --dest` writes', () => {
    expect(pod.initContainers).toHaveLength(1);
    const init = pod.initContainers![0]!;
    const got = init.command;
    expect(got).toEqual(['/announcer', 'install', '--dest', INSTALL_DEST, '--also-notices', '--state-dir', STATE_DIR]);
    const mount = init.volumeMounts?.find((m) => m.mountPath === INSTALL_DEST);
    expect(mount?.readOnly).not.toBe(true);
    const volume = pod.volumes?.find((v) => v.name === mount?.name);
    expect(volume?.hostPath).toEqual({ path: CNI_BIN, type: 'Directory' });
  });

  it("writes the node settings with the install, into the stateDir the announcer's container mounts", () => {
    const init = pod.initContainers![0]!;
    const parsed = parseInstallArgs(init.command!.slice(2));
    expect(parsed).toMatchObject({ ok: true, args: { stateDir: STATE_DIR } });
    const stateMount = (c: { volumeMounts?: { mountPath: string; name: string; readOnly?: boolean }[] }) =>
      c.volumeMounts?.find((m) => m.mountPath === STATE_DIR);
    expect(stateMount(init)?.readOnly).not.toBe(true);
    expect(stateMount(init)?.name).toBe(stateMount(pod.containers[0]!)?.name);
    expect(pod.volumes?.find((v) => v.name === stateMount(init)?.name)?.hostPath?.path).toBe(STATE_DIR);
  });

  const thenRunsResidentTitle =
    'then runs the resident announcer from the same image, for ' +
    "/run/cni-announcer, logging JSON, serving on the node's address";
  it(thenRunsResidentTitle, () => {
    expect(pod.containers).toHaveLength(1);
    const main = pod.containers[0]!;
    expect(main.image).toBe(pod.initContainers![0]!.image);
    const expected = ['/announcer', 'daemon', STATE_DIR, '--resident', '--log-format=json', '--listen=$(HOST_IP):9464'];
    expect(main.command).toEqual(expected);
    expect(parseDaemonArgs(main.command!.slice(2))).toEqual({
      ok: true,
      args: { stateDir: STATE_DIR, resident: true, logFormat: 'json', listen: '$(HOST_IP):9464' },
    });
    // JavaScriptCore's GC markers off, as for an announcer a call starts (src/sys/detached.ts).
    const [[name, value]] = Object.entries(ANNOUNCER_RUNTIME_ENV);
    expect(main.env).toEqual([
      { name: 'HOST_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
      { name, value },
    ]);
    expect(pod.hostNetwork).toBe(true);
  });

  it('probes /healthz on the port it listens on, both liveness and readiness', () => {
    const main = pod.containers[0]!;
    const port = main.ports?.find((p) => p.name === 'metrics');
    expect(port?.containerPort).toBe(9464);
    for (const probe of [main.livenessProbe, main.readinessProbe])
      expect(probe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
  });

  const runsAsRootTitle =
    "runs as root (the plugin's uid) with ALL dropped and exactly SYS_ADMIN, " +
    'NET_RAW, NET_ADMIN, SYS_PTRACE added, each with its reason';
  it(runsAsRootTitle, () => {
    const sc = pod.containers[0]!.securityContext!;
    const got = [sc.runAsUser, sc.runAsNonRoot, sc.allowPrivilegeEscalation, sc.readOnlyRootFilesystem];
    expect(got).toEqual([0, false, false, true]);
    expect(sc.seccompProfile).toEqual({ type: 'RuntimeDefault' });
    expect(sc.capabilities?.drop).toEqual(['ALL']);
    expect([...(sc.capabilities?.add ?? [])].sort()).toEqual(['NET_ADMIN', 'NET_RAW', 'SYS_ADMIN', 'SYS_PTRACE']);
    const text = readFileSync(join(ROOT, 'deploy/daemonset.yaml'), 'utf8');
    for (const [cap, why] of [
      ['SYS_ADMIN', /setns\(2\)/],
      ['NET_RAW', /AF_PACKET/],
      ['NET_ADMIN', /rtnetlink/],
      ['SYS_PTRACE', /\/proc\/PID\/ns\/net/],
    ] as const) {
      const comment = new RegExp(`((?:\\n\\s*#[^\\n]*)+)\\n\\s*- ${cap}\\n`).exec(text)?.[1];
      expect(comment, cap).toMatch(why);
    }
  });

  const mountsStateDirAtTitle =
    'mounts the stateDir at its own path, the netns dirs with HostToContainer ' +
    "propagation, and shares the node's PIDs for /proc/PID/ns/net";
  it(mountsStateDirAtTitle, () => {
    const main = pod.containers[0]!;
    const hostPathOf = (mountPath: string): string | undefined => {
      const mount = main.volumeMounts?.find((m) => m.mountPath === mountPath);
      return pod.volumes?.find((v) => v.name === mount?.name)?.hostPath?.path;
    };
    expect(hostPathOf(STATE_DIR)).toBe(STATE_DIR);
    for (const dir of ['/var/run/netns', '/run/netns', '/run/containerd/io.containerd.grpc.v1.cri']) {
      expect(hostPathOf(dir), dir).toBe(dir);
      expect(main.volumeMounts!.find((m) => m.mountPath === dir)?.mountPropagation, dir).toBe('HostToContainer');
    }
    expect(main.volumeMounts!.find((m) => m.mountPath === STATE_DIR)?.readOnly).not.toBe(true);
    expect(pod.hostPID).toBe(true);
  });

  it('gives every container small requests and limits, limits ≥ requests', () => {
    const mebibytes = (q: string | number | undefined): number => {
      const m = /^(\d+)Mi$/.exec(String(q));
      if (!m) throw new Error(`memory ${q}: expected <n>Mi`);
      return Number(m[1]);
    };
    const millicores = (q: string | number | undefined): number => {
      const m = /^(\d+)m$/.exec(String(q));
      if (!m) throw new Error(`cpu ${q}: expected <n>m`);
      return Number(m[1]);
    };
    for (const c of [...pod.initContainers!, ...pod.containers]) {
      const { requests, limits } = c.resources ?? {};
      expect(millicores(requests?.cpu), c.name).toBeLessThanOrEqual(millicores(limits?.cpu));
      expect(mebibytes(requests?.memory), c.name).toBeLessThanOrEqual(mebibytes(limits?.memory));
      expect(millicores(limits?.cpu), c.name).toBeLessThanOrEqual(250);
      expect(mebibytes(limits?.memory), c.name).toBeLessThanOrEqual(128);
      expect(c.securityContext?.allowPrivilegeEscalation, c.name).toBe(false);
      expect(c.securityContext?.readOnlyRootFilesystem, c.name).toBe(true);
      expect(c.securityContext?.capabilities?.drop, c.name).toEqual(['ALL']);
    }
  });
});

/** A conflist's shape, as libcni reads it. */
interface Conflist {
  cniVersion: string;
  name: string;
  plugins: { type: string; [k: string]: unknown }[];
}

/** Checks a conflist and runs its announcer entry through parseConfig with what libcni injects (name, cniVersion). */
function expectAnnouncerConflist(text: string, what: string): Conflist {
  const list = JSON.parse(text) as Conflist;
  expect(typeof list.cniVersion, what).toBe('string');
  expect(typeof list.name, what).toBe('string');
  expect(Array.isArray(list.plugins), what).toBe(true);
  const types = list.plugins.map((p) => p.type);
  const at = types.indexOf('announcer');
  expect(at, `${what}: plugins ${types.join(', ')}`).toBeGreaterThan(0); // chained after a main plugin
  expect(types.lastIndexOf('announcer'), what).toBe(at);
  const entry = list.plugins[at]!;
  const config = parseConfig({ ...entry, name: list.name, cniVersion: list.cniVersion });
  expect(config.type).toBe('announcer');
  return list;
}

describe('deploy/network-attachment-definition.yaml', () => {
  const docs = yamlDocs('deploy/network-attachment-definition.yaml');
  const nad = docs[0] as {
    apiVersion: string;
    kind: string;
    metadata: Record<string, unknown>;
    spec: Record<string, unknown>;
  };

  const isOneK8sTitle =
    'is one k8s.cni.cncf.io/v1 NetworkAttachmentDefinition: valid ObjectMeta, spec holding only the config string';
  it(isOneK8sTitle, () => {
    expect(docs).toHaveLength(1);
    expect(Object.keys(nad).sort()).toEqual(['apiVersion', 'kind', 'metadata', 'spec']);
    expect([nad.apiVersion, nad.kind]).toEqual(['k8s.cni.cncf.io/v1', 'NetworkAttachmentDefinition']);
    expect(() => new ObjectMeta(nad.metadata).validate()).not.toThrow();
    expect(Object.keys(nad.spec)).toEqual(['config']);
    expect(typeof nad.spec.config).toBe('string');
  });

  it('carries a conflist, named as the NAD, whose announcer entry the plugin accepts', () => {
    const list = expectAnnouncerConflist(nad.spec.config as string, 'NAD config');
    expect(list.name).toBe(nad.metadata.name);
  });

  it('the conflist check rejects an announcer entry the plugin would reject', () => {
    const list = JSON.parse(nad.spec.config as string) as Conflist;
    list.plugins.find((p) => p.type === 'announcer')!.count = 11;
    const expected = /"count" must be an integer from 0 to 10/;
    expect(() => expectAnnouncerConflist(JSON.stringify(list), 'bad')).toThrow(expected);
  });
});

describe('no unknown field anywhere (TypeScript excess property checks on the kubernetes-models types)', () => {
  const ds = yamlDocs('deploy/daemonset.yaml')[0] as any;
  const nad = yamlDocs('deploy/network-attachment-definition.yaml')[0] as any;
  const misspelt = structuredClone(ds);
  misspelt.spec.template.spec.tolerations = [{ operater: 'Exists' }];
  const DAEMONSET = { module: 'kubernetes-models/apps/v1/DaemonSet', typeName: 'IDaemonSet' };
  let verdicts: string[][] = [];
  beforeAll(() => {
    verdicts = typeErrors([
      { ...DAEMONSET, value: ds },
      {
        module: '@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta',
        typeName: 'IObjectMeta',
        value: nad.metadata,
      },
      { ...DAEMONSET, value: misspelt },
    ]);
  }, 60_000);

  it('in the DaemonSet', () => expect(verdicts[0]).toEqual([]));
  it("in the NetworkAttachmentDefinition's metadata", () => expect(verdicts[1]).toEqual([]));
  it('and the check does catch a misspelt field deep inside, which the schema alone lets through', () => {
    expect(() => new DaemonSet(misspelt).validate()).not.toThrow();
    expect(verdicts[2]!.join('\n')).toMatch(/'"operater"' does not exist in type 'IToleration'/);
  });
});

describe('examples/*.json', () => {
  it.each([
    'examples/bridge-conflist.json',
    'examples/macvlan-conflist.json',
    'examples/containerd-annotations-conflist.json',
  ])('%s is a conflist whose announcer entry the plugin accepts', (path) => {
    expectAnnouncerConflist(readFileSync(join(ROOT, path), 'utf8'), path);
  });
});
