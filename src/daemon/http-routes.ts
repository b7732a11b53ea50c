// Pure: what the announcer's HTTP endpoint answers. /metrics: the registry's
// text; /healthz: `ok` while the loop turns and listens on its socket (it is
// the loop that answers), 503 while it hands over or stops.
import { textAnswer, type HttpAnswer } from './http-request';

/** What the answers are made of. */
export interface EndpointState {
  /** Whether the announcer serves: listening on its socket, not handing over nor stopping. */
  healthy(): boolean;
  metrics: { readonly contentType: string; text(): Promise<string> };
}

/** The answer to `method` `path`. */
export async function route(method: string, path: string, state: EndpointState): Promise<HttpAnswer> {
  if (path !== '/metrics' && path !== '/healthz') return textAnswer(404, 'not found\n');
  if (method !== 'GET' && method !== 'HEAD') return textAnswer(405, 'method not allowed\n');
  if (path === '/healthz') return state.healthy() ? textAnswer(200, 'ok\n') : textAnswer(503, 'unavailable\n');
  return { status: 200, contentType: state.metrics.contentType, body: await state.metrics.text() };
}
