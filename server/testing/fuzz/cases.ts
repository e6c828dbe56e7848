// What the fuzzer sends: for every operation of the contract, requests generated from its schemas, valid
// ones and ones broken in a known way, each with what the answer must be.
import fc from 'fast-check';
import { arbitraryOf, deref, invalidArbitrary, resolveRef, schemaChecker, validArbitrary, type Schema } from './schema-arbitrary.ts';

type Json = Record<string, unknown>;

export interface ParamSpec {
  name: string;
  required: boolean;
  schema: Schema;
}

export interface FuzzOperation {
  operationId: string;
  method: string;
  /** As the contract writes it, e.g. `/v1/agents/{agentId}`. */
  path: string;
  secured: boolean;
  pathParams: ParamSpec[];
  queryParams: ParamSpec[];
  headerParams: ParamSpec[];
  body?: { required: boolean; json?: Schema; multipart?: Schema; example?: unknown };
  /** Whether a 2xx may be a stream (then `Accept` picks the representation). */
  streams: boolean;
  /** Whether the operation declares 503: a feature this deployment lacks (billing, pgvector). */
  mayBeUnavailable: boolean;
  /** Other methods the path answers, so the ones it does not can be tried. */
  pathMethods: string[];
  /** The body of its errors, for an operation with its own error shape (`x-error-format`); the envelope otherwise. */
  errorSchema?: Schema;
}

/** Reads the operations out of the contract. */
export function fuzzOperations(document: Json): FuzzOperation[] {
  const paths = document.paths as Record<string, Json>;
  const methods = ['get', 'put', 'post', 'delete', 'patch'];
  const resolve = <T>(value: unknown): T => (value && typeof value === 'object' && '$ref' in value ? (resolveRef(document, String((value as Json).$ref)) as T) : (value as T));
  const operations: FuzzOperation[] = [];
  for (const [path, item] of Object.entries(paths)) {
    const pathMethods = methods.filter((method) => item[method]);
    for (const method of pathMethods) {
      const op = item[method] as Json;
      const parameters = [...((item.parameters as unknown[]) ?? []), ...((op.parameters as unknown[]) ?? [])].map((p) => resolve<Json>(p));
      const specs = (where: string): ParamSpec[] =>
        parameters
          .filter((p) => p.in === where)
          .map((p) => ({ name: String(p.name), required: p.required === true, schema: p.schema as Schema }));
      const requestBody = op.requestBody ? resolve<Json>(op.requestBody) : undefined;
      const content = (requestBody?.content ?? {}) as Record<string, Json>;
      const responses = op.responses as Record<string, unknown>;
      const streams = Object.entries(responses).some(
        ([status, response]) => status.startsWith('2') && 'text/event-stream' in ((resolve<Json>(response).content ?? {}) as Json),
      );
      operations.push({
        operationId: String(op.operationId),
        method: method.toUpperCase(),
        path,
        secured: ((op.security as unknown[] | undefined) ?? (document.security as unknown[])).length > 0,
        pathParams: specs('path'),
        queryParams: specs('query'),
        headerParams: specs('header'),
        ...(requestBody
          ? {
              body: {
                required: requestBody.required === true,
                ...(content['application/json'] ? { json: content['application/json'].schema as Schema } : {}),
                ...(content['multipart/form-data'] ? { multipart: content['multipart/form-data'].schema as Schema } : {}),
                example: exampleOf(document, content['application/json']),
              },
            }
          : {}),
        streams,
        mayBeUnavailable: '503' in responses,
        pathMethods: pathMethods.map((m) => m.toUpperCase()),
        ...(typeof op['x-error-format'] === 'string' && responses.default
          ? { errorSchema: ((resolve<Json>(responses.default).content as Record<string, Json>)['application/json']!.schema as Schema) }
          : {}),
      });
    }
  }
  return operations;
}

