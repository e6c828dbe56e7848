// Tool parameters as form fields, and the tool editor's reading of typed schemas.
import { describe, expect, it } from 'vitest';
import { credentialFromFragment, tokenOf } from '../sign-in-links.ts';
import { display, fieldsOf, missingRequired, parseArguments, parseParameters, resultText } from './schema.ts';

describe('tool parameters as form fields', () => {
  const parameters = {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'The city' },
      units: { type: 'string', enum: ['metric', 'imperial'] },
      days: { type: 'integer', title: 'Days ahead' },
      detailed: { type: 'boolean' },
      when: { type: 'string', format: 'date' },
      coordinates: { type: 'object', properties: { lat: { type: 'number' } } },
      note: { type: ['string', 'null'] },
    },
    required: ['city', 'days'],
  };

  it('makes one field per property, in order, typed by the schema', () => {
    expect(fieldsOf(parameters).map((field) => [field.name, field.label, field.type, field.required, field.inputType])).toEqual([
      ['city', 'city', 'string', true, 'text'],
      ['units', 'units', 'enum', false, 'text'],
      ['days', 'Days ahead', 'integer', true, 'text'],
      ['detailed', 'detailed', 'boolean', false, 'text'],
      ['when', 'when', 'string', false, 'date'],
      ['coordinates', 'coordinates', 'json', false, 'text'],
      ['note', 'note', 'string', false, 'text'],
    ]);
    expect(fieldsOf(parameters)[0]!.description).toBe('The city');
    expect(fieldsOf(parameters)[1]!.options).toEqual(['metric', 'imperial']);
  });

  it('gets no fields from something that is not an object schema', () => {
    expect(fieldsOf(undefined)).toEqual([]);
    expect(fieldsOf({ type: 'object' })).toEqual([]);
    expect(fieldsOf([1, 2])).toEqual([]);
  });

  it("reads a call's arguments and names what a required field lacks", () => {
    const { values, error } = parseArguments('{"city": "Paris", "coordinates": {"lat": 48.8}}');
    expect(error).toBeNull();
    expect(display(values.coordinates, 'json')).toBe('{\n  "lat": 48.8\n}');
    expect(display(values.city, 'string')).toBe('Paris');
    expect(missingRequired(fieldsOf(parameters), values)).toEqual(['days']);
    expect(parseArguments('').values).toEqual({});
    expect(parseArguments('[1]').error).toMatch(/not a JSON object/);
    expect(parseArguments('{city').error).toMatch(/not valid JSON/);
  });

  it('checks a schema typed into the tool editor', () => {
    expect(parseParameters('')).toEqual({ schema: undefined, error: null });
    expect(parseParameters(JSON.stringify(parameters)).schema).toEqual(parameters);
    expect(parseParameters('{"type": "object",}').error).toMatch(/^Not valid JSON/);
    expect(parseParameters('[]').error).toMatch(/must be a JSON object/);
    expect(parseParameters('{"type": "string"}').error).toMatch(/"type": "object"/);
    expect(parseParameters('{"properties": []}').error).toMatch(/"properties" must be an object/);
  });

  it('sends JSON results on one line and text as typed', () => {
    expect(resultText(' {\n  "temperature_c": 18\n} ')).toBe('{"temperature_c":18}');
    expect(resultText(' sunny, 18 degrees ')).toBe('sunny, 18 degrees');
  });
});

describe('sign-in links', () => {
  it('takes the token from a pasted link, or the token itself', () => {
    expect(tokenOf(' http://localhost:3000/v1/auth/magic-link/verify?token=mlt_abc ')).toBe('mlt_abc');
    expect(tokenOf('mlt_abc')).toBe('mlt_abc');
  });

  it('reads the access token a redirect puts in the fragment, with its expiry', () => {
    expect(credentialFromFragment('#access_token=eyJ.x.y&token_type=Bearer&expires_in=60', Date.parse('2026-01-01T00:00:00Z'))).toEqual({
      token: 'eyJ.x.y',
      kind: 'session',
      expiresAt: '2026-01-01T00:01:00.000Z',
    });
    expect(credentialFromFragment('#/agents')).toBeNull();
  });
});
