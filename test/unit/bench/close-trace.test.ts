import { describe, expect, it } from 'vitest';
import { describeTrace, parseTrace } from '../../../scripts/bench/close-trace';

// An ADD that hands its packet socket to a holder child, in the shape strace -f -ttt -T prints.
const HOLDER_TRACE = [
  '100 10.000000 execve("/opt/cni/bin/announcer", ["/opt/cni/bin/announcer"], 0x7ffc /* 6 vars */) = 0 <0.000500>',
  '100 10.001000 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM, exit_signal=0} => {parent_tid=[101]}, 88) = 101 <0.000100>',
  '100 10.010000 socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC, htons(0 /* ETH_P_??? */)) = 18 <0.000040>',
  '100 10.011000 socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_ROUTE) = 19 <0.000020>',
  '100 10.020000 clone3({flags=CLONE_VM|CLONE_VFORK|CLONE_CLEAR_SIGHAND, exit_signal=SIGCHLD, stack=0x7f, stack_size=0x9000}, 88 <unfinished ...>',
  '102 10.020100 execve("/opt/cni/bin/announcer", ["/opt/cni/bin/announcer", "hold-fds"], 0x7ffd /* 6 vars */ <unfinished ...>',
  '100 10.020500 <... clone3 resumed>) = 102 <0.000500>',
  '102 10.020600 <... execve resumed>) = 0 <0.000400>',
  '100 10.021000 close(19) = 0 <0.000010>',
  '101 10.021500 close(18 <unfinished ...>',
  '101 10.021530 <... close resumed>) = 0 <0.000030>',
  '101 10.022000 +++ exited with 0 +++',
  '100 10.023000 exit_group(0)           = ?',
  '100 10.024000 +++ exited with 0 +++',
  '102 10.030000 exit_group(0)           = ?',
  '102 10.041000 +++ exited with 0 +++',
].join('\n');

describe('parseTrace', () => {
  it('follows threads into their process, the packet socket to its close, and each exit', () => {
    const [plugin, holder, ...rest] = parseTrace(HOLDER_TRACE);
    expect(rest).toEqual([]);
    expect(plugin!.pid).toBe(100);
    expect(plugin!.program).toBe('/opt/cni/bin/announcer');
    expect(plugin!.packetCloseMs.map((x) => x.toFixed(3))).toEqual(['0.030']);
    expect(plugin!.exitMs!.toFixed(3)).toBe('1.000');
    expect(holder!.pid).toBe(102);
    expect(holder!.program).toBe('/opt/cni/bin/announcer hold-fds');
    expect(holder!.exitMs!.toFixed(3)).toBe('11.000');
    expect(holder!.goneAt).toBe(10.041);
  });

  it('counts a close in place as the plugin paying for it', () => {
    const trace = [
      '7 1.000000 socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC, 0) = 5 <0.000040>',
      '7 1.001000 close(5)        = 0 <0.009000>',
      '7 1.002000 close(5)        = -1 EBADF (Bad file descriptor) <0.000002>',
      '7 1.003000 exit_group(0) = ?',
      '7 1.004500 +++ exited with 0 +++',
    ].join('\n');
    const [plugin] = parseTrace(trace);
    expect(plugin!.packetCloseMs).toEqual([9]);
    expect(plugin!.exitMs!.toFixed(1)).toBe('1.5');
  });
});

describe('describeTrace', () => {
  it('names the plugin close, its exit, and the children that outlived it', () => {
    expect(describeTrace(parseTrace(HOLDER_TRACE))).toEqual([
      'the plugin (pid 100) closed its AF_PACKET socket(s) in 0.03 ms; its exit took 1.00 ms',
      'child pid 102 (/opt/cni/bin/announcer hold-fds): exit took 11.00 ms, gone 17.00 ms after the plugin',
    ]);
  });
});
