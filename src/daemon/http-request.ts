// Pure: the little HTTP/1.x the announcer's endpoint speaks. One request per
// connection: its head is read whole (bounded), the answer carries
// `Connection: close`, and the connection ends once it is out.
/** The most bytes a request head may take (request line and headers). */
export const MAX_HEAD_BYTES = 8 * 1024;

/** An answer: status, Content-Type and body. */
export interface HttpAnswer {
  status: number;
  contentType: string;
  body: string;
}

const REASONS: Readonly<Record<number, string>> = {
  200: 'OK',
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** A plain-text answer. */
export function textAnswer(status: number, body: string): HttpAnswer {
  return { status, contentType: 'text/plain; charset=utf-8', body };
}

/** Where the request head ends in `bytes` (the index past its blank line), or -1 while it is still coming. */
export function headEnd(bytes: Buffer): number {
  const at = bytes.indexOf('\r\n\r\n');
  if (at >= 0) return at + 4;
  const bare = bytes.indexOf('\n\n'); // a client that ends lines with LF alone (RFC 9112 §2.2 lets a server take it)
  return bare >= 0 ? bare + 2 : -1;
}

/** The method and path (query string left out) of a request head, or the answer to a malformed one. */
export function parseHead(head: Buffer): { method: string; path: string } | HttpAnswer {
  const line = head.toString('latin1').split(/\r?\n/, 1)[0]!;
  const match = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/.exec(line);
  if (!match) return textAnswer(400, 'bad request\n');
  return { method: match[1]!, path: match[2]!.split('?', 1)[0]! };
}

/** The bytes of `answer` as an HTTP/1.1 response that closes the connection (`headOnly`: for HEAD, no body). */
export function responseBytes(answer: HttpAnswer, headOnly = false): Buffer {
  const body = Buffer.from(answer.body, 'utf8');
  const head = [
    `HTTP/1.1 ${answer.status} ${REASONS[answer.status] ?? 'Unknown'}`,
    `Content-Type: ${answer.contentType}`,
    `Content-Length: ${body.length}`,
    ...(answer.status === 405 ? ['Allow: GET, HEAD'] : []),
    'Connection: close',
    '',
    '',
  ].join('\r\n');
  return headOnly ? Buffer.from(head, 'latin1') : Buffer.concat([Buffer.from(head, 'latin1'), body]);
}
