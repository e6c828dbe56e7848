// The validator's preprocessor, reading local references from the document instead of compiling them,
// prepares the contract exactly as it did before; references it cannot read are looked up as before.
import { createRequire } from 'node:module';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { readFileSync } from 'node:fs';
import { contractFile, loadContract } from './contract.ts';
import { atPointer, resolveValidatorRefsWithoutCompiling } from './validator-refs.ts';

const require = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
const { OpenApiValidator } = require('./openapi.validator.js') as { OpenApiValidator: new (options: object) => { ajvOpts: { preprocessor: object } } };
const { SchemaPreprocessor } = require('./middlewares/parsers/schema.preprocessor.js') as {
  SchemaPreprocessor: new (apiDoc: object, ajvOptions: object, responses: unknown) => { preProcess(): { apiDoc: object; apiDocRes: object | null } };
};

describe('the validator preprocessing the contract', () => {
  it('prepares the same document when local references are read rather than compiled', () => {
    const validator = new OpenApiValidator({ apiSpec: {}, validateRequests: { allowUnknownQueryParameters: false }, validateResponses: { allErrors: true }, validateSecurity: false, validateFormats: true, ignoreUndocumented: true });
    const document = loadContract().document;
    const prepare = () => new SchemaPreprocessor(structuredClone(document), validator.ajvOpts.preprocessor, { allErrors: true }).preProcess();
    const compiled = prepare();
    resolveValidatorRefsWithoutCompiling();
    resolveValidatorRefsWithoutCompiling();
    const read = prepare();
    expect(isDeepStrictEqual(read, compiled)).toBe(true);
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
});
