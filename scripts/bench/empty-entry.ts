// Nothing: `make bench` compiles this with the plugin's own runtime and build
// options (scripts/build.mjs --entry) to measure what a start costs before any
// of the plugin's code runs.
export {};
