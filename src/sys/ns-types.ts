// The names of namespace types, for messages about a file that is not the namespace it should be.
import { ABI } from './abi/kernel-abi';

/** Each namespace type: its CLONE_NEW* number and its name in messages. */
const NS_TYPES: readonly { type: number; name: string }[] = [
  { type: ABI.CLONE_NEWTIME, name: 'time' },
  { type: ABI.CLONE_NEWNS, name: 'mount' },
  { type: ABI.CLONE_NEWCGROUP, name: 'cgroup' },
  { type: ABI.CLONE_NEWUTS, name: 'uts' },
  { type: ABI.CLONE_NEWIPC, name: 'ipc' },
  { type: ABI.CLONE_NEWUSER, name: 'user' },
  { type: ABI.CLONE_NEWPID, name: 'pid' },
  { type: ABI.CLONE_NEWNET, name: 'network' },
];

/** The name of namespace type `type` (a CLONE_NEW* number), e.g. `mount`, or its number in hex. */
export function nsTypeName(type: number): string {
  return NS_TYPES.find((t) => t.type === type)?.name ?? `0x${type.toString(16)}`;
}
