// Small pieces every view uses: loading data, showing the API's errors, labelled fields, a two-step
// delete, and the signed-in client.
import { createContext, type ComponentChildren } from 'preact';
import { useCallback, useContext, useEffect, useId, useRef, useState } from 'preact/hooks';
import type { OpenAgentClient } from '../../client/index.ts';
import { failureOf, type ApiFailure, type Credential, type Schemas } from './api.ts';

export interface Session {
  client: OpenAgentClient;
  credential: Credential;
  account: Schemas['Account'];
  signOut(): Promise<void>;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in page');
  return session;
}

export interface Loaded<T> {
  data: T | undefined;
  error: ApiFailure | null;
  loading: boolean;
  reload(): void;
}

/** Loads `load()` when `keys` change; a stale answer never overwrites a newer one. */
export function useLoad<T>(load: () => Promise<T>, keys: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiFailure | null; loading: boolean }>({ data: undefined, error: null, loading: true });
  const [version, setVersion] = useState(0);
  useEffect(() => {
    let current = true;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => current && setState({ data, error: null, loading: false }),
      (error: unknown) => current && setState({ data: undefined, error: failureOf(error), loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...keys, version]);
  const reload = useCallback(() => setVersion((v) => v + 1), []);
  return { ...state, reload };
}

/** Runs an action (a save, a delete), tracking whether it is busy and what went wrong. */
export function useAction<A extends unknown[]>(action: (...args: A) => Promise<void>): {
  run: (...args: A) => Promise<boolean>;
  busy: boolean;
  error: ApiFailure | null;
  clear(): void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiFailure | null>(null);
  const run = async (...args: A) => {
    setBusy(true);
    setError(null);
    try {
      await action(...args);
      return true;
    } catch (caught) {
      setError(failureOf(caught));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, clear: () => setError(null) };
}

/** The API's error envelope, as its message (and the fields it names). Announced to screen readers. */
export function ErrorMessage({ error }: { error: ApiFailure | null | undefined }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      <p>{error.message}</p>
      {error.details.length > 0 && (
        <ul>
          {error.details.map((detail, index) => (
            <li key={index}>
              {detail.field && <code>{detail.field}</code>} {detail.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

/** A label, its control and a hint, tied together for assistive technology. */
export function Field(props: { label: string; hint?: ComponentChildren; children: (id: string, hintId: string | undefined) => ComponentChildren }) {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children(id, hintId)}
      {props.hint && (
        <p class="hint" id={hintId}>
          {props.hint}
        </p>
      )}
    </div>
  );
}

/** Deleting takes two presses: the button asks to be confirmed, and Escape or Cancel backs out. */
export function DeleteButton({ label, onConfirm, busy }: { label: string; onConfirm: () => void; busy?: boolean }) {
  const [asking, setAsking] = useState(false);
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) confirmRef.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" class="danger" onClick={() => setAsking(true)} disabled={busy}>
        {label}
      </button>
    );
  }
  return (
    <span class="confirm" onKeyDown={(event) => event.key === 'Escape' && setAsking(false)}>
      <button type="button" class="danger" ref={confirmRef} onClick={() => { setAsking(false); onConfirm(); }}>
        Yes, {label.toLowerCase()}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

export function formatNumber(value: number): string {
  return value.toLocaleString();
}

/** JSON shown to people: pretty when it parses, as it came when it does not. */
export function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** Moves focus to a view's heading when it opens, so that keyboard and screen-reader users land there. */
export function useFocusHeading<T extends HTMLElement>(keys: unknown[]) {
  const ref = useRef<T>(null);
  useEffect(() => {
    ref.current?.focus({ preventScroll: false });
  }, keys);
  return ref;
}
