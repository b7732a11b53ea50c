// The few libc calls Node lacks, bound with koffi. Syscalls live here and in
// the other files of src/sys only.
import koffi from 'koffi';
import { SysError } from './sys-error';

/** CLONE_NEWNET, the namespace type for setns(2). */
export const CLONE_NEWNET = 0x40000000;
const AF_PACKET = 17;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;

/** The libc functions the plugin needs; each throws SysError on failure. */
export interface Libc {
  /** setns(2): moves the calling thread into the namespace behind `fd`. */
  setns(fd: number, nstype: number): void;
  /** socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC, 0): a send-only packet socket in the current netns. */
  openPacketSocket(): number;
  /** sendto(2) with a raw sockaddr; returns the bytes sent. */
  sendto(fd: number, frame: Uint8Array, address: Uint8Array): number;
  /** close(2). */
  close(fd: number): void;
}

/** Loads libc through koffi and binds the calls of {@link Libc}. */
export function loadLibc(): Libc {
  const lib = koffi.load('libc.so.6');
  const setns = lib.func('int setns(int fd, int nstype)');
  const socket = lib.func('int socket(int domain, int type, int protocol)');
  const sendto = lib.func('long sendto(int fd, const uint8_t *buf, size_t len, int flags, const uint8_t *addr, uint32_t addrlen)');
  const close = lib.func('int close(int fd)');
  const check = (operation: string, rc: number | bigint): number => {
    const value = Number(rc);
    if (value < 0) throw new SysError(operation, koffi.errno());
    return value;
  };
  return {
    setns: (fd, nstype) => void check('setns', setns(fd, nstype)),
    openPacketSocket: () => check('socket(AF_PACKET)', socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0)),
    sendto: (fd, frame, address) => check('sendto', sendto(fd, frame, frame.length, 0, address, address.length)),
    close: (fd) => void check('close', close(fd)),
  };
}
