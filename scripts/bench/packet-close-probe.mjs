// Run by `make bench` inside its own netns (`ip netns exec`): opens an AF_PACKET
// socket the way the plugin does (SOCK_RAW, protocol 0: it receives nothing and
// sends nothing here) and times two close(2) calls on it. Prints JSON:
//   sharedMs  closing a descriptor that is not the last reference (a dup)
//   lastMs    closing the last one: packet_release() runs synchronize_net()
import koffi from 'koffi';

const AF_PACKET = 17;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;

const libc = koffi.load('libc.so.6');
const socket = libc.func('int socket(int domain, int type, int protocol)');
const dup = libc.func('int dup(int fd)');
const close = libc.func('int close(int fd)');

function timed(fn) {
  const t0 = process.hrtime.bigint();
  const rc = fn();
  return { rc, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
}

const fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
if (fd < 0) throw new Error('socket(AF_PACKET) failed (CAP_NET_RAW is needed)');
const copy = dup(fd);
if (copy < 0) throw new Error('dup failed');
const shared = timed(() => close(copy));
const last = timed(() => close(fd));
if (shared.rc !== 0 || last.rc !== 0) throw new Error('close failed');
process.stdout.write(`${JSON.stringify({ sharedMs: shared.ms, lastMs: last.ms })}\n`);
