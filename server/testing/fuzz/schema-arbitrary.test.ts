// The fuzzer's generators are only as good as their values: these check that what comes from a schema
// matches it (judged by Ajv, the validator the server uses too), that every keyword the contract uses is
// honoured and exercised, and that mutants break the schema.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadContract } from '../../http/contract.ts';
import { fuzzOperations } from './cases.ts';
import { arbitraryOf, invalidArbitrary, mutationsOf, schemaChecker, type Schema } from './schema-arbitrary.ts';

const SEED = 20261120;

const document = {
  components: {
    schemas: {
      Name: { type: 'string', minLength: 1, maxLength: 8 },
      Pet: {
        type: 'object',
        additionalProperties: false,
        required: ['kind', 'name'],
        properties: {
          kind: { type: 'string', enum: ['cat', 'dog'] },
          name: { $ref: '#/components/schemas/Name' },
          age: { type: ['integer', 'null'], minimum: 0, maximum: 30 },
          tags: { type: 'array', items: { type: 'string', pattern: '^[a-z]{2,4}$' }, maxItems: 3, uniqueItems: true },
          born: { type: 'string', format: 'date-time' },
          owner: { type: 'string', format: 'email' },
          site: { type: 'string', format: 'uri' },
        },
      },
      Labels: { type: 'object', maxProperties: 2, propertyNames: { maxLength: 3 }, additionalProperties: { type: 'string', maxLength: 4 } },
      Shape: {
        oneOf: [
          { type: 'object', required: ['type', 'radius'], additionalProperties: false, properties: { type: { const: 'circle' }, radius: { type: 'number', minimum: 0 } } },
          { type: 'object', required: ['type', 'side'], additionalProperties: false, properties: { type: { const: 'square' }, side: { type: 'integer', minimum: 1 } } },
        ],
      },
      Patch: { type: 'object', additionalProperties: false, minProperties: 1, properties: { a: { type: 'boolean' }, b: { type: 'boolean' } } },
    },
  },
};
const check = schemaChecker(document);
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const sample = (schema: Schema, numRuns = 200) => fc.sample(arbitraryOf(schema, { document }), { seed: SEED, numRuns });

describe('arbitraryOf', () => {
  it('generates only values its schema accepts, keyword by keyword', () => {
    for (const name of Object.keys(document.components.schemas)) {
      const validate = check(ref(name));
      const rejected = sample(ref(name)).filter((value) => !validate(value));
      expect(rejected, name).toEqual([]);
    }
  });

  it('exercises every branch, type and optional property, not one corner of the schema', () => {
    const pets = sample(ref('Pet')) as Record<string, unknown>[];
    expect(new Set(pets.map((pet) => pet.kind))).toEqual(new Set(['cat', 'dog']));
    expect(pets.some((pet) => pet.age === null)).toBe(true);
    expect(pets.some((pet) => typeof pet.age === 'number')).toBe(true);
    expect(pets.some((pet) => !('tags' in pet))).toBe(true);
    expect(pets.some((pet) => Array.isArray(pet.tags) && pet.tags.length === 3)).toBe(true);
    expect(pets.every((pet) => Object.keys(pet).every((key) => ['kind', 'name', 'age', 'tags', 'born', 'owner', 'site'].includes(key)))).toBe(true);
    const shapes = sample(ref('Shape')) as { type: string }[];
    expect(new Set(shapes.map((shape) => shape.type))).toEqual(new Set(['circle', 'square']));
    const labels = sample(ref('Labels')) as Record<string, string>[];
    expect(labels.some((value) => Object.keys(value).length === 2)).toBe(true);
    // Strings reach beyond printable ASCII: control characters and astral code points.
    const names = (sample({ type: 'string', maxLength: 20 }, 300) as string[]).join('');
    expect([...names].some((char) => char.charCodeAt(0) < 0x20)).toBe(true);
    expect(names).toMatch(/[\u{10000}-\u{10ffff}]/u);
  });

  it('uses the hints for properties they name', () => {
    const pets = fc.sample(arbitraryOf(ref('Pet'), { document, hints: { name: fc.constant('Rex') } }), { seed: SEED, numRuns: 100 }) as { name: string }[];
    expect(pets.filter((pet) => pet.name === 'Rex').length).toBeGreaterThan(50);
    expect(pets.some((pet) => pet.name !== 'Rex')).toBe(true);
  });
});

