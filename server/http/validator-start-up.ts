// Work express-openapi-validator does at every start, and again on each operation's first request, that
// this contract does not need. Each part below was measured with a CPU profile of `npm start` to a healthy
// /health on PGlite (2-core machine; the start-up parts 2026-11-28 out of 3.3 s of CPU):
// - Its preprocessor looks up each `$ref` it meets by asking its own Ajv for the schema, which compiles the
//   referenced component's validator (and, through its references, most of the contract's) only to read
//   the schema object back (2.2 s of 11 s on a loaded machine, before the rest here). A local reference
//   (`#/…`) names the very object the lookup returns, so it is read from the document by its path; any
//   other is looked up as before.
// - It bundles the document with json-schema-ref-parser (0.20–0.25 s). Bundling gathers references to
//   other files into one document. Where every reference is local, as in this contract, bundling returns
//   the same object unchanged (validator-start-up.test.ts checks that on the contract).
// - For every `oneOf` with a `discriminator`, it compiles one Ajv validator per option (about 0.25 s). The
//   validator consults them only for a request body whose schema is that `oneOf`, to pick the option by the
//   discriminator's value. They are now compiled when first called, so a route that never uses them never
//   pays: most of this contract's discriminated unions are events and items in responses.
// - It compiles the OpenAPI meta-schema even when told not to validate the document against it (0.09 s).
//   It is now compiled when first used.
// - On each operation's first request it adds two schemas to Ajv (parameters, body), each holding the
//   whole prepared document so that `#/components/…` references resolve. Ajv walks all of an added schema
//   for `$id`s, keeping a map entry per node: 20–25 ms a schema, 40–55 ms per operation. Three quarters of
//   the prepared document's nodes are under `paths` (8,600 of 11,200: the preprocessor inlines schemas
//   there), which no reference names, so the schemas are added without them.
import { createRequire } from 'node:module';

type Validate = ((data: unknown) => boolean) & { errors?: unknown };
interface Ajv {
  compile(schema: object): Validate;
}
interface Preprocessor {
  apiDoc: Record<string, unknown>;
  resolvedSchemaCache: Map<string, unknown>;
  resolveSchema(schema: unknown): unknown;
  ajv: Ajv;
  processDiscriminator(...args: unknown[]): unknown;
}

const installed = Symbol.for('open-agent-api.validatorStartUp');
/** `require` as express-openapi-validator's own modules resolve it (its files, its Ajv). */
export const validatorRequire = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));

/** Calls `visit` on every object and array under `node`, each once, until `visit` answers false. */
function everyObject(node: unknown, visit: (object: object) => boolean): boolean {
  const pending: unknown[] = [node];
  const seen = new Set<object>();
  while (pending.length > 0) {
    const next = pending.pop();
    if (next === null || typeof next !== 'object' || seen.has(next)) continue;
    seen.add(next);
    if (!visit(next)) return false;
    pending.push(...Object.values(next));
  }
  return true;
}

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

/** Whether every `$ref` in `document` is local (`#/…`), so bundling has nothing to gather. */
export function onlyLocalRefs(document: unknown): boolean {
  return everyObject(document, (node) => {
    const ref = (node as { $ref?: unknown }).$ref;
    return ref === undefined || (typeof ref === 'string' && ref.startsWith('#/'));
  });
}

/** Whether nothing in `node` refers to the document's `paths` or to the document itself, or by `$id` or a dynamic reference. */
function namesNoPaths(node: unknown): boolean {
  return everyObject(node, (object) => {
    const { $ref, $id, $anchor, $dynamicRef, $dynamicAnchor, $recursiveRef } = object as Record<string, unknown>;
    if ($id !== undefined || $anchor !== undefined || $dynamicRef !== undefined || $dynamicAnchor !== undefined || $recursiveRef !== undefined) return false;
    return $ref === undefined || (typeof $ref === 'string' && $ref.startsWith('#/') && $ref !== '#/paths' && !$ref.startsWith('#/paths/'));
  });
}

const componentsNamingNoPaths = new WeakSet<object>();

/**
 * `schema` without its `paths` where nothing else in it refers there: Ajv resolves references against the
 * schema and ignores keywords it does not know, so it validates the same without them. The components are
 * checked once (the validator passes the same object for every operation); the rest every time.
 */
