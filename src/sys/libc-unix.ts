// The announcer's unix stream socket calls (UnixSockets), bound with koffi:
// loadLibc's part for src/daemon's socket.
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { sameFile } from './caller-view';
import { ABI } from './abi/kernel-abi';
import { readUcred, ucred } from './abi/structs';
import type { CallChecks } from './libc-calls';
import { lazyFunc, listenCalls, type LibcLibrary } from './lazy-binding';
import { sockaddrUn, type UnixSockets } from './unix-socket';

const { AF_UNIX, MSG_DONTWAIT, MSG_NOSIGNAL, SHUT_RD, SO_PEERCRED, SOCK_CLOEXEC, SOCK_NONBLOCK, SOCK_STREAM } = ABI;
const { SOL_SOCKET } = ABI;
const BACKLOG = 128;

/** UnixSockets over `lib`; `close` is the bound close(2) the caller owns (its .async is koffi's). */
export function bindUnixSockets(
  lib: LibcLibrary,
  { check, unlessPending, closing }: CallChecks,
  close: (fd: number) => void,
): UnixSockets {
  const { socket, bind, listen, accept4 } = listenCalls(lib);
  const connect = lazyFunc(lib, 'int connect(int fd, const uint8_t *addr, uint32_t len)');
  const getsockopt = lazyFunc(
    lib,
    'int getsockopt(int fd, int level, int name, uint8_t *value, _Inout_ uint32_t *len)',
  );
  const send = lazyFunc(lib, 'long send(int fd, const uint8_t *buf, size_t len, int flags)');
  const recv = lazyFunc(lib, 'long recv(int fd, uint8_t *buf, size_t len, int flags)');
  const shutdown = lazyFunc(lib, 'int shutdown(int fd, int how)');
  const unixSocket = (): number =>
    check('socket(AF_UNIX)', socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  return {
    listen: (path) =>
      closing(unixSocket(), (fd) => {
        const address = sockaddrUn(path);
        check(`bind ${path}`, bind(fd, address, address.length));
        chmodSync(path, 0o600); // bind made it 0777 less the umask; only its owner may connect
        check(`listen ${path}`, listen(fd, BACKLOG));
      }),
    accept(fd) {
      const peer = unlessPending('accept', accept4(fd, null, null, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (peer === undefined) return undefined;
      const cred = ucred();
      closing(peer, () =>
        check('getsockopt(SO_PEERCRED)', getsockopt(peer, SOL_SOCKET, SO_PEERCRED, cred, [cred.length])),
      );
      return { fd: peer, ...readUcred(cred) };
    },
    connect: (path) =>
      closing(unixSocket(), (fd) => {
        const address = sockaddrUn(path);
        check(`connect ${path}`, connect(fd, address, address.length));
      }),
    send: (fd, bytes) => unlessPending('send', send(fd, bytes, bytes.length, MSG_NOSIGNAL | MSG_DONTWAIT)) ?? 0,
    receive: (fd, buf) => unlessPending('recv', recv(fd, buf, buf.length, MSG_DONTWAIT)),
    shutdownListener: (fd) => void check('shutdown(SHUT_RD)', shutdown(fd, SHUT_RD)),
    socketFile: (path) => {
      const st = lstatSync(path);
      return { dev: st.dev, ino: st.ino };
    },
    removeSocketFile: (path, file) => {
      let st;
      try {
        st = lstatSync(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw err;
      }
      if (!sameFile(st, file)) return false;
      unlinkSync(path);
      return true;
    },
    close: (fd) => close(fd),
  };
}