describe('mutationsOf and invalidArbitrary', () => {
  it('break each rule of the schema in a way the schema rejects', () => {
    const pet = { kind: 'cat', name: 'Tom', age: 3, tags: ['ab', 'cd', 'ef'], born: '2020-01-01T00:00:00Z' };
    const mutants = mutationsOf(ref('Pet'), pet, document, check);
    const validate = check(ref('Pet'));
    const described = mutants.map((mutant) => mutant.mutation);
    expect(described).toEqual(
      expect.arrayContaining([
        'required "name" missing at /',
        'an unknown property at /',
        'a value outside the enum at /kind',
        'a string one past maxLength 8 at /name',
        'above maximum 30 at /age',
        'a fraction for an integer at /age',
        'an array one past maxItems 3 at /tags',
        'a duplicate item at /tags',
        'a string off the pattern at /tags/0',
        'not a date-time at /born',
        'string instead of integer|null at /age',
      ]),
    );
    // Each mutation breaks the schema, except those the schema happens to allow.
    expect(mutants.filter((mutant) => validate(mutant.value)).map((mutant) => mutant.mutation)).toEqual([]);
    expect(validate(pet)).toBe(true);
  });

  it('follows the oneOf branch a value is in', () => {
    const described = mutationsOf(ref('Shape'), { type: 'square', side: 2 }, document, check).map((mutant) => mutant.mutation);
    expect(described).toContain('below minimum 1 at /side');
    expect(described).toContain('required "side" missing at /');
    expect(described).not.toContain('below minimum 0 at /radius');
  });

  it('generates only invalid values, each saying what was broken', () => {
    for (const name of ['Pet', 'Shape', 'Patch', 'Labels']) {
      const validate = check(ref(name));
      for (const mutant of fc.sample(invalidArbitrary(ref(name), { document }, check), { seed: SEED, numRuns: 100 })) {
        expect(validate(mutant.value), `${name}: ${mutant.mutation}`).toBe(false);
        expect(mutant.mutation).toMatch(/ at \//);
      }
    }
  });
});

describe('the contract', () => {
  const contract = loadContract().document;
  const contractCheck = schemaChecker(contract);
  const schemas = Object.keys((contract.components as { schemas: Record<string, unknown> }).schemas);

  // Every schema of the contract, 40 samples each: seconds alone, more beside other suites on a busy machine.
  it('yields valid values for every schema most of the time, so generation never stalls', { timeout: 120_000 }, () => {
    const poor: string[] = [];
    for (const name of schemas) {
      const schema: Schema = { $ref: `#/components/schemas/${name}` };
      const values = fc.sample(arbitraryOf(schema, { document: contract }), { seed: SEED, numRuns: 40 });
      const valid = values.filter((value) => contractCheck(schema)(value)).length;
      if (valid < values.length * 0.8) poor.push(`${name}: ${valid}/${values.length}`);
    }
    expect(poor).toEqual([]);
  });

  it('has mutants off the schema for every request body', () => {
    const bodies = fuzzOperations(contract).flatMap((op) => (op.body?.json ? [[op.operationId, op.body.json] as const] : []));
    expect(bodies.length).toBeGreaterThan(20);
    for (const [operationId, schema] of bodies) {
      const mutants = fc.sample(invalidArbitrary(schema, { document: contract }, contractCheck), { seed: SEED, numRuns: 10 });
      expect(mutants.every((mutant) => !contractCheck(schema)(mutant.value)), operationId).toBe(true);
    }
  });
});
