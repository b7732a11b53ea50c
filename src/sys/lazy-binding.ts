// loadLibc's binding of libc functions through koffi: on first use, not at load.
import type { LibraryHandle } from 'koffi';

/** Where loadLibc binds functions: koffi's handle on libc.so.6 (tests pass one that lacks some). */
export type LibcLibrary = Pick<LibraryHandle, 'func'>;
/** A bound libc function. */
type LibcFunction = ReturnType<LibcLibrary['func']>;

/** `definition`, bound on its first call: a run binds only the calls it makes (each binding parses a prototype). */
export function lazyFunc(lib: LibcLibrary, definition: string): (...args: unknown[]) => ReturnType<LibcFunction> {
  let fn: LibcFunction | undefined;
  return (...args) => (fn ??= lib.func(definition))(...args);
}

/**
 * socket, bind, listen and accept4, each bound on its first call: what a listening socket needs (the unix one and the
 * TCP one).
 */
export function listenCalls(
  lib: LibcLibrary,
): Record<'socket' | 'bind' | 'listen' | 'accept4', (...args: unknown[]) => ReturnType<LibcFunction>> {
  return {
    socket: lazyFunc(lib, 'int socket(int domain, int type, int protocol)'),
    bind: lazyFunc(lib, 'int bind(int fd, const uint8_t *addr, uint32_t addrlen)'),
    listen: lazyFunc(lib, 'int listen(int fd, int backlog)'),
    accept4: lazyFunc(lib, 'int accept4(int fd, void *addr, void *len, int flags)'),
  };
}
