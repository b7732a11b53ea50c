// The node's IPv4 routes, read with `ip -j route`, to tell whether a subnet is
// already in use before a script puts an address of it on a bridge.
import { runOk } from './exec';

interface IpRoute {
  type?: string;
  dst: string;
  dev?: string;
  table?: string;
}

async function routes(selector: 'root' | 'match', cidr: string): Promise<IpRoute[]> {
  const { stdout } = await runOk('ip', ['-j', '-4', 'route', 'show', 'table', 'all', selector, cidr]);
  return stdout.trim() === '' ? [] : (JSON.parse(stdout) as IpRoute[]);
}

/**
 * The node's routes, in every table, that cover `cidr` or lie inside it (an
 * address of the subnet on some interface counts: its local route does), the
 * default route aside; each as `[type] dst dev DEV [table T]`.
 */
export async function routesOverlapping(cidr: string): Promise<string[]> {
  const found = [...(await routes('match', cidr)), ...(await routes('root', cidr))].filter((r) => r.dst !== 'default');
  const text = (r: IpRoute): string =>
    [r.type, r.dst, r.dev && `dev ${r.dev}`, r.table && `table ${r.table}`]
      .filter((part) => part !== undefined && part !== '')
      .join(' ');
  return [...new Set(found.map(text))];
}
