/** The verb of `announcer schema` (src/commands/schema.ts, which loads zod: imported only when it runs). */
export const SCHEMA_VERB = 'schema';
/** Its usage line. */
export const SCHEMA_USAGE = `usage: announcer ${SCHEMA_VERB}`;
