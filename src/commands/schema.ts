// `announcer schema`: the JSON Schema of the plugin's entry in a conflist, for editors and NAD
// tooling. zod's own toJSONSchema makes it from the schemas parseConfig checks with (OPTIONS):
// types, ranges, choices, patterns and defaults. What JSON Schema cannot express, its descriptions
// name (schema-docs.ts): the rules across fields (the burst cap, the configs onUnavailable skip is
// refused with) in the entry's own, and an interface name's rules, checked by a function, in that
// of interfaces. The plugin applies them all.
import { optional, toJSONSchema } from 'zod/mini';
import { optionFields } from '../cni/option-schema';
import { bool, obj, str } from '../cni/zod-checks';
import { ENTRY_DOC, OPTION_DOCS } from './schema-docs';
import { SCHEMA_VERB } from './schema-verb';

/**
 * The conflist entry: its `type`, the capabilities it may declare, and every option; unknown fields are tolerated, as
 * the plugin does.
 */
export function entrySchema() {
  const capabilities = obj({ mac: optional(bool()), 'io.kubernetes.cri.pod-annotations': optional(bool()) });
  return obj({ type: str(), capabilities: optional(capabilities), ...optionFields() });
}

/**
 * The entry's JSON Schema, draft-07: ajv's default draft, and the one editors (VS Code's JSON
 * service, yaml-language-server) support fully. Options with a default are optional and carry it.
 */
export function entryJsonSchema(): Record<string, unknown> {
  const schema = toJSONSchema(entrySchema(), { target: 'draft-07', io: 'input' }) as {
    $schema: string;
    properties: Record<string, object>;
  };
  const { $schema, ...rest } = schema;
  for (const [key, description] of Object.entries(OPTION_DOCS))
    schema.properties[key] = { description, ...schema.properties[key] };
  return { $schema, title: 'cni-announcer', description: ENTRY_DOC, ...rest };
}

/** Prints the schema on `out`; 2 when given arguments. */
export function schemaCommand(
  io: { out(text: string): void; err(text: string): void },
  args: readonly string[],
): number {
  if (args.length > 0) {
    io.err(`announcer ${SCHEMA_VERB}: takes no arguments`);
    return 2;
  }
  io.out(JSON.stringify(entryJsonSchema(), null, 2));
  return 0;
}
