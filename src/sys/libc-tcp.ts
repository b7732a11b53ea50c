// The announcer's TCP calls (TcpSockets), bound with koffi: loadLibc's part
// for the HTTP endpoint. send, recv and close are the unix socket's own.
import { ABI } from './abi/kernel-abi';
import type { CallChecks } from './libc-calls';
import { lazyFunc, listenCalls, type LibcLibrary } from './lazy-binding';
import { formatIPv6 } from '../wire/ip';
import { sockaddrIn, sockaddrPort, type TcpSockets } from './tcp-socket';

const { AF_INET, AF_INET6, SO_REUSEADDR, SOCK_CLOEXEC, SOCK_NONBLOCK, SOCK_STREAM, SOL_SOCKET } = ABI;

/** TcpSockets over `lib`. */
export function bindTcpSockets(lib: LibcLibrary, { check, unlessPending, closing }: CallChecks): TcpSockets {
  const { socket, bind, listen, accept4 } = listenCalls(lib);
  const setsockopt = lazyFunc(lib, 'int setsockopt(int fd, int level, int name, const uint8_t *value, uint32_t len)');
  const getsockname = lazyFunc(lib, 'int getsockname(int fd, uint8_t *addr, _Inout_ uint32_t *len)');
  const one = Buffer.from(Int32Array.of(1).buffer);
  return {
    listenTcp(address, backlog) {
      const host = address.family === 6 ? `[${formatIPv6(address.bytes)}]` : [...address.bytes].join('.');
      const where = `${host}:${address.port}`;
      const fd = closing(
        check(
          'socket(AF_INET)',
          socket(address.family === 6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0),
        ),
        (fd) => {
          check('setsockopt(SO_REUSEADDR)', setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, one, one.length));
          const bytes = sockaddrIn(address);
          check(`bind ${where}`, bind(fd, bytes, bytes.length));
          check(`listen ${where}`, listen(fd, backlog));
        },
      );
      const bound = Buffer.alloc(ABI.sockaddr_in6.size);
      closing(fd, () => check('getsockname', getsockname(fd, bound, [bound.length])));
      return { fd, port: sockaddrPort(bound) };
    },
    acceptTcp: (fd) => unlessPending('accept', accept4(fd, null, null, SOCK_NONBLOCK | SOCK_CLOEXEC)),
  };
}
