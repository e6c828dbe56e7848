// Signing in: an emailed link (shown on the page by a development server that has no mail), the link or
// its token pasted, an OpenID Connect provider, or an API key.
import { useState } from 'preact/hooks';
import { apiRoot, ApiFailure, clientFor, data, type Credential, type Schemas } from '../api.ts';
import { returnUrl, tokenOf } from '../sign-in-links.ts';
import { ErrorMessage, Field, useAction, useLoad } from '../ui.tsx';

function sessionCredential(token: Schemas['AccessToken']): Credential {
  return { token: token.access_token, kind: 'session', expiresAt: token.expires_at };
}

export function SignIn({ onSignedIn, notice }: { onSignedIn: (credential: Credential) => void; notice: string | null }) {
  const anonymous = clientFor(null);
  const providers = useLoad(() => data(anonymous.GET('/v1/auth/providers')), []);
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState<Schemas['MagicLinkAccepted'] | null>(null);
  const [pasted, setPasted] = useState('');
  const [apiKey, setApiKey] = useState('');

  const requestLink = useAction(async () => {
    setSent(null);
    const ask = (withRedirect: boolean) =>
      data(anonymous.POST('/v1/auth/magic-link', { body: { email, ...(withRedirect ? { redirect_url: returnUrl() } : {}) } }));
    try {
      setSent(await ask(true));
    } catch (error) {
      // A server whose PUBLIC_URL is another origin than this page's refuses to redirect here: the link
      // then answers the token itself, and the person pastes it below.
      if (error instanceof ApiFailure && error.status === 400 && error.details.some((detail) => detail.field.endsWith('redirect_url'))) {
        setSent(await ask(false));
      } else {
        throw error;
      }
    }
  });

  const verify = useAction(async () => {
    const token = await data(anonymous.POST('/v1/auth/magic-link/verify', { body: { token: tokenOf(pasted) } }));
    onSignedIn(sessionCredential(token));
  });

  const useKey = useAction(async () => {
    const credential: Credential = { token: apiKey.trim(), kind: 'api_key' };
    // Checked before it is kept: a wrong key is refused here, with the server's message.
    await data(clientFor(credential).GET('/v1/account'));
    onSignedIn(credential);
  });

  const magicLink = providers.data?.magic_link ?? true;
  return (
    <main class="sign-in" id="main">
      <h1>Open Agent API playground</h1>
      <p class="muted">Sign in to create agents and teams, chat with them and watch their runs.</p>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <ErrorMessage error={providers.error} />

      {magicLink && (
        <section aria-labelledby="email-heading">
          <h2 id="email-heading">Email me a sign-in link</h2>
          <form onSubmit={(event) => { event.preventDefault(); void requestLink.run(); }}>
            <Field label="Email">
              {(id) => <input id={id} type="email" required autocomplete="email" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />}
            </Field>
            <button type="submit" class="primary" disabled={requestLink.busy}>
              Send the link
            </button>
          </form>
          <ErrorMessage error={requestLink.error} />
          {sent && (
            <div class="sent" role="status">
              {sent.dev_link ? (
                <p class="dev-link">
                  This development server has no mail configured, so here is the link it would have sent:{' '}
                  <a href={sent.dev_link}>Open the sign-in link</a>
                </p>
              ) : (
                <p>{sent.message}</p>
              )}
            </div>
          )}
          <form onSubmit={(event) => { event.preventDefault(); void verify.run(); }}>
            <Field label="Or paste the link (or its token)" hint="The link works once and expires after a few minutes.">
              {(id, hint) => <input id={id} required aria-describedby={hint} value={pasted} onInput={(e) => setPasted(e.currentTarget.value)} />}
            </Field>
            <button type="submit" disabled={verify.busy}>
              Sign in
            </button>
          </form>
          <ErrorMessage error={verify.error} />
        </section>
      )}

      {providers.data && providers.data.data.length > 0 && (
        <section aria-labelledby="oidc-heading">
          <h2 id="oidc-heading">Sign in with a provider</h2>
          <ul class="providers">
            {providers.data.data.map((provider) => (
              <li key={provider.id}>
                <a class="button" href={`${apiRoot()}${provider.authorize_url}?redirect_url=${encodeURIComponent(returnUrl())}`}>
                  Continue with {provider.id}
                </a>
              </li>
            ))}
          </ul>
        </section>
      )}

      <section aria-labelledby="key-heading">
        <h2 id="key-heading">Use an API key</h2>
        <form onSubmit={(event) => { event.preventDefault(); void useKey.run(); }}>
          <Field label="API key" hint={<>Make one with <code>npm run create-key -- --email you@example.com</code>, or on the API keys page once signed in.</>}>
            {(id, hint) => (
              <input id={id} type="password" required autocomplete="off" spellcheck={false} aria-describedby={hint} value={apiKey} onInput={(e) => setApiKey(e.currentTarget.value)} />
            )}
          </Field>
          <button type="submit" disabled={useKey.busy}>
            Use this key
          </button>
        </form>
        <ErrorMessage error={useKey.error} />
      </section>
    </main>
  );
}