function exampleOf(document: Json, media: Json | undefined): unknown {
  if (!media) return undefined;
  if ('example' in media) return media.example;
  const first = Object.values((media.examples ?? {}) as Record<string, Json>)[0];
  if (!first) return undefined;
  return '$ref' in first ? resolveRef(document, String(first.$ref)).value : first.value;
}

/** How an answer is judged. */
export type Expectation =
  /** Anything but a 5xx; a 4xx must be the envelope. */
  | { kind: 'no-5xx' }
  /** A 4xx with the envelope. */
  | { kind: '4xx' }
  /** Exactly this status, with the envelope. */
  | { kind: 'status'; status: number };

export type BodySpec =
  | { type: 'json'; value: unknown }
  /** Bytes sent as they are, with the content type given (or none). */
  | { type: 'raw'; text: string; contentType: string | null }
  | { type: 'multipart'; fields: Record<string, string>; file?: { name: string; type: string; content: string } };

/** A value for a path parameter: as given, encoded by the runner, or a real resource the runner makes or has. */
export type ParamValue = { literal: string } | { raw: string } | { fixture: 'existing' | 'fresh' };

export interface FuzzCase {
  operationId: string;
  kind: string;
  /** What was broken, for the report. */
  description: string;
  method: string;
  params: Record<string, ParamValue>;
  query: [string, string][];
  /** Query text sent as it is after the encoded `query`, for percent-encodings no string encodes to. */
  rawQuery?: string;
  headers: Record<string, string>;
  credential: 'valid' | 'none' | 'garbage';
  garbage?: { header: string; value: string };
  body?: BodySpec;
  expect: Expectation;
}

export interface CaseContext {
  document: Json;
  /** Values to prefer for body properties of these names (real ids, catalog models). */
  hints: Readonly<Record<string, fc.Arbitrary<unknown>>>;
  /** The largest JSON body each operation takes, in bytes. */
  jsonLimit(operationId: string): number;
  /** The largest uploaded file, in bytes. */
  fileLimit: number;
}

export interface CaseFamily {
  kind: string;
  /** Whether the kind's requests are valid: they then count as valid cases. */
  valid: boolean;
  arbitrary: fc.Arbitrary<FuzzCase>;
}

/** The string a query parameter value of `schema` travels as. */
function queryText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Query values arrive as strings; the validator coerces them to the schema's type before checking. */
function coerce(text: string, schema: Schema): unknown {
  const type = schema.type;
  if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (type === 'boolean' && (text === 'true' || text === 'false')) return text === 'true';
  return text;
}

const ACCEPTS = ['application/json', 'text/event-stream', '*/*', 'text/event-stream, application/json', 'image/png'];
const STRINGY = fc.oneof(fc.string({ maxLength: 40, unit: 'binary' }), fc.string({ maxLength: 300 }));
// What HTTP lets a header value hold (RFC 9110 field-value: tab, visible ASCII, space and obs-text);
// the client refuses to send anything else.
const HEADER_SAFE = /^[\t\x20-\x7e\x80-\xff]*$/;
const HEADER_TEXT = fc.string({ maxLength: 300, unit: fc.constantFrom(0x09, ...Array.from({ length: 0x5f }, (_, i) => 0x20 + i), ...Array.from({ length: 0x80 }, (_, i) => 0x80 + i)).map((c) => String.fromCharCode(c)) });

/**
 * Texts a parameter of `schema` must refuse: targeted ones (past a bound, off the enum, not a number)
 * and, where a pattern or format makes most texts wrong, random ones. Undefined when nothing is off
 * the schema, as for an unconstrained string.
 */
