// Knowledge: a document from creation to deletion, its collection, duplicate detection, and search.
import type { Check, Context, KnowledgeDocument, Schemas } from '../context.ts';
import { KNOWLEDGE_COLLECTION } from '../context.ts';
import { pageThrough } from './pagination.ts';

/** Waits for a document processed in the background (202) to be ready or failed. */
async function settled(t: Context, document: KnowledgeDocument): Promise<KnowledgeDocument> {
  let current = document;
  for (let attempt = 0; current.status === 'processing' && attempt < 60; attempt++) {
    await t.client.options.sleep(500);
    current = (await t.call('getKnowledgeDocument', { params: { documentId: document.id }, expect: 200 })).json as KnowledgeDocument;
  }
  return current;
}

export const knowledgeChecks: Check[] = [
  {
    name: 'knowledge documents and search',
    operations: ['createKnowledgeDocument', 'getKnowledgeDocument', 'listKnowledgeDocuments', 'deleteKnowledgeDocument', 'listKnowledgeCollections', 'searchKnowledge'],
    async run(t) {
      const marker = `harbor${t.nonce.toLowerCase()}lantern`;
      const text = `# Conformance ${t.nonce}\n\nThe ${marker} glows over the quay every night at nine.`;
      const { status, document: created } = await t.createDocument(text);
      t.check('createKnowledgeDocument', status === 201 ? created.status === 'ready' : created.status === 'processing', `answered ${status} with status ${created.status}`);
      t.check('createKnowledgeDocument', created.collection === KNOWLEDGE_COLLECTION && created.metadata.conformance === t.nonce, 'the document does not keep its collection or metadata');
      const document = await settled(t, created);
      t.check('getKnowledgeDocument', document.status === 'ready', `the document ended ${document.status}${document.error ? `: ${document.error}` : ''}`);
      const fetched = (await t.call('getKnowledgeDocument', { params: { documentId: created.id }, expect: 200 })).json as KnowledgeDocument;
      t.check('getKnowledgeDocument', fetched.id === created.id && fetched.content_sha256 === created.content_sha256, 'GET answers another document');

      const again = await t.call('createKnowledgeDocument', { body: { text, collection: KNOWLEDGE_COLLECTION }, expect: 200, halt: false });
      t.check('createKnowledgeDocument', (again.json as KnowledgeDocument | undefined)?.id === created.id, 'posting the same content again did not answer the same document');

      const listed = await pageThrough(t, 'listKnowledgeDocuments', { query: { collection: KNOWLEDGE_COLLECTION } });
      t.check('listKnowledgeDocuments', listed.ids.includes(created.id), 'the document is not listed in its collection');
      const collections = await pageThrough(t, 'listKnowledgeCollections', { limit: 100 });
      t.check('listKnowledgeCollections', collections.ids.includes(KNOWLEDGE_COLLECTION), `the collection ${KNOWLEDGE_COLLECTION} is not listed`);

      if (document.status === 'ready') {
        const found = (await t.call('searchKnowledge', { body: { query: `${marker} glows over the quay`, collections: [KNOWLEDGE_COLLECTION], top_k: 5 }, expect: 200 })).json as Schemas['KnowledgeSearchResponse'];
        t.check('searchKnowledge', found.results.some((result) => result.document_id === created.id), 'searching for the document\'s own words does not find it');
        const scores = found.results.map((result) => result.score);
        t.check('searchKnowledge', scores.every((score, index) => index === 0 || score <= scores[index - 1]!), 'the results are not best first');
        const keyword = await t.call('searchKnowledge', { body: { query: marker, collection: KNOWLEDGE_COLLECTION, mode: 'keyword' }, expect: 200, halt: false });
        t.check('searchKnowledge', keyword.status !== 200 || (keyword.json as Schemas['KnowledgeSearchResponse']).mode === 'keyword', 'a keyword search says it ran another mode');
      }
      await t.call('searchKnowledge', { body: { query: marker, collections: [`conformance-missing-${t.nonce.toLowerCase()}`] }, expect: 404, halt: false });
      await t.call('searchKnowledge', { body: { query: '' }, expect: 400, halt: false });

      await t.call('deleteKnowledgeDocument', { params: { documentId: created.id }, expect: 204 });
      await t.call('getKnowledgeDocument', { params: { documentId: created.id }, expect: 404, halt: false });
      await t.call('deleteKnowledgeDocument', { params: { documentId: created.id }, expect: 404, halt: false });
    },
  },
];
