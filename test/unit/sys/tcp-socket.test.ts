// --listen's address text, sockaddr_in/in6 against hand-checked bytes, and the
// TCP calls for real on loopback: the kernel's port for port 0, a connection
// accepted without blocking, EADDRINUSE named, IPv6.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadLibc } from '../../../src/sys/libc';
import { parseListenAddress, sockaddrIn, sockaddrPort } from '../../../src/sys/tcp-socket';

describe('parseListenAddress', () => {
  it('takes IPv4, [IPv6], localhost and an empty host (every IPv4 address), with a port up to 65535', () => {
    expect(parseListenAddress('10.1.2.3:9808')).toEqual({ family: 4, bytes: Buffer.from([10, 1, 2, 3]), port: 9808 });
    const got = parseListenAddress('[::1]:0');
    expect(got).toEqual({ family: 6, bytes: Buffer.from('00000000000000000000000000000001', 'hex'), port: 0 });
    const seen = parseListenAddress('localhost:65535');
    expect(seen).toEqual({ family: 4, bytes: Buffer.from([127, 0, 0, 1]), port: 65535 });
    expect(parseListenAddress(':80')).toEqual({ family: 4, bytes: Buffer.from([0, 0, 0, 0]), port: 80 });
  });

  it('refuses a host name, a bad address or port', () => {
    expect(() => parseListenAddress('node1:9808')).toThrow('invalid IPv4 address "node1"');
    expect(() => parseListenAddress('[fe80::1%eth0]:1')).toThrow('zone ids are not supported');
    expect(() => parseListenAddress('1.2.3.4:65536')).toThrow('invalid port in "1.2.3.4:65536"');
    expect(() => parseListenAddress('1.2.3.4')).toThrow('invalid port');
    expect(() => parseListenAddress('1.2.3.4:x')).toThrow('invalid port');
  });
});

describe('sockaddrIn', () => {
  it('builds sockaddr_in: family 2 (host order), port in network order, the address', () => {
    const bytes = sockaddrIn(parseListenAddress('127.0.0.1:9808'));
    expect(bytes.toString('hex')).toBe('0200' + '2650' + '7f000001' + '0000000000000000');
    expect(sockaddrPort(bytes)).toBe(9808);
  });

  it('builds sockaddr_in6: family 10, port, flowinfo 0, the address, scope 0', () => {
    const bytes = sockaddrIn(parseListenAddress('[fd00::5]:443'));
    expect(bytes.toString('hex')).toBe('0a00' + '01bb' + '00000000' + 'fd000000000000000000000000000005' + '00000000');
    expect(sockaddrPort(bytes)).toBe(443);
  });
});

describe('TCP calls (real sockets on loopback)', () => {
  const libc = loadLibc();
  const fds: number[] = [];
  const cleanup: (Socket | Server)[] = [];
  afterEach(() => {
    for (const fd of fds.splice(0)) libc.close(fd);
    for (const s of cleanup.splice(0)) 'destroy' in s ? s.destroy() : s.close();
  });

  it('listens on the port the kernel picks, accepts without blocking, and moves bytes both ways', async () => {
    const { fd, port } = libc.listenTcp(parseListenAddress('127.0.0.1:0'), 8);
    fds.push(fd);
    expect(port).toBeGreaterThan(0);
    expect(libc.acceptTcp(fd)).toBeUndefined(); // nothing pending: no wait
    const client = createConnection({ host: '127.0.0.1', port });
    cleanup.push(client);
    await new Promise<void>((resolve) => client.once('connect', () => resolve()));
    const got = new Promise<string>((resolve) => client.once('data', (d) => resolve(d.toString())));
    client.write('ping');
    let peer: number | undefined;
    while ((peer = libc.acceptTcp(fd)) === undefined) libc.pollIn([fd], 1000);
    fds.push(peer);
    libc.pollIn([peer], 1000);
    const buf = Buffer.alloc(16);
    expect(buf.subarray(0, libc.recvNow(peer, buf)).toString()).toBe('ping');
    expect(libc.send(peer, Buffer.from('pong'))).toBe(4);
    expect(await got).toBe('pong');
  });

  it('names the address in use (EADDRINUSE)', async () => {
    const server = createServer();
    cleanup.push(server);
    const port = await new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
    );
    expect(() => libc.listenTcp(parseListenAddress(`127.0.0.1:${port}`), 8)).toThrow(
      expect.objectContaining({ code: 'EADDRINUSE', message: expect.stringContaining(`bind 127.0.0.1:${port}`) }),
    );
  });

  it('listens on IPv6 too, and answers there', async () => {
    const { fd, port } = libc.listenTcp(parseListenAddress('[::1]:0'), 8);
    fds.push(fd);
    const client = createConnection({ host: '::1', port });
    cleanup.push(client);
    await new Promise<void>((resolve) => client.once('connect', () => resolve()));
    libc.pollIn([fd], 1000);
    const peer = libc.acceptTcp(fd);
    expect(peer).toBeGreaterThan(0);
    fds.push(peer!);
  });
});
