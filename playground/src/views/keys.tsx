// API keys: list, create (the secret is shown once), revoke.
import { useState } from 'preact/hooks';
import { allPages, data, type Schemas } from '../api.ts';
import { DeleteButton, ErrorMessage, Field, formatTime, Loading, useAction, useFocusHeading, useLoad, useSession } from '../ui.tsx';

export function ApiKeys() {
  const { client, credential } = useSession();
  const heading = useFocusHeading<HTMLHeadingElement>([]);
  const keys = useLoad(() => allPages((after) => client.GET('/v1/api-keys', { params: { query: { limit: 100, ...(after ? { after } : {}) } } })), []);
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('');
  const [created, setCreated] = useState<Schemas['ApiKeyWithSecret'] | null>(null);
  const [copied, setCopied] = useState(false);
  const create = useAction(async () => {
    setCopied(false);
    const key = await data(
      client.POST('/v1/api-keys', { body: { name: name.trim(), ...(expires ? { expires_at: new Date(`${expires}T23:59:59`).toISOString() } : {}) } }),
    );
    setCreated(key);
    setName('');
    setExpires('');
    keys.reload();
  });
  return (
    <section>
      <h1 ref={heading} tabIndex={-1}>
        API keys
      </h1>
      <form class="panel" onSubmit={(event) => { event.preventDefault(); void create.run(); }}>
        <h2>New key</h2>
        <div class="inline">
          <Field label="Name">{(id) => <input id={id} required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />}</Field>
          <Field label="Expires (optional)">{(id) => <input id={id} type="date" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />}</Field>
        </div>
        <button type="submit" class="primary" disabled={create.busy}>
          Create key
        </button>
        <ErrorMessage error={create.error} />
      </form>
      {created && (
        <div class="secret" role="status">
          <p>
            Your new key <strong>{created.name}</strong>. Copy it now: it is not shown again.
          </p>
          <p>
            <code class="key">{created.secret}</code>{' '}
            <button
              type="button"
              onClick={() => void navigator.clipboard?.writeText(created.secret).then(() => setCopied(true), () => setCopied(false))}
            >
              {copied ? 'Copied' : 'Copy'}
            </button>
          </p>
        </div>
      )}
      <h2>Your keys</h2>
      <ErrorMessage error={keys.error} />
      {keys.loading && !keys.data && <Loading what="keys" />}
      {keys.data?.length === 0 && <p class="empty">No API keys.</p>}
      {keys.data && keys.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.map((key) => (
                <KeyRow key={key.id} apiKey={key} inUse={credential.kind === 'api_key' && credential.token.startsWith(key.prefix)} onDeleted={keys.reload} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function KeyRow({ apiKey, inUse, onDeleted }: { apiKey: Schemas['ApiKey']; inUse: boolean; onDeleted: () => void }) {
  const { client } = useSession();
  const remove = useAction(async () => {
    await data(client.DELETE('/v1/api-keys/{keyId}', { params: { path: { keyId: apiKey.id } } }));
    onDeleted();
  });
  return (
    <tr>
      <td>
        {apiKey.name}
        {inUse && <span class="badge">this page uses it</span>}
        <ErrorMessage error={remove.error} />
      </td>
      <td>
        <code>{apiKey.prefix}…</code>
      </td>
      <td>{formatTime(apiKey.created_at)}</td>
      <td>{formatTime(apiKey.last_used_at)}</td>
      <td>{apiKey.expires_at ? formatTime(apiKey.expires_at) : 'never'}</td>
      <td>
        <DeleteButton label="Revoke" busy={remove.busy} onConfirm={() => void remove.run()} />
      </td>
    </tr>
  );
}