function offSchemaText(schema: Schema, validate: (value: unknown) => boolean, random: fc.Arbitrary<string>): fc.Arbitrary<string> | undefined {
  const candidates = [
    '',
    ' ',
    'abc',
    '1.5',
    '-1',
    '0',
    '1e3',
    'x'.repeat(((schema.maxLength as number | undefined) ?? 4096) + 1),
    ...(typeof schema.maximum === 'number' ? [String(schema.maximum + 1)] : []),
    ...(typeof schema.minimum === 'number' ? [String(schema.minimum - 1)] : []),
    ...(Array.isArray(schema.enum) ? [`not-${String(schema.enum[0])}`] : []),
  ].filter((text) => !validate(coerce(text, schema)));
  const targeted = candidates.length > 0 ? fc.constantFrom(...candidates) : undefined;
  const strange = schema.pattern !== undefined || schema.format !== undefined ? random.filter((text) => !validate(coerce(text, schema))) : undefined;
  if (targeted && strange) return fc.oneof(targeted, strange);
  return targeted ?? strange;
}

const MALFORMED_JSON = ['{', '}', '{"a":}', "{'a': 1}", '{"a": 1,}', '{"a" 1}', '[1, 2', 'nul', 'NaN', '{"a": undefined}', '{"a": 1}{"b": 2}', '"unterminated', '{"a": "\\x"}', '\u0000'];
const WRONG_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'application/octet-stream', 'application/json; charset=utf-16', 'application/json; charset=latin1', 'text/json'];
const BAD_CREDENTIALS: [string, string][] = [
  ['Authorization', 'Bearer oaa_notarealkey000000000000000000'],
  ['Authorization', 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl'],
  ['Authorization', 'Basic dXNlcjpwYXNz'],
  ['Authorization', 'Bearer'],
  ['Authorization', 'Bearer two words'],
  ['X-API-Key', 'oaa_notarealkey000000000000000000'],
  ['X-API-Key', ' '],
];
/** Path parameters naming a resource: the runner has one of each, and makes fresh ones to delete. */
const FIXTURE_PARAMS = ['agentId', 'teamId', 'sessionId', 'runId', 'documentId', 'keyId'];
const ID_PREFIXES = ['agt', 'team', 'ses', 'run', 'doc', 'key', 'usr', 'zz'];

/** All the ways the fuzzer exercises `op`. */
export function caseFamilies(op: FuzzOperation, context: CaseContext): CaseFamily[] {
  const { document } = context;
  const check = schemaChecker(document);
  const schemaContext = { document, hints: context.hints };
  const families: CaseFamily[] = [];
  const base = { operationId: op.operationId, method: op.method, credential: 'valid' as const };
  const paramArbitrary = (p: ParamSpec): fc.Arbitrary<ParamValue> => {
    const hint = context.hints[p.name];
    if (hint) return hint.map((value) => ({ literal: String(value) }));
    if (FIXTURE_PARAMS.includes(p.name)) {
      return fc.constant({ fixture: op.method === 'DELETE' ? ('fresh' as const) : ('existing' as const) });
    }
    return validArbitrary(p.schema, schemaContext, check(p.schema)).map((value) => ({ literal: queryText(value) }));
  };
  const validParams = (): fc.Arbitrary<Record<string, ParamValue>> => fc.record(Object.fromEntries(op.pathParams.map((p) => [p.name, paramArbitrary(p)])));
  const validQuery = (): fc.Arbitrary<[string, string][]> =>
    fc
      .tuple(
        ...op.queryParams.map((p) =>
          p.required
            ? validArbitrary(p.schema, schemaContext, check(p.schema)).map((value) => [p.name, queryText(value)] as [string, string])
            : fc.option(validArbitrary(p.schema, schemaContext, check(p.schema)).map((value) => [p.name, queryText(value)] as [string, string]), { nil: undefined }),
        ),
      )
      .map((pairs) => pairs.filter((pair): pair is [string, string] => pair !== undefined));
  const validHeaders = (): fc.Arbitrary<Record<string, string>> =>
    fc
      .tuple(
        fc.option(fc.constantFrom(...(op.streams ? ACCEPTS : ['application/json', '*/*'])), { nil: undefined }),
        ...op.headerParams.map((p) => {
          const value = validArbitrary(p.schema, schemaContext, check(p.schema))
            .map(String)
            .filter((text) => HEADER_SAFE.test(text) && text.trim() === text)
            .map((text) => [p.name, text] as const);
          return p.required ? value : fc.option(value, { nil: undefined });
        }),
      )
      .map(([accept, ...pairs]) => ({
        ...(accept ? { Accept: accept } : {}),
        ...Object.fromEntries(pairs.filter((pair) => pair !== undefined) as [string, string][]),
      }));
  const validBody = (): fc.Arbitrary<BodySpec | undefined> => {
    const body = op.body;
    if (!body) return fc.constant(undefined);
    const choices: fc.Arbitrary<BodySpec | undefined>[] = [];
    if (body.json) choices.push(validArbitrary(body.json, schemaContext, check(body.json)).map((value) => ({ type: 'json' as const, value })));
    if (body.multipart) choices.push(multipartArbitrary(body.multipart, schemaContext, check));
    if (!body.required) choices.push(fc.constant(undefined));
    return fc.oneof(...choices);
  };
  /** A valid request, to break in one place; `body` replaces the generated body. */
  const request = (body: fc.Arbitrary<BodySpec | undefined> = validBody()) => fc.record({ params: validParams(), query: validQuery(), headers: validHeaders(), body });
  type Draft = Omit<FuzzCase, 'operationId' | 'method' | 'kind' | 'credential'> & Partial<Pick<FuzzCase, 'method' | 'credential'>>;
  // A case that expects one status sends no Idempotency-Key: one an earlier case used would answer 422,
  // or that case's answer.
  const withoutKey = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'Idempotency-Key'));
  const family = (kind: string, valid: boolean, arbitrary: fc.Arbitrary<Draft>) =>
    families.push({
      kind,
      valid,
      arbitrary: arbitrary.map((c) => ({ ...base, kind, ...c, ...(c.expect.kind === 'status' ? { headers: withoutKey(c.headers) } : {}) }) as FuzzCase),
    });
  const strip = <T extends { body: BodySpec | undefined }>(c: T) => {
    const { body, ...rest } = c;
    return body === undefined ? rest : { ...rest, body };
  };

  // Valid requests: whatever the server makes of them, never a 5xx.
  family('valid', true, request().map((r) => ({ ...strip(r), description: 'a valid request', expect: { kind: 'no-5xx' } })));

  if (op.secured) {
    family('no-credential', false, request().map((r) => ({ ...strip(r), credential: 'none' as const, description: 'no credential', expect: { kind: 'status', status: 401 } })));
    family(
      'bad-credential',
      false,
      fc.tuple(request(), fc.constantFrom(...BAD_CREDENTIALS)).map(([r, [header, value]]) => ({
        ...strip(r),
        credential: 'garbage' as const,
        garbage: { header, value },
        description: `${header}: ${value}`,
        expect: { kind: 'status', status: 401 },
      })),
    );
  }

  const otherMethods = ['GET', 'POST', 'PATCH', 'DELETE', 'PUT'].filter((m) => !op.pathMethods.includes(m));
  if (op.method === op.pathMethods[0] && otherMethods.length > 0) {
    family(
      'method-not-allowed',
      false,
      fc.tuple(request(), fc.constantFrom(...otherMethods)).map(([r, method]) => ({ ...strip(r), method, description: `${method} on ${op.path}`, expect: { kind: 'status', status: 405 } })),
    );
  }

  for (const p of op.pathParams) {
    const validate = check(p.schema);
    // Percent-encodings that do not decode, and texts off the schema (but not `.` or `..`, which the
    // client would resolve away, nor empty, which names another path).
    const undecodable = fc.constantFrom<ParamValue>({ raw: '%' }, { raw: '%zz' }, { raw: '%E0%A4%A' }, { raw: 'a%00b' }, { raw: '%C0%AF' });
    const offSchema = offSchemaText(deref(p.schema, document), validate, STRINGY)?.filter((text) => text !== '' && text !== '.' && text !== '..');
    const malformed = offSchema ? fc.oneof(offSchema.map((text): ParamValue => ({ literal: text })), undecodable) : undecodable;
    family(
      `path-${p.name}-malformed`,
      false,
      fc.tuple(request(), malformed).map(([r, value]) => ({ ...strip(r), params: { ...r.params, [p.name]: value }, description: `${p.name} = ${JSON.stringify(value)}`, expect: { kind: '4xx' } })),
    );
    if (deref(p.schema, document).pattern === '^[a-z]{2,5}_[0-9A-Za-z]{10,40}$') {
      // Well-formed ids that are nobody's: 404, whatever the body.
      const unknownId = fc
        .tuple(fc.constantFrom(...ID_PREFIXES), fc.stringMatching(/^[0-9A-Za-z]{10,40}$/))
        .map(([prefix, tail]): ParamValue => ({ literal: `${prefix}_${tail}` }));
      const exampleBody = op.body?.example !== undefined ? fc.constant<BodySpec>({ type: 'json', value: op.body.example }) : undefined;
      family(
        `path-${p.name}-unknown`,
        false,
        fc
          .tuple(request(exampleBody), unknownId)
          .map(([r, value]) => ({ ...strip(r), params: { ...r.params, [p.name]: value }, description: `${p.name} = ${JSON.stringify(value)} (nobody's)`, expect: { kind: 'status', status: 404 } })),
      );
    }
  }

  const constrained = op.queryParams.filter((p) => offSchemaText(deref(p.schema, document), check(p.schema), STRINGY) !== undefined);
  if (constrained.length > 0) {
    const badValue = fc.oneof(
      ...constrained.flatMap((p) => {
        const texts = offSchemaText(deref(p.schema, document), check(p.schema), STRINGY);
        return texts ? [texts.map((text) => [p.name, text] as [string, string])] : [];
      }),
    );
    family(
      'query-invalid',
      false,
      fc.tuple(request(), badValue).map(([r, [name, text]]) => ({
        ...strip(r),
        query: [...r.query.filter(([n]) => n !== name), [name, text] as [string, string]],
        description: `?${name}=${JSON.stringify(text)}`,
        expect: { kind: '4xx' },
      })),
    );
    family(
      'query-repeated',
      false,
      fc.tuple(request(), fc.constantFrom(...constrained)).chain(([r, p]) =>
        validArbitrary(p.schema, schemaContext, check(p.schema)).map((value) => ({
          ...strip(r),
          query: [...r.query.filter(([n]) => n !== p.name), [p.name, queryText(value)] as [string, string], [p.name, queryText(value)] as [string, string]],
          description: `?${p.name} given twice`,
          expect: { kind: '4xx' } as const,
        })),
      ),
    );
  }
  family(
    'query-unknown',
    false,
    fc.tuple(request(), fc.stringMatching(/^[a-z_]{1,12}$/), STRINGY).map(([r, name, value]) => ({
      ...strip(r),
      query: [...r.query, [`fuzz_${name}`, value] as [string, string]],
      description: `unknown query parameter fuzz_${name}`,
      expect: { kind: '4xx' },
    })),
  );

  if (op.queryParams.length > 0) {
    // Bad Unicode and repetition in any query parameter, as in body strings. NUL is refused where the
    // request comes in (4xx); percent-encodings that are not UTF-8 (an encoded surrogate, an overlong form,
    // a cut sequence) are read as the literal text they are, and no parameter's text may cost a 5xx.
    const anyParam = fc.constantFrom(...op.queryParams.map((p) => p.name));
    const rawFamily = (kind: string, values: fc.Arbitrary<[string, string]>, expect: Expectation) =>
      family(
        kind,
        false,
        fc.tuple(request(), anyParam, values).map(([r, name, [text, shown]]) => ({
          ...strip(r),
          query: r.query.filter(([n]) => n !== name),
          rawQuery: `${encode(name)}=${text}`,
          description: `?${name}=${shown}`,
          expect,
        })),
      );
    rawFamily('query-nul', fc.constantFrom('%00', 'a%00b', 'agt_%00').map((text) => [text, text]), { kind: '4xx' });
    rawFamily('query-bad-utf8', fc.constantFrom('%FF', '%ED%A0%80', '%C0%AF', '%E0%A4%A', '%F4%90%80%80', '%').map((text) => [text, text]), { kind: 'no-5xx' });
    rawFamily(
      'query-repetition',
      // Up to 12 KB encoded, under Node's 16 KB limit on the request line and headers (past it: 431).
      fc.tuple(fc.constantFrom('{', '[', ' ', 'a', '"', '\\', '%'), fc.double({ min: 0.1, max: 1, noNaN: true })).map(([char, share]) => {
        const count = Math.floor((share * 12_000) / encode(char).length);
        return [encode(char.repeat(count)), `${count} × ${JSON.stringify(char)}`];
      }),
      { kind: 'no-5xx' },
    );
  }

  for (const p of op.headerParams) {
    // Header values arrive trimmed.
    const offSchema = offSchemaText(deref(p.schema, document), (value) => check(p.schema)(typeof value === 'string' ? value.trim() : value), HEADER_TEXT);
    if (offSchema) {
      family(
        `header-${p.name}-invalid`,
        false,
        fc.tuple(request(), offSchema).map(([r, value]) => ({
          ...strip(r),
          headers: { ...r.headers, [p.name]: value },
          description: `${p.name}: ${JSON.stringify(value)}`,
          expect: { kind: '4xx' },
        })),
      );
    }
    if (p.required) {
      family(
        `header-${p.name}-missing`,
        false,
        request().map((r) => ({ ...strip(r), headers: Object.fromEntries(Object.entries(r.headers).filter(([name]) => name !== p.name)), description: `no ${p.name}`, expect: { kind: '4xx' } })),
      );
    }
  }

  const body = op.body;
  if (body?.json) {
    const json = body.json;
    family(
      'body-invalid',
      false,
      fc.tuple(request(), invalidArbitrary(json, schemaContext, check)).map(([r, mutant]) => ({
        ...r,
        body: { type: 'json' as const, value: mutant.value },
        description: mutant.mutation,
        expect: { kind: '4xx' },
      })),
    );
    const valid = validArbitrary(json, schemaContext, check(json));
    const truncated = valid.chain((value) => {
      const text = JSON.stringify(value);
      return fc.integer({ min: 0, max: Math.max(0, text.length - 1) }).map((end) => text.slice(0, end));
    });
    family(
      'body-malformed-json',
      false,
      fc
        .tuple(request(), fc.oneof(fc.constantFrom(...MALFORMED_JSON), truncated))
        .filter(([, text]) => !parses(text) && (text.trim() !== '' || body.required))
        .map(([r, text]) => ({ ...r, body: { type: 'raw' as const, text, contentType: 'application/json' }, description: `malformed JSON ${JSON.stringify(text.slice(0, 60))}`, expect: { kind: '4xx' } })),
    );
    // Strings no store keeps (a lone surrogate, NUL) in any string of a valid body, value or key: 4xx.
    // And pathological repetition in any string (100 KB of one character, of `{`): never a 5xx.
    const withString = (value: unknown, index: number, change: (text: string) => string): { value: unknown; path: string } | undefined => {
      let seen = 0;
      let path: string | undefined;
      const visit = (item: unknown, at: string): unknown => {
        if (typeof item === 'string') return seen++ === index ? ((path = at), change(item)) : item;
        if (Array.isArray(item)) return item.map((element, i) => visit(element, `${at}/${i}`));
        if (item && typeof item === 'object') {
          return Object.fromEntries(
            Object.entries(item).map(([key, element]) => {
              const renamed = seen++ === index ? ((path = `${at} (a key)`), change(key)) : key;
              return [renamed, visit(element, `${at}/${key}`)];
            }),
          );
        }
        return item;
      };
      const changed = visit(value, '');
      return path === undefined ? undefined : { value: changed, path };
    };
    family(
      'body-bad-unicode',
      false,
      fc
        .tuple(request(), valid, fc.nat(), fc.constantFrom('\ud800', '\udfff', '\u0000'))
        .map(([r, value, index, bad]) => ({ r, bad, changed: withString(value, index % 64, (text) => `${text}${bad}`) }))
        .filter(({ changed }) => changed !== undefined)
        .map(({ r, bad, changed }) => ({
          ...r,
          body: { type: 'json' as const, value: changed!.value },
          description: `${JSON.stringify(bad)} in the string at ${changed!.path || '/'}`,
          expect: { kind: '4xx' },
        })),
    );
    family(
      'body-repetition',
      false,
      fc
        .tuple(request(), valid, fc.nat(), fc.constantFrom('{', '[', ' ', 'a', '"', '\\'), fc.integer({ min: 10_000, max: 100_000 }))
        .map(([r, value, index, char, count]) => ({ r, char, count, changed: withString(value, index % 64, (text) => `t ${text}${char.repeat(count)}`) }))
        .filter(({ changed }) => changed !== undefined)
        .map(({ r, char, count, changed }) => ({
          ...r,
          body: { type: 'json' as const, value: changed!.value },
          description: `${count} × ${JSON.stringify(char)} in the string at ${changed!.path || '/'}`,
          expect: { kind: 'no-5xx' },
        })),
    );
    family(
      'body-content-type',
      false,
      fc.tuple(request(), valid, fc.constantFrom(...WRONG_TYPES, ...(body.multipart ? [] : ['multipart/form-data; boundary=fuzz']))).map(([r, value, contentType]) => ({
        ...r,
        body: { type: 'raw' as const, text: JSON.stringify(value), contentType },
        description: `Content-Type: ${contentType}`,
        expect: { kind: '4xx' },
      })),
    );
    family(
      'body-oversize',
      false,
      fc.tuple(request(), fc.integer({ min: 1, max: 4096 })).map(([r, extra]) => ({
        ...r,
        body: { type: 'raw' as const, text: JSON.stringify({ pad: 'x'.repeat(context.jsonLimit(op.operationId) + extra) }), contentType: 'application/json' },
        description: `a body ${extra} bytes past the limit`,
        expect: { kind: 'status', status: 413 },
      })),
    );
    family(
      'body-deep',
      false,
      fc.tuple(request(), valid, fc.integer({ min: 1_000, max: 50_000 }), fc.boolean()).map(([r, value, depth, inside]) => {
        const nested = '['.repeat(depth) + ']'.repeat(depth);
        const text = inside && value && typeof value === 'object' && !Array.isArray(value) ? `${JSON.stringify(value).slice(0, -1)}${Object.keys(value).length ? ',' : ''}"fuzz_deep":${nested}}` : nested;
        return { ...r, body: { type: 'raw' as const, text, contentType: 'application/json' }, description: `arrays nested ${depth} deep${inside ? ' in an extra property' : ''}`, expect: { kind: 'no-5xx' } };
      }),
    );
    if (body.required) {
      family('body-missing', false, request().map((r) => ({ ...strip({ ...r, body: undefined }), description: 'no body', expect: { kind: '4xx' } })));
    }
  }
  if (body?.multipart) {
    const form = multipartArbitrary(body.multipart, schemaContext, check) as fc.Arbitrary<Extract<BodySpec, { type: 'multipart' }>>;
    family(
      'multipart-invalid',
      false,
      fc.tuple(request(), form, fc.constantFrom('no file', 'oversize file', 'unknown field', 'empty file name')).map(([r, spec, breakage]) => {
        const broken: BodySpec =
          breakage === 'no file'
            ? { type: 'multipart', fields: spec.fields }
            : breakage === 'oversize file'
              ? { ...spec, file: { name: 'big.txt', type: 'text/plain', content: 'x'.repeat(context.fileLimit + 1) } }
              : breakage === 'unknown field'
                ? { ...spec, fields: { ...spec.fields, ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`fuzz_${i}`, 'x'])) } }
                : { ...spec, file: { name: '', type: 'text/plain', content: '' } };
        return { ...r, body: broken, description: `multipart with ${breakage}`, expect: breakage === 'oversize file' ? { kind: 'status', status: 413 } : { kind: '4xx' } };
      }),
    );
    // NUL in a field, the file's name or its text is refused (4xx); a file of one character repeated, or
    // of HTML nested thousands deep, is never a 5xx.
    family(
      'multipart-nul',
      false,
      fc.tuple(request(), form, fc.constantFrom('field', 'file name', 'file text'), fc.nat()).map(([r, spec, where, index]) => {
        const names = Object.keys(spec.fields);
        const file = spec.file ?? { name: 'notes.txt', type: 'text/plain', content: 'text' };
        const broken: BodySpec =
          where === 'field' && names.length > 0
            ? { ...spec, fields: { ...spec.fields, [names[index % names.length]!]: `${spec.fields[names[index % names.length]!]}\u0000` } }
            : where === 'file name'
              ? { ...spec, file: { ...file, name: `a\u0000${file.name}` } }
              : { ...spec, file: { name: 'notes.txt', type: 'text/plain', content: `before\u0000after` } };
        return { ...r, body: broken, description: `NUL in the ${where === 'field' && names.length === 0 ? 'file text' : where}`, expect: { kind: '4xx' } };
      }),
    );
    family(
      'multipart-repetition',
      false,
      fc
        .tuple(request(), form, fc.constantFrom('{', 'a', ' ', '<div>', '<b><i>'), fc.double({ min: 0.1, max: 1, noNaN: true }))
        .map(([r, spec, unit, share]) => {
          // As much as the file limit lets in, so that the text is read rather than refused for its size.
          const count = Math.floor((share * (context.fileLimit - 2)) / unit.length);
          const html = unit.startsWith('<');
          const file = { name: html ? 'page.html' : 'notes.txt', type: html ? 'text/html' : 'text/plain', content: `t ${unit.repeat(count)}` };
          return { ...r, body: { ...spec, file }, description: `a ${file.type} file of ${count} × ${JSON.stringify(unit)}`, expect: { kind: 'no-5xx' } as const };
        }),
    );
  }
  return families;
}

