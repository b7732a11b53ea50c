// One long timer and nothing else: `make bench` compiles this as the plugin is compiled, and takes what it costs per
// second, asleep, as the floor of the announcer's idle CPU.
setTimeout(() => {}, 2 ** 31 - 1);
