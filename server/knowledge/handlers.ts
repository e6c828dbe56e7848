import type { Principal } from '../http/auth.ts';
import { ApiError } from '../errors.ts';
import type { AppHandlers, UploadedFile } from '../http/operations.ts';
import { assertStorableText, findUnstorable } from '../http/storable.ts';
import { detectType, extractText, markdownTitle } from './extract.ts';
import type { Knowledge, Metadata, NewDocument } from './service.ts';

export interface KnowledgeHandlerDeps {
  knowledge: Knowledge;
}

const apiKeyOf = (auth: Principal) => (auth.credential.kind === 'api_key' ? auth.credential.id : null);

function metadataError(message: string): ApiError {
  return new ApiError('validation_error', 'The request does not match the contract.', { details: [{ field: 'metadata', message }] });
}

/** The `metadata` form field: a JSON object held to the rules the contract sets for KnowledgeMetadata. */
export function parseMetadataField(raw: string | undefined): Metadata | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw metadataError('must be a JSON object');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw metadataError('must be a JSON object');
  const entries = Object.entries(value);
  if (entries.length > 16) throw metadataError('must have at most 16 keys');
  for (const [key, item] of entries) {
    if (key.length > 64) throw metadataError(`key ${key.slice(0, 64)}… is longer than 64 characters`);
    if (!['string', 'number', 'boolean'].includes(typeof item)) throw metadataError(`${key} must be a string, a number or a boolean`);
    if (typeof item === 'string' && item.length > 512) throw metadataError(`${key} is longer than 512 characters`);
  }
  // Escapes inside the field's JSON can say what the form field itself could not hold.
  const unstorableValue = findUnstorable(value);
  if (unstorableValue) throw metadataError(unstorableValue.message);
  return value as Metadata;
}

async function fromUpload(files: UploadedFile[], fields: Record<string, string | undefined>): Promise<NewDocument> {
  const file = files.find((item) => item.fieldname === 'file');
  if (!file) {
    throw new ApiError('validation_error', 'The request does not match the contract.', { details: [{ field: 'file', message: 'must be a file' }] });
  }
  const type = detectType({ buffer: file.buffer, mimetype: file.mimetype, filename: file.originalname });
  const extracted = await extractText(type, file.buffer);
  if (type === 'application/pdf') {
    // A PDF's text comes out of its fonts' encodings, which the uploader cannot fix: what no store can keep
    // is replaced rather than refused.
    extracted.text = extracted.text.replaceAll('\u0000', '').toWellFormed();
    extracted.title = extracted.title?.replaceAll('\u0000', '').toWellFormed();
  } else {
    assertStorableText(extracted.text, 'file');
  }
  return {
    text: extracted.text,
    contentType: type,
    title: fields.title ?? extracted.title ?? (file.originalname || undefined),
    source: fields.source ?? (file.originalname || undefined),
    collection: fields.collection,
    metadata: parseMetadataField(fields.metadata),
    embeddingModel: fields.embedding_model,
  };
}

export function knowledgeHandlers(deps: KnowledgeHandlerDeps) {
  const { knowledge } = deps;
  return {
    async createKnowledgeDocument({ auth, body, files, headers }) {
      const upload = (headers['content-type'] ?? '').toLowerCase().startsWith('multipart/form-data');
      let input: NewDocument;
      if (upload) {
        input = await fromUpload(files, body as Record<string, string | undefined>);
      } else {
        const json = body as Extract<typeof body, { text: string }>;
        input = {
          text: json.text,
          contentType: 'text/markdown',
          title: json.title ?? markdownTitle(json.text),
          source: json.source,
          collection: json.collection,
          metadata: json.metadata,
          embeddingModel: json.embedding_model,
        };
      }
      const added = await knowledge.addDocument(auth.userId, input, { apiKeyId: apiKeyOf(auth) });
      return { status: added.status, body: added.document };
    },

    async listKnowledgeDocuments({ auth, query }) {
      return { status: 200, body: await knowledge.listDocuments(auth.userId, query) };
    },

    async getKnowledgeDocument({ auth, params }) {
      return { status: 200, body: await knowledge.getDocument(auth.userId, params.documentId) };
    },

    async deleteKnowledgeDocument({ auth, params }) {
      await knowledge.deleteDocument(auth.userId, params.documentId);
      return { status: 204 };
    },

    async listKnowledgeCollections({ auth, query }) {
      return { status: 200, body: await knowledge.listCollections(auth.userId, query) };
    },

    async searchKnowledge({ auth, body, signal }) {
      const names = [...new Set([...(body.collection ? [body.collection] : []), ...(body.collections ?? [])])];
      const found = await knowledge.search(
        auth.userId,
        { query: body.query, top_k: body.top_k, collections: names.length > 0 ? names : undefined, filter: body.filter, mode: body.mode },
        { apiKeyId: apiKeyOf(auth), signal },
      );
      return { status: 200, body: { object: 'knowledge.search_result', query: body.query, mode: found.mode, results: found.results } };
    },
  } satisfies Partial<AppHandlers>;
}
