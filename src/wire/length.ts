// Pure: length checks shared by the wire builders. No I/O.

/** Throws a RangeError unless `bytes` is exactly `length` bytes long; `what` names the value in the message. */
export function expectLength(bytes: Uint8Array, length: number, what: string): void {
  if (bytes.length !== length) {
    const hex = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 32)).toString('hex');
    throw new RangeError(`${what} must be ${length} bytes, got ${bytes.length} (${hex || 'empty'})`);
  }
}
