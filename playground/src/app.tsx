// The page: sign-in until there is a credential the server accepts, then the navigation and one view
// per route.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { clientFor, data, failureOf, loadCredential, onUnauthorized, storeCredential, type ApiFailure, type Credential, type Schemas } from './api.ts';
import { href, navigate, useRoute, type Route } from './router.ts';
import { ErrorMessage, Loading, SessionContext, type Session } from './ui.tsx';
import { AgentEditor, AgentList } from './views/agents.tsx';
import { ChatPicker, ChatView } from './views/chat.tsx';
import { ApiKeys } from './views/keys.tsx';
import { Knowledge } from './views/knowledge.tsx';
import { RunReplay } from './views/replay.tsx';
import { SessionDetail, SessionList } from './views/sessions.tsx';
import { credentialFromFragment } from './sign-in-links.ts';
import { SignIn } from './views/sign-in.tsx';
import { TeamEditor, TeamList } from './views/teams.tsx';
import { Usage } from './views/usage.tsx';

const NAV: { section: string; label: string }[] = [
  { section: 'chat', label: 'Chat' },
  { section: 'agents', label: 'Agents' },
  { section: 'teams', label: 'Teams' },
  { section: 'sessions', label: 'Sessions' },
  { section: 'knowledge', label: 'Knowledge' },
  { section: 'usage', label: 'Usage' },
  { section: 'keys', label: 'API keys' },
];

function View({ route }: { route: Route }) {
  const [section = 'chat', id, more] = route.parts;
  switch (section) {
    case 'agents':
      return id ? <AgentEditor key={id} agentId={id === 'new' ? null : id} /> : <AgentList />;
    case 'teams':
      return id ? <TeamEditor key={id} teamId={id === 'new' ? null : id} /> : <TeamList />;
    case 'chat':
      return (id === 'agent' || id === 'team') && more ? (
        <ChatView key={`${id}:${more}:${route.query.get('session') ?? ''}`} kind={id} targetId={more} sessionId={route.query.get('session')} />
      ) : (
        <ChatPicker />
      );
    case 'sessions':
      return id ? <SessionDetail key={id} sessionId={id} /> : <SessionList />;
    case 'runs':
      return id ? <RunReplay key={id} runId={id} /> : <SessionList />;
    case 'knowledge':
      return <Knowledge />;
    case 'usage':
      return <Usage />;
    case 'keys':
      return <ApiKeys />;
    default:
      return (
        <section>
          <h1>Not found</h1>
          <p>
            Nothing lives at this address. <a href={href('chat')}>Go to the chat</a>.
          </p>
        </section>
      );
  }
}

function Shell({ session }: { session: Session }) {
  const route = useRoute();
  const section = route.parts[0] ?? 'chat';
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => setMenuOpen(false), [route]);
  return (
    <SessionContext.Provider value={session}>
      <a class="skip" href="#main" onClick={(event) => { event.preventDefault(); document.getElementById('main')?.focus(); }}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href('chat')}>
          Open Agent API <span>playground</span>
        </a>
        <button type="button" class="menu-toggle" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        <nav id="nav" class={menuOpen ? 'open' : ''} aria-label="Playground">
          <ul>
            {NAV.map((item) => (
              <li key={item.section}>
                <a href={href(item.section)} aria-current={section === item.section ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="account">
          <span class="email" title={session.account.email}>
            {session.account.email}
          </span>
          <button type="button" onClick={() => void session.signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <View route={route} />
      </main>
    </SessionContext.Provider>
  );
}

export function App() {
  const [credential, setCredential] = useState<Credential | null>(() => {
    // A sign-in link or provider comes back with the token in the fragment: keep it, and clear the address.
    const fromLink = credentialFromFragment(location.hash);
    if (fromLink) {
      storeCredential(fromLink);
      history.replaceState(null, '', `${location.pathname}${href('chat')}`);
      return fromLink;
    }
    return loadCredential();
  });
  const [account, setAccount] = useState<Schemas['Account'] | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const client = useMemo(() => clientFor(credential), [credential]);

  const signOut = async (message: string | null = null) => {
    if (credential?.kind === 'session') await client.POST('/v1/auth/logout').catch(() => undefined);
    storeCredential(null);
    setCredential(null);
    setAccount(null);
    setNotice(message);
  };

  // A credential the server stops accepting (expired, revoked, signed out elsewhere) ends this sign-in;
  // while signing in, a refused key is that form's own error.
  useEffect(() => (credential ? onUnauthorized(() => void signOut('The server no longer accepts this sign-in; sign in again.')) : undefined), [credential]);

  useEffect(() => {
    if (!credential) return;
    let current = true;
    setError(null);
    data(client.GET('/v1/account')).then(
      (answer) => current && setAccount(answer),
      (caught: unknown) => current && setError(failureOf(caught)),
    );
    return () => {
      current = false;
    };
  }, [credential]);

  if (!credential) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(signedIn) => {
          storeCredential(signedIn);
          setNotice(null);
          setCredential(signedIn);
          if (!location.hash || location.hash === '#') navigate(href('chat'));
        }}
      />
    );
  }
  if (!account) {
    return (
      <main class="sign-in" id="main">
        {error ? (
          <>
            <ErrorMessage error={error} />
            <button type="button" onClick={() => void signOut()}>
              Sign in again
            </button>
          </>
        ) : (
          <Loading what="your account" />
        )}
      </main>
    );
  }
  return <Shell session={{ client, credential, account, signOut: () => signOut() }} />;
}
