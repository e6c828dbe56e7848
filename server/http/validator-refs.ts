// express-openapi-validator's schema preprocessor looks up each `$ref` it meets by asking its own Ajv for
// the schema, which compiles the referenced component's validator (and, through its references, most of
// the contract's) only to read the schema object back and throw the compiled code away: on this contract
// that is a quarter of start-up (2.2 s of 11 s on a loaded 2-core machine, bench/startup.ts). A local
// reference (`#/…`) names the very object the lookup returns, so it is read from the document by its
// path; any other reference is looked up as before. The validators that check requests are compiled
// later, per operation, as before.
import { createRequire } from 'node:module';

interface Preprocessor {
  apiDoc: Record<string, unknown>;
  resolvedSchemaCache: Map<string, unknown>;
  resolveSchema(schema: unknown): unknown;
}

const installed = Symbol.for('open-agent-api.uncompiledRefs');

/** The object a local JSON pointer (`#/components/schemas/Agent`) names in `document`, if any. */
export function atPointer(document: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node = document;
  for (const raw of ref.slice(2).split('/')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return node;
}

/** Makes the validator's preprocessor read local references from the document. Idempotent. */
export function resolveValidatorRefsWithoutCompiling(): void {
  const require = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
  const { SchemaPreprocessor } = require('./middlewares/parsers/schema.preprocessor.js') as { SchemaPreprocessor: { prototype: Preprocessor & { [installed]?: true } } };
  const prototype = SchemaPreprocessor.prototype;
  if (prototype[installed]) return;
  const original = prototype.resolveSchema;
  prototype.resolveSchema = function resolveSchema(this: Preprocessor, schema: unknown): unknown {
    const ref = schema && typeof schema === 'object' ? (schema as { $ref?: unknown }).$ref : undefined;
    if (typeof ref !== 'string' || !ref.startsWith('#/')) return original.call(this, schema);
    if (this.resolvedSchemaCache.has(ref)) return this.resolvedSchemaCache.get(ref);
    const found = atPointer(this.apiDoc, ref);
    if (found === undefined) return original.call(this, schema);
    this.resolvedSchemaCache.set(ref, found);
    return found;
  };
  prototype[installed] = true;
}
