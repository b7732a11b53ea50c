// The exchange's floor: what one request to the running announcer costs a client that does nothing
// else. `make bench` compiles this as the plugin is compiled (scripts/build.mjs --entry) and runs it
// in place of the plugin on the same rows. It uses the shim's own transport (the Bun twins of
// src/sys/stdio and src/sys/unix-stream) and protocol (src/protocol.ts), and none of the shim's
// work: it checks nothing, starts nothing and sets no timer. The socket comes from BENCH_SOCKET, the
// sender's build from BENCH_BUILD (the announcer's own, so that it does not hand over).
import { decodeReply, encodeLine, MAX_FORWARDED_STDIN, WIRE_VERSION, cniEnv } from '../../src/protocol';
import { readText, stdinReader, writeFd } from '../../src/sys/stdio.bun';
import { connectUnix } from '../../src/sys/unix-stream.bun';

const uptime = await readText('/proc/uptime');
const stdin = new TextDecoder().decode(await stdinReader().read(MAX_FORWARDED_STDIN));
// Ten seconds on: the announcer never drops this request for its deadline.
const deadline = Math.round(Number(uptime.split(' ')[0]) * 100) * 10 + 10_000;
const request = { v: WIRE_VERSION, build: process.env.BENCH_BUILD ?? '', deadline };
const reply = await new Promise<string>((resolve, reject) => {
  let got = '';
  const decoder = new TextDecoder();
  connectUnix(process.env.BENCH_SOCKET ?? '', {
    data: (data) => void (got += decoder.decode(data, { stream: true })),
    end: () => resolve(got),
    error: reject,
  }).then((c) => c.write(encodeLine({ ...request, cni: { env: cniEnv(process.env), stdin } })), reject);
});
const end = decodeReply(reply.split('\n')[0]!);
if (end === undefined || !('exit' in end)) throw new Error(`no end in ${JSON.stringify(reply)}`);
await writeFd(1, end.stdout);
process.exit(end.exit);
