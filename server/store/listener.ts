// PostgreSQL LISTEN on one dedicated connection per process, shared by every channel. A notification
// is sent when the transaction that sent it commits, so what a listener hears is already stored. The
// connection is watched (a query every few seconds) and re-opened when it drops; every handler's
// `onReconnect` then runs, because notifications sent while it was away are gone for good and whoever
// relies on them must look at the store once.
import pg from 'pg';

export type NotificationHandler = (payload: string) => void;

interface Subscription {
  handler: NotificationHandler;
  onReconnect: (() => void) | undefined;
}

const CHECK_MS = 5_000;
const CHECK_TIMEOUT_MS = 5_000;
const RETRY_MS = [100, 250, 500, 1_000, 2_000];

export interface Listener {
  listen(channel: string, handler: NotificationHandler, onReconnect?: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export function createListener(connectionString: string, onError: (error: unknown) => void = () => undefined): Listener {
  const channels = new Map<string, Set<Subscription>>();
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let closed = false;
  let check: NodeJS.Timeout | undefined;
  let failures = 0;

  const quote = (channel: string) => `"${channel.replaceAll('"', '""')}"`;

  function dispatch(message: pg.Notification): void {
    for (const subscription of channels.get(message.channel) ?? []) {
      try {
        subscription.handler(message.payload ?? '');
      } catch (error) {
        onError(error);
      }
    }
  }

  async function open(): Promise<pg.Client> {
    const next = new pg.Client({ connectionString, keepAlive: true, application_name: 'open-agent-api listener' });
    next.on('error', (error) => {
      onError(error);
      lost(next);
    });
    next.on('end', () => lost(next));
    next.on('notification', dispatch);
    await next.connect();
    for (const channel of channels.keys()) await next.query(`LISTEN ${quote(channel)}`);
    return next;
  }

  function connect(reconnecting: boolean): Promise<pg.Client> {
    connecting ??= (async () => {
      for (;;) {
        try {
          const next = await open();
          if (closed) {
            await next.end().catch(() => undefined);
            throw new Error('The listener is closed.');
          }
          client = next;
          failures = 0;
          if (reconnecting) {
            for (const subscriptions of channels.values()) for (const subscription of subscriptions) subscription.onReconnect?.();
          }
          return next;
        } catch (error) {
          if (closed) throw error;
          onError(error);
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)]));
        }
      }
    })().finally(() => (connecting = undefined));
    return connecting;
  }

  function lost(which: pg.Client): void {
    if (client !== which) return;
    client = undefined;
    which.end().catch(() => undefined);
    if (!closed) void connect(true).catch(() => undefined);
  }

  function startChecks(): void {
    check ??= setInterval(() => {
      const current = client;
      if (!current) return;
      // A connection that died without a word (a partition, a dropped NAT entry) shows itself here.
      const timer = setTimeout(() => lost(current), CHECK_TIMEOUT_MS);
      current.query('SELECT 1').then(
        () => clearTimeout(timer),
        () => {
          clearTimeout(timer);
          lost(current);
        },
      );
    }, CHECK_MS);
    check.unref();
  }

  return {
    async listen(channel, handler, onReconnect) {
      if (closed) throw new Error('The listener is closed.');
      const subscription: Subscription = { handler, onReconnect };
      let subscriptions = channels.get(channel);
      const fresh = !subscriptions;
      if (!subscriptions) channels.set(channel, (subscriptions = new Set()));
      subscriptions.add(subscription);
      startChecks();
      const current = client ?? (await connect(false));
      // A connection opened after the channel was added listens already.
      if (fresh) await current.query(`LISTEN ${quote(channel)}`).catch((error: unknown) => onError(error));
      return async () => {
        subscriptions.delete(subscription);
        if (subscriptions.size > 0 || channels.get(channel) !== subscriptions) return;
        channels.delete(channel);
        await client?.query(`UNLISTEN ${quote(channel)}`).catch(() => undefined);
      };
    },
    async close() {
      closed = true;
      clearInterval(check);
      channels.clear();
      const current = client;
      client = undefined;
      await current?.end().catch(() => undefined);
    },
  };
}
