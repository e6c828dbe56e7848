// The validator's start-up work, deferred (validator-start-up.ts), prepares the contract as before: local
// references read rather than compiled are the same objects, bundling would not have changed it, the
// discriminators' validators answer as the eager ones did, a document that breaks the OpenAPI schema is
// still refused where the server checks it, and the request validators Ajv builds without the document's
// paths answer as those built with them.
import { isDeepStrictEqual } from 'node:util';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';
import { validatorFor } from '../app.ts';
import { loadConfig } from '../config.ts';
import { contractFile, loadContract } from './contract.ts';
import { jsonBodyParser } from './operations.ts';
import { atPointer, compiledOnFirstUse, deferValidatorStartUpWork, onlyLocalRefs, validatorRequire as require, withoutUnnamedPaths } from './validator-start-up.ts';

const { OpenApiValidator } = require('./openapi.validator.js') as { OpenApiValidator: new (options: object) => { ajvOpts: { preprocessor: object; request: object } } };
type Validate = ((data: unknown) => boolean) & { errors?: unknown };
interface Discriminator {
  property: string;
  options: { option: string }[];
  validators: Record<string, Validate>;
}
const { SchemaPreprocessor } = require('./middlewares/parsers/schema.preprocessor.js') as {
  SchemaPreprocessor: new (apiDoc: object, ajvOptions: object, responses: unknown) => { ajv: { compile: (schema: object) => Validate }; preProcess(): { apiDoc: object; apiDocRes: object | null } };
};
const { OpenAPIFramework } = require('./framework/index.js') as { OpenAPIFramework: new (args: object) => { initialize(visitor: object): Promise<{ apiDoc: object }> } };
const $RefParser = require('@apidevtools/json-schema-ref-parser') as { bundle(document: object): Promise<object> };

/** Prepares the contract as the server's validator does, counting the Ajv compiles it makes. */
function prepare() {
  const validator = new OpenApiValidator({ apiSpec: {}, validateRequests: { allowUnknownQueryParameters: false }, validateResponses: { allErrors: true }, validateSecurity: false, validateFormats: true, ignoreUndocumented: true });
  const preprocessor = new SchemaPreprocessor(structuredClone(loadContract().document), validator.ajvOpts.preprocessor, { allErrors: true });
  const counter = { compiles: 0 };
  const compile = preprocessor.ajv.compile.bind(preprocessor.ajv);
  preprocessor.ajv.compile = (schema) => {
    counter.compiles++;
    return compile(schema);
  };
  const prepared = preprocessor.preProcess();
  return { prepared, counter, discriminators: discriminatorsIn(prepared.apiDoc) };
}

