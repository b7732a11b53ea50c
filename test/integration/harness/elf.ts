// What the build tests read from a built binary: the few ELF header fields
// (file type, machine, program interpreter) and the names of the files Bun
// embedded in it.

/** e_machine of x86-64. */
export const EM_X86_64 = 62;
/** e_machine of AArch64. */
export const EM_AARCH64 = 183;

/** What elfHeader reads. */
export interface ElfHeader {
  type: 'executable' | 'shared object' | `e_type ${number}`;
  machine: number;
  /** PT_INTERP's path, when there is one. */
  interpreter?: string;
}

/** Reads the header of a 64-bit little-endian ELF file; throws on anything else. */
export function elfHeader(file: Buffer): ElfHeader {
  if (file.length < 64 || file.readUInt32BE(0) !== 0x7f454c46) throw new Error('not an ELF file');
  if (file[4] !== 2 || file[5] !== 1) throw new Error('not a 64-bit little-endian ELF file');
  const eType = file.readUInt16LE(16);
  const header: ElfHeader = {
    type: eType === 2 ? 'executable' : eType === 3 ? 'shared object' : `e_type ${eType}`,
    machine: file.readUInt16LE(18),
  };
  const phoff = Number(file.readBigUInt64LE(32));
  const phentsize = file.readUInt16LE(54);
  const phnum = file.readUInt16LE(56);
  for (let i = 0; i < phnum; i++) {
    const ph = phoff + i * phentsize;
    if (file.readUInt32LE(ph) !== 3) continue; // PT_INTERP
    const offset = Number(file.readBigUInt64LE(ph + 8));
    const size = Number(file.readBigUInt64LE(ph + 32));
    header.interpreter = file
      .subarray(offset, offset + size)
      .toString('latin1')
      .replace(/\0+$/, '');
  }
  return header;
}

/** The distinct /$bunfs/root/NAME paths in a Bun-compiled binary's text: the files embedded in it. */
export function bunfsNames(text: string): string[] {
  const names = new Set<string>();
  for (let at = text.indexOf('/$bunfs/root/'); at >= 0; at = text.indexOf('/$bunfs/root/', at + 1)) {
    names.add(/^\/\$bunfs\/root\/[\w.@+-]*/.exec(text.slice(at, at + 256))![0]);
  }
  return [...names].sort();
}
