import { describe, expect, it } from 'vitest';
import { describeTrace, parseTrace } from '../../../scripts/bench/close-trace';

// An ADD that hands its packet socket to a holder child (vfork, dup2 onto fd 4,
// close_range, execve), then closes its own copy, in the shape strace -f -ttt -T prints.
const HOLDER_TRACE = [
  '100 10.000000 execve("/opt/cni/bin/announcer", ["/opt/cni/bin/announcer"], 0x7ffc /* 6 vars */) = 0 <0.000500>',
  '100 10.001000 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM, exit_signal=0} => {parent_tid=[101]}, 88) = 101 <0.000100>',
  '101 10.009000 socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC, htons(0 /* ETH_P_??? */)) = 9 <0.000040>',
  '100 10.011000 socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, NETLINK_ROUTE) = 10 <0.000020>',
  '100 10.020000 clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD, stack=0x7f, stack_size=0x9000}, 88 <unfinished ...>',
  '102 10.020050 dup2(6, 3)      = 3 <0.000013>',
  '102 10.020060 dup2(9, 4)      = 4 <0.000013>',
  '102 10.020070 close_range(5, 4294967295, 0) = 0 <0.000016>',
  '102 10.020100 execve("/opt/cni/bin/announcer", ["/opt/cni/bin/announcer", "hold-fds"], 0x7ffd /* 6 vars */ <unfinished ...>',
  '100 10.020500 <... clone3 resumed>) = 102 <0.000500>',
  '102 10.020600 <... execve resumed>) = 0 <0.000400>',
  '100 10.021000 close(10) = 0 <0.000010>',
  '100 10.021500 close(9 <unfinished ...>',
  '100 10.021530 <... close resumed>) = 0 <0.000030>',
  '101 10.022000 +++ exited with 0 +++',
  '100 10.023000 exit_group(0 <unfinished ...>',
  '100 10.023100 <... exit_group resumed>) = ?',
  '100 10.024000 +++ exited with 0 +++',
  '102 10.030000 exit_group(0)           = ?',
  '102 10.041000 +++ exited with 0 +++',
].join('\n');

describe('parseTrace', () => {
  it('follows threads into their process and the socket into the child that inherits it', () => {
    const [plugin, holder, ...rest] = parseTrace(HOLDER_TRACE);
    expect(rest).toEqual([]);
    expect(plugin).toMatchObject({ pid: 100, program: '/opt/cni/bin/announcer', opened: true, passed: false, heldAtExit: false, exitCode: 0 });
    expect(plugin!.closeMs.map((x) => x.toFixed(3))).toEqual(['0.030']);
    expect(plugin!.otherCloseMs.map((x) => x.toFixed(3))).toEqual(['0.010']);
    expect(plugin!.exitMs!.toFixed(3)).toBe('1.000');
    expect(holder).toMatchObject({ pid: 102, program: '/opt/cni/bin/announcer hold-fds', opened: false, inherited: true, heldAtExit: true, goneAt: 10.041 });
    expect(holder!.exitMs!.toFixed(3)).toBe('11.000');
  });

  it('drops close-on-exec copies at execve: a child without dup2 holds nothing', () => {
    const trace = [
      '1 1.000000 socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC, 0) = 5 <0.000040>',
      '1 1.001000 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = 2 <0.000300>',
      '2 1.002000 execve("/bin/sleep", ["sleep", "1"], 0x7ffd /* 1 var */) = 0 <0.000300>',
      '1 1.003000 close(5) = 0 <0.009000>',
      '1 1.004000 exit_group(0) = ?',
      '1 1.004500 +++ exited with 0 +++',
    ].join('\n');
    const [plugin, child] = parseTrace(trace);
    expect(plugin!.closeMs).toEqual([9]);
    expect(child).toMatchObject({ pid: 2, program: 'sleep 1', inherited: false });
    expect(child!.goneAt).toBeUndefined();
  });

  it('sees a copy passed over a unix socket, and a socket still held at exit', () => {
    const trace = [
      '7 1.000000 socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC, 0) = 5 <0.000040>',
      '7 1.001000 sendmsg(6, {msg_name=NULL, msg_namelen=0, msg_iov=[{iov_base="{}", iov_len=2}], msg_iovlen=1, msg_control=[{cmsg_len=20, cmsg_level=SOL_SOCKET, cmsg_type=SCM_RIGHTS, cmsg_data=[5]}], msg_controllen=24, msg_flags=0}, MSG_NOSIGNAL) = 2 <0.000050>',
      '7 1.002000 close(5) = -1 EBADF (Bad file descriptor) <0.000002>',
      '7 1.003000 exit_group(3) = ?',
      '7 1.013000 +++ exited with 3 +++',
    ].join('\n');
    const [plugin] = parseTrace(trace);
    expect(plugin).toMatchObject({ passed: true, heldAtExit: true, closeMs: [], exitCode: 3 });
    expect(plugin!.exitMs!.toFixed(1)).toBe('10.0');
  });
});

describe('describeTrace', () => {
  it('names what the plugin did with its socket and each child it started', () => {
    expect(describeTrace(parseTrace(HOLDER_TRACE))).toEqual([
      'the plugin (pid 100): closed its AF_PACKET socket in 0.03 ms (its other close(2) calls: median 0.01 ms); its exit took 1.00 ms',
      'child pid 102 (/opt/cni/bin/announcer hold-fds): holds a copy; exit took 11.00 ms, gone 17.00 ms after the plugin',
    ]);
  });
});