/** Every reserved character percent-encoded, as the contract's parameters (without allowReserved) ask. */
export function encode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const FILES = [
  { name: 'notes.txt', type: 'text/plain' },
  { name: 'notes.md', type: 'text/markdown' },
  { name: 'page.html', type: 'text/html' },
  { name: 'paper.pdf', type: 'application/pdf' },
  { name: 'blob.bin', type: 'application/octet-stream' },
];

/** A multipart form of `schema`: its `contentMediaType` property is the file, the others are text fields. */
function multipartArbitrary(schema: Schema, context: { document: Json; hints: Readonly<Record<string, fc.Arbitrary<unknown>>> }, check: (schema: Schema) => (value: unknown) => boolean): fc.Arbitrary<BodySpec> {
  const resolved = deref(schema, context.document);
  const properties = (resolved.properties ?? {}) as Record<string, Schema>;
  const fileField = Object.entries(properties).find(([, s]) => 'contentMediaType' in s)?.[0] ?? 'file';
  const fields = Object.fromEntries(Object.entries(properties).filter(([name]) => name !== fileField));
  const fieldSchema: Schema = { type: 'object', properties: fields, additionalProperties: false };
  return fc
    .tuple(
      arbitraryOf(fieldSchema, context).filter(check(fieldSchema)),
      fc.constantFrom(...FILES),
      fc.oneof(fc.string({ minLength: 1, maxLength: 200 }), fc.string({ minLength: 1, maxLength: 200, unit: 'binary' }), fc.constant('%PDF-1.7\n%fuzz\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF')),
    )
    .map(([values, file, content]) => ({
      type: 'multipart' as const,
      fields: Object.fromEntries(Object.entries(values as Json).map(([name, value]) => [name, typeof value === 'string' ? value : JSON.stringify(value)])),
      file: { ...file, content },
    }));
}