export function withoutUnnamedPaths(schema: unknown): unknown {
  if (schema === null || typeof schema !== 'object' || !('paths' in schema)) return schema;
  const { paths: _paths, components, ...rest } = schema as Record<string, unknown>;
  if (components !== undefined) {
    if (components === null || typeof components !== 'object') return schema;
    if (!componentsNamingNoPaths.has(components)) {
      if (!namesNoPaths(components)) return schema;
      componentsNamingNoPaths.add(components);
    }
  }
  if (!namesNoPaths(rest)) return schema;
  return components === undefined ? rest : { components, ...rest };
}

/** A validator that compiles `schema` with `ajv` on its first call, and keeps Ajv's `errors` as its own. */
export function compiledOnFirstUse(ajv: Ajv, schema: object): Validate {
  let compiled: Validate | undefined;
  const validate: Validate = (data) => {
    compiled ??= ajv.compile(schema);
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  };
  validate.errors = null;
  return validate;
}

/** Installs the deferrals above into express-openapi-validator, all together and once. */
export function deferValidatorStartUpWork(): void {
  const framework = validatorRequire('./framework/index.js') as {
    OpenAPIFramework: { prototype: { [installed]?: true; loadSpec(spec: unknown, refParser?: unknown): Promise<unknown> } };
  };
  const prototype = framework.OpenAPIFramework.prototype;
  if (prototype[installed]) return;

  const loadSpec = prototype.loadSpec;
  prototype.loadSpec = function loadLocalSpec(spec, refParser) {
    if (spec !== null && typeof spec === 'object' && onlyLocalRefs(spec)) return Promise.resolve(spec);
    return loadSpec.call(this, spec, refParser);
  };

  const { SchemaPreprocessor } = validatorRequire('./middlewares/parsers/schema.preprocessor.js') as { SchemaPreprocessor: { prototype: Preprocessor } };
  const resolveSchema = SchemaPreprocessor.prototype.resolveSchema;
  SchemaPreprocessor.prototype.resolveSchema = function resolveLocalSchema(schema) {
    const ref = schema && typeof schema === 'object' ? (schema as { $ref?: unknown }).$ref : undefined;
    if (typeof ref !== 'string' || !ref.startsWith('#/')) return resolveSchema.call(this, schema);
    if (this.resolvedSchemaCache.has(ref)) return this.resolvedSchemaCache.get(ref);
    const found = atPointer(this.apiDoc, ref);
    if (found === undefined) return resolveSchema.call(this, schema);
    this.resolvedSchemaCache.set(ref, found);
    return found;
  };

  const processDiscriminator = SchemaPreprocessor.prototype.processDiscriminator;
  SchemaPreprocessor.prototype.processDiscriminator = function processDiscriminatorLazily(...args) {
    const ajv = this.ajv;
    const compile = ajv.compile;
    ajv.compile = (schema) => compiledOnFirstUse({ compile: (s) => compile.call(ajv, s) }, schema);
    try {
      return processDiscriminator.apply(this, args);
    } finally {
      delete (ajv as Partial<Ajv>).compile;
      if (ajv.compile !== compile) ajv.compile = compile;
    }
  };

  const specValidator = validatorRequire('./framework/openapi.schema.validator.js') as {
    OpenAPISchemaValidator: new (options: object) => { validate(document: unknown): { errors: unknown[] } };
  };
  const Eager = specValidator.OpenAPISchemaValidator;
  specValidator.OpenAPISchemaValidator = class OpenAPISchemaValidatorOnUse {
    #options: object;
    #eager?: InstanceType<typeof Eager>;
    constructor(options: object) {
      this.#options = options;
    }
    validate(document: unknown) {
      this.#eager ??= new Eager(this.#options);
      return this.#eager.validate(document);
    }
  };

  // The request and response validators call it through the module's exports, so they take this one.
  const util = validatorRequire('./middlewares/util.js') as { useAjvCache(ajv: unknown, schema: unknown, key: string): unknown };
  const useAjvCache = util.useAjvCache;
  util.useAjvCache = (ajv, schema, key) => useAjvCache(ajv, withoutUnnamedPaths(schema), key);

  prototype[installed] = true;
}
