// The integration-test harness: real plugins, real namespaces, real captures.
export * from './announcer-files';
export * from './bridge';
export * from './capture';
export * from './cni';
export * from './exec';
export * from './hooks';
export * from './links';
export * from './names';
export * from './neigh';
export * from './netns';
export * from './pcap';
export * from './privileges';
export * from './processes';
export * from './scope';
export * from './sysctl';
export * from './tshark';
export * from './wait';
