// Work express-openapi-validator does at every start that this contract does not need then. Measured with
// a CPU profile of `npm start` to a healthy /health on PGlite (3.3 s of CPU on the 2-core machine,
// 2026-11-28), three parts of it, about 0.55 s together:
// - It bundles the document with json-schema-ref-parser (0.20–0.25 s). Bundling gathers references to
//   other files into one document. Where every reference is local (`#/…`), as in this contract, bundling
//   returns the same object unchanged (validator-start-up.test.ts checks that on the contract).
// - For every `oneOf` with a `discriminator`, it compiles one Ajv validator per option (about 0.25 s). The
//   validator consults them only for a request body whose schema is that `oneOf`, to pick the option by the
//   discriminator's value. They are now compiled when first called, so a route that never uses them never
//   pays: most of this contract's discriminated unions are events and items in responses.
// - It compiles the OpenAPI meta-schema even when told not to validate the document against it (0.09 s).
//   It is now compiled when first used.
import { createRequire } from 'node:module';

type Validate = ((data: unknown) => boolean) & { errors?: unknown };
interface Ajv {
  compile(schema: object): Validate;
}

const installed = Symbol.for('open-agent-api.validatorStartUp');
const require = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));

/** Whether every `$ref` in `document` is local (`#/…`), so bundling has nothing to gather. */
export function onlyLocalRefs(document: unknown): boolean {
  const pending: unknown[] = [document];
  const seen = new Set<object>();
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== 'object' || seen.has(node)) continue;
    seen.add(node);
    const ref = (node as { $ref?: unknown }).$ref;
    if (ref !== undefined && (typeof ref !== 'string' || !ref.startsWith('#/'))) return false;
    pending.push(...Object.values(node));
  }
  return true;
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

/** Installs the three deferrals above into express-openapi-validator. Idempotent. */
export function deferValidatorStartUpWork(): void {
  const framework = require('./framework/index.js') as {
    OpenAPIFramework: { prototype: { [installed]?: true; loadSpec(spec: unknown, refParser?: unknown): Promise<unknown> } };
  };
  const prototype = framework.OpenAPIFramework.prototype;
  if (prototype[installed]) return;

  const loadSpec = prototype.loadSpec;
  prototype.loadSpec = function loadLocalSpec(spec, refParser) {
    if (spec !== null && typeof spec === 'object' && onlyLocalRefs(spec)) return Promise.resolve(spec);
    return loadSpec.call(this, spec, refParser);
  };

  const { SchemaPreprocessor } = require('./middlewares/parsers/schema.preprocessor.js') as {
    SchemaPreprocessor: { prototype: { ajv: Ajv; processDiscriminator(...args: unknown[]): unknown } };
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

  const specValidator = require('./framework/openapi.schema.validator.js') as {
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
  prototype[installed] = true;
}
