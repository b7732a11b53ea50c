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
