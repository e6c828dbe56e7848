// Knowledge: upload a document (a file, or text typed in), see collections and documents, and try a
// search the way an agent's knowledge_search would.
import { useState } from 'preact/hooks';
import { allPages, data, type Schemas } from '../api.ts';
import { DeleteButton, ErrorMessage, Field, formatBytes, formatTime, Loading, useAction, useFocusHeading, useLoad, useSession } from '../ui.tsx';

type SearchMode = Schemas['KnowledgeSearchMode'];

export function Knowledge() {
  const { client } = useSession();
  const heading = useFocusHeading<HTMLHeadingElement>([]);
  const listed = useLoad(
    () =>
      Promise.all([
        allPages((after) => client.GET('/v1/knowledge/collections', { params: { query: { limit: 100, ...(after ? { after } : {}) } } })),
        allPages((after) => client.GET('/v1/knowledge/documents', { params: { query: { limit: 100, ...(after ? { after } : {}) } } }), 500),
      ]),
    [],
  );
  const [collections, documents] = listed.data ?? [[], []];
  return (
    <section>
      <h1 ref={heading} tabIndex={-1}>
        Knowledge
      </h1>
      <div class="columns">
        <Upload collections={collections.map((collection) => collection.name)} onUploaded={listed.reload} />
        <Search collections={collections.map((collection) => collection.name)} />
      </div>

      <h2>Documents</h2>
      <ErrorMessage error={listed.error} />
      {listed.loading && !listed.data && <Loading what="documents" />}
      {listed.data && documents.length === 0 && <p class="empty">No documents yet.</p>}
      {documents.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Title</th>
                <th scope="col">Collection</th>
                <th scope="col">Status</th>
                <th scope="col">Size</th>
                <th scope="col">Chunks</th>
                <th scope="col">Added</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {documents.map((document) => (
                <DocumentRow key={document.id} document={document} onDeleted={listed.reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {documents.some((document) => document.status === 'processing') && (
        <button type="button" onClick={listed.reload}>
          Refresh
        </button>
      )}

      {collections.length > 0 && (
        <>
          <h2>Collections</h2>
          <ul class="pick">
            {collections.map((collection) => (
              <li key={collection.name}>
                <strong>{collection.name}</strong>{' '}
                <span class="muted">
                  {collection.document_count} documents · {collection.embedding_model} ({collection.dimensions} dimensions)
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

function DocumentRow({ document, onDeleted }: { document: Schemas['KnowledgeDocument']; onDeleted: () => void }) {
  const { client } = useSession();
  const remove = useAction(async () => {
    await data(client.DELETE('/v1/knowledge/documents/{documentId}', { params: { path: { documentId: document.id } } }));
    onDeleted();
  });
  return (
    <tr>
      <td>
        {document.title ?? document.id}
        {document.error && <p class="warning">{document.error}</p>}
        <ErrorMessage error={remove.error} />
      </td>
      <td>{document.collection}</td>
      <td>{document.status}</td>
      <td>{formatBytes(document.bytes)}</td>
      <td>{document.chunk_count}</td>
      <td>{formatTime(document.created_at)}</td>
      <td>
        <DeleteButton label="Delete" busy={remove.busy} onConfirm={() => void remove.run()} />
      </td>
    </tr>
  );
}

function Upload({ collections, onUploaded }: { collections: string[]; onUploaded: () => void }) {
  const { client } = useSession();
  const [file, setFile] = useState<File | null>(null);
  const [text, setText] = useState('');
  const [title, setTitle] = useState('');
  const [collection, setCollection] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const upload = useAction(async () => {
    setDone(null);
    let document: Schemas['KnowledgeDocument'];
    if (file) {
      const form = new FormData();
      form.append('file', file);
      if (title.trim()) form.append('title', title.trim());
      if (collection.trim()) form.append('collection', collection.trim());
      // openapi-fetch passes FormData through, and fetch sets the multipart boundary.
      document = await data(client.POST('/v1/knowledge/documents', { body: form as never }));
    } else {
      document = await data(
        client.POST('/v1/knowledge/documents', {
          body: { text, ...(title.trim() ? { title: title.trim() } : {}), ...(collection.trim() ? { collection: collection.trim() } : {}) },
        }),
      );
    }
    setDone(`Added ${document.title ?? document.id} to ${document.collection}: ${document.status === 'ready' ? `${document.chunk_count} chunks` : document.status}.`);
    setText('');
    setFile(null);
    onUploaded();
  });
  return (
    <form class="panel" onSubmit={(event) => { event.preventDefault(); void upload.run(); }}>
      <h2>Add a document</h2>
      <Field label="File" hint="Text, Markdown, HTML or PDF.">
        {(id, hint) => (
          <input id={id} type="file" accept=".txt,.md,.markdown,.html,.htm,.pdf,text/plain,text/markdown,text/html,application/pdf" aria-describedby={hint} onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
        )}
      </Field>
      {!file && (
        <Field label="Or its text">{(id) => <textarea id={id} rows={4} value={text} onInput={(e) => setText(e.currentTarget.value)} />}</Field>
      )}
      <Field label="Title">{(id) => <input id={id} maxLength={500} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />}</Field>
      <Field label="Collection" hint="Made on first use; default when empty.">
        {(id, hint) => (
          <>
            <input id={id} list={`${id}-list`} pattern="[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}" aria-describedby={hint} value={collection} onInput={(e) => setCollection(e.currentTarget.value)} />
            <datalist id={`${id}-list`}>
              {collections.map((name) => (
                <option key={name} value={name} />
              ))}
            </datalist>
          </>
        )}
      </Field>
      <ErrorMessage error={upload.error} />
      {done && (
        <p class="ok" role="status">
          {done}
        </p>
      )}
      <button type="submit" class="primary" disabled={upload.busy || (!file && !text.trim())}>
        Add document
      </button>
    </form>
  );
}

function Search({ collections }: { collections: string[] }) {
  const { client } = useSession();
  const [query, setQuery] = useState('');
  const [collection, setCollection] = useState('');
  const [mode, setMode] = useState<SearchMode>('hybrid');
  const [topK, setTopK] = useState('5');
  const [results, setResults] = useState<Schemas['KnowledgeSearchResult'][] | null>(null);
  const search = useAction(async () => {
    const answer = await data(
      client.POST('/v1/knowledge/search', { body: { query, mode, top_k: Number(topK) || 5, ...(collection ? { collection } : {}) } }),
    );
    setResults(answer.results);
  });
  return (
    <div class="panel">
      <form onSubmit={(event) => { event.preventDefault(); void search.run(); }}>
        <h2>Try a search</h2>
        <Field label="Query">{(id) => <input id={id} type="search" required maxLength={4000} value={query} onInput={(e) => setQuery(e.currentTarget.value)} />}</Field>
        <div class="inline">
          <Field label="Collection">
            {(id) => (
              <select id={id} value={collection} onChange={(e) => setCollection(e.currentTarget.value)}>
                <option value="">All</option>
                {collections.map((name) => (
                  <option key={name} value={name}>
                    {name}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Mode">
            {(id) => (
              <select id={id} value={mode} onChange={(e) => setMode(e.currentTarget.value as SearchMode)}>
                <option value="hybrid">hybrid</option>
                <option value="vector">vector</option>
                <option value="keyword">keyword</option>
              </select>
            )}
          </Field>
          <Field label="Results">{(id) => <input id={id} type="number" min={1} max={50} value={topK} onInput={(e) => setTopK(e.currentTarget.value)} />}</Field>
        </div>
        <button type="submit" class="primary" disabled={search.busy}>
          Search
        </button>
      </form>
      <ErrorMessage error={search.error} />
      {results && (
        <ol class="results" aria-label="Search results">
          {results.length === 0 && <li class="muted">Nothing found.</li>}
          {results.map((result) => (
            <li key={result.id}>
              <p class="meta">
                <strong>{result.title ?? result.document_id}</strong>
                <span>{result.collection}</span>
                <span>score {result.score.toFixed(3)}</span>
              </p>
              <p class="snippet">{result.text}</p>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
