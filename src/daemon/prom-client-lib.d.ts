// prom-client's own modules, imported one by one: its index also loads the
// Pushgateway (node:http, node:https, node:zlib) and the cluster aggregator
// (node:cluster), which the announcer never uses. The types are the index's.
declare module 'prom-client/lib/registry' {
  export { Registry as default } from 'prom-client';
}
declare module 'prom-client/lib/counter' {
  export { Counter as default } from 'prom-client';
}
declare module 'prom-client/lib/histogram' {
  export { Histogram as default } from 'prom-client';
}