/** The `_discriminator`s the preprocessor hung on schemas (not enumerable), in document order. */
function discriminatorsIn(document: object): Discriminator[] {
  const found: Discriminator[] = [];
  const seen = new Set<object>();
  const visit = (node: unknown) => {
    if (node === null || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    const discriminator = Object.getOwnPropertyDescriptor(node, '_discriminator')?.value as Discriminator | undefined;
    if (discriminator) found.push(discriminator);
    for (const child of Object.values(node)) visit(child);
  };
  visit(document);
  return found;
}

describe("the validator's start-up work, deferred", () => {
  it('prepares the contract as before, and the discriminators validate as the eager ones did, compiled on first use', () => {
    const eager = prepare();
    deferValidatorStartUpWork();
    deferValidatorStartUpWork();
    const deferred = prepare();

    expect(isDeepStrictEqual(deferred.prepared, eager.prepared)).toBe(true);
    expect(eager.discriminators.length).toBeGreaterThan(0);
    expect(deferred.discriminators.map((d) => [d.property, Object.keys(d.validators)])).toEqual(eager.discriminators.map((d) => [d.property, Object.keys(d.validators)]));
    // The discriminators' validators were compiled while preparing, and now are not.
    expect(deferred.counter.compiles).toBeLessThan(eager.counter.compiles);

    let checked = 0;
    for (const [i, discriminator] of eager.discriminators.entries()) {
      for (const option of Object.keys(discriminator.validators)) {
        for (const data of [{}, { [discriminator.property]: option }, { [discriminator.property]: option, unexpected: [1] }, 'not an object']) {
          const before = deferred.counter.compiles;
          const lazy = deferred.discriminators[i]!.validators[option]!;
          expect(lazy(data)).toBe(discriminator.validators[option]!(data));
          expect(lazy.errors).toEqual(discriminator.validators[option]!.errors);
          // At most one compile, on the first call.
          expect(deferred.counter.compiles - before).toBeLessThanOrEqual(1);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('compiles a deferred validator once, on its first call, and keeps its errors', () => {
    let compiles = 0;
    const validate = compiledOnFirstUse(
      {
        compile: () => {
          compiles++;
          const check: Validate = (data) => {
            check.errors = data === 1 ? null : [{ message: 'must be 1' }];
            return data === 1;
          };
          return check;
        },
      },
      {},
    );
    expect(compiles).toBe(0);
    expect(validate(2)).toBe(false);
    expect(validate.errors).toEqual([{ message: 'must be 1' }]);
    expect(validate(1)).toBe(true);
    expect(validate.errors).toBeNull();
    expect(compiles).toBe(1);
  });

  it('skips bundling only a document whose references are all local, which bundling would not change', async () => {
    const document = loadContract().document;
    expect(onlyLocalRefs(document)).toBe(true);
    const copy = structuredClone(document);
    expect(isDeepStrictEqual(await $RefParser.bundle(copy), document)).toBe(true);
    expect(onlyLocalRefs({ a: { b: [{ $ref: '#/components/schemas/X' }, { $ref: 'other.yaml#/X' }] } })).toBe(false);
    expect(onlyLocalRefs({ a: { $ref: 7 } })).toBe(false);
  });

  it('still refuses a document that breaks the OpenAPI schema when asked to check it, and takes the contract', async () => {
    deferValidatorStartUpWork();
    const broken = { openapi: '3.1.0', info: { title: 'x' }, paths: { '/x': { get: { responses: 'none' } } } };
    const quiet = console.error;
    console.error = () => {};
    try {
      await expect(new OpenAPIFramework({ apiDoc: broken, validateApiSpec: true }).initialize({})).rejects.toThrow(/apiDoc was invalid/);
    } finally {
      console.error = quiet;
    }
    await expect(new OpenAPIFramework({ apiDoc: broken, validateApiSpec: false }).initialize({})).resolves.toMatchObject({ apiDoc: broken });
    await expect(new OpenAPIFramework({ apiDoc: structuredClone(loadContract().document), validateApiSpec: true }).initialize({})).resolves.toBeDefined();
  });

  it('validates requests without changing the contract the rest of the server reads', async () => {
    const config = loadConfig({ NODE_ENV: 'production' });
    const app = express();
    app.post('/v1/chat/completions', jsonBodyParser(config.bodyLimitBytes), ...validatorFor(loadContract(), config), (_req, res) => {
      res.json({ ok: true });
    });
    app.use((error: { status?: number }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(error.status ?? 500).json({ refused: true });
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
      const post = (body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect((await post({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(200);
      expect((await post({ model: 'm', messages: [{ role: 'nobody', content: 'hi' }] })).status).toBe(400);
    } finally {
      server.close();
    }
    expect(loadContract().document).toEqual(parse(readFileSync(contractFile, 'utf8')));
  });
  it('reads JSON pointers, escapes included, and nothing outside the document', () => {
    const document = { components: { schemas: { 'a/b': { type: 'string' }, 'c~d': { type: 'number' } } } };
    expect(atPointer(document, '#/components/schemas/a~1b')).toEqual({ type: 'string' });
    expect(atPointer(document, '#/components/schemas/c~0d')).toEqual({ type: 'number' });
    expect(atPointer(document, '#/components/schemas/missing')).toBeUndefined();
    expect(atPointer(document, 'other.yaml#/x')).toBeUndefined();
  });

  it('reads the contract from generated/contract.json as the YAML says it', () => {
    expect(loadContract().document).toEqual(parse(readFileSync(contractFile, 'utf8')));
  });

  it('leaves out the paths only where nothing else in the schema names them', () => {
    const components = { schemas: { A: { type: 'object', properties: { b: { $ref: '#/components/schemas/B' } } }, B: { type: 'string' } } };
    const paths = { '/a': { post: { requestBody: { content: { 'application/json': { schema: { $id: 'inline' } } } } } } };
    const schema = { paths, components, required: ['body'], properties: { body: { $ref: '#/components/schemas/A' } } };
    expect(withoutUnnamedPaths(schema)).toEqual({ components, required: ['body'], properties: { body: { $ref: '#/components/schemas/A' } } });
    expect(withoutUnnamedPaths(schema)).not.toHaveProperty('paths');
    const kept = [
      { paths, components, properties: { body: { $ref: '#/paths/~1a/post' } } },
      { paths, components, properties: { body: { $ref: '#/paths' } } },
      { paths, components: { schemas: { A: { $ref: '#/paths/~1a' } } }, properties: {} },
      { paths, components, properties: { body: { $ref: '#' } } },
      { paths, components, properties: { body: { $ref: 'other.json#/x' } } },
      { paths, components, properties: { body: { $id: 'https://example.com/x' } } },
      { paths, components, properties: { body: { $dynamicRef: '#node' } } },
      { paths, components: 'not an object', properties: {} },
    ];
    for (const schema of kept) expect(withoutUnnamedPaths(schema)).toBe(schema);
    const noPaths = { components, properties: {} };
    expect(withoutUnnamedPaths(noPaths)).toBe(noPaths);
  });

  it("validates each operation's body as it did with the paths, and the validator adds its schemas without them", async () => {
    const { createRequestAjv } = require('./framework/ajv/index.js') as { createRequestAjv(apiDoc: object, options: object): { compile(schema: object): Validate } };
    const options = new OpenApiValidator({ apiSpec: {}, validateRequests: { allowUnknownQueryParameters: false, allErrors: true }, validateSecurity: false, validateFormats: true }).ajvOpts.request;
    deferValidatorStartUpWork();
    const { apiDoc } = prepare().prepared as { apiDoc: { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: object }> } }>>; components: object } };
    const withPaths = createRequestAjv(apiDoc, options);
    const without = createRequestAjv(apiDoc, options);
    const samples = [{}, [], 'text', 1, null, { model: 'local', messages: [], input: 'hi', name: 'a', stream: 'yes', unexpected: true }];
    let compared = 0;
    for (const [path, item] of Object.entries(apiDoc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const body = operation.requestBody?.content['application/json']?.schema;
        if (!body) continue;
        const schema = { paths: apiDoc.paths, components: apiDoc.components, required: ['body'], properties: { query: {}, headers: {}, params: {}, cookies: {}, body } };
        const lean = withoutUnnamedPaths(schema);
        expect(lean, `${method} ${path}`).not.toHaveProperty('paths');
        const full = withPaths.compile(schema);
        const leaner = without.compile(lean as object);
        for (const sample of samples) {
          const data = { query: {}, headers: {}, params: {}, cookies: {}, body: structuredClone(sample) };
          expect(leaner(structuredClone(data)), `${method} ${path}`).toBe(full(structuredClone(data)));
          expect(leaner.errors, `${method} ${path}`).toEqual(full.errors);
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(200);

    const util = require('./middlewares/util.js') as { useAjvCache(ajv: object, schema: object, key: string): unknown };
    const added: object[] = [];
    util.useAjvCache({ getSchema: () => undefined, addSchema: (schema: object) => added.push(schema) }, { paths: apiDoc.paths, components: apiDoc.components, properties: {} }, 'key');
    expect(added).toEqual([{ components: apiDoc.components, properties: {} }]);
  });
});
