// The exchange's floor: what one request to the running announcer costs a client that does nothing
// else. `make bench` compiles this as the plugin is compiled (scripts/build.mjs --entry) and runs it
// in place of the plugin on the same rows. Like the shim, it reads /proc/uptime and stdin with Bun's
// API, connects with Bun.connect and writes one request line of the shim's protocol (src/shim/wire.ts).
// Unlike it, it checks nothing, starts nothing and sets no timer: the socket comes from
// BENCH_SOCKET, the sender's build from BENCH_BUILD (the announcer's own, so that it does not hand over).
import { cniEnv, encodeRequest, WIRE_VERSION } from '../../src/shim/wire';

/** The little of Bun's API this program uses. */
interface BunApi {
  file(path: string): { text(): Promise<string> };
  stdin: { slice(start: number, end: number): { bytes(): Promise<Uint8Array> } };
  stdout: unknown;
  write(destination: unknown, data: string): Promise<number>;
  connect(options: {
    unix: string;
    socket: {
      open(socket: { write(data: string): number }): void;
      data(socket: unknown, data: Uint8Array): void;
      close(): void;
      error(socket: unknown, error: Error): void;
    };
  }): Promise<unknown>;
}

const bun = (globalThis as unknown as { Bun: BunApi }).Bun;
const uptime = await bun.file('/proc/uptime').text();
const stdin = new TextDecoder().decode(await bun.stdin.slice(0, 1024 * 1024 + 1).bytes());
// Ten seconds on: the announcer never drops this request for its deadline.
const deadline = Math.round(Number(uptime.split(' ')[0]) * 100) * 10 + 10_000;
const line = encodeRequest({
  v: WIRE_VERSION,
  build: process.env.BENCH_BUILD ?? '',
  ackBy: deadline,
  deadline,
  cni: { env: cniEnv(process.env), stdin },
});
const decoder = new TextDecoder();
const reply = await new Promise<string>((resolve, reject) => {
  let got = '';
  bun
    .connect({
      unix: process.env.BENCH_SOCKET ?? '',
      socket: {
        open: (socket) => void socket.write(line),
        data: (_, data) => void (got += decoder.decode(data, { stream: true })),
        close: () => resolve(got),
        error: (_, error) => reject(error),
      },
    })
    .catch(reject);
});
const end = JSON.parse(reply.split('\n')[0] ?? '') as { exit: number; stdout: string };
await bun.write(bun.stdout, end.stdout);
process.exit(end.exit);
