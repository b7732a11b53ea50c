// The plugin the shim hands to dispatch for a stdin it cannot forward (not UTF-8, not a JSON
// object, no usable stateDir): dispatch reports what is wrong with the input, by the spec's code
// and the field's name, before it would call a command; should it get that far, nothing runs.
import { CniError, ErrorCode } from '../cni/errors';
import type { CniPlugin } from '../cni/dispatch';

const refuse = async (): Promise<never> => {
  throw new CniError(ErrorCode.InvalidConfig, '"stateDir" must be an absolute path: no announcer to run the command');
};

/** Runs no command: each answers code 7 about stateDir. */
export const refusingPlugin: CniPlugin = { add: refuse, del: refuse, check: refuse, status: refuse, gc: refuse };
