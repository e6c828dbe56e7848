// Accounts, API keys, access tokens and magic links, end to end on each store engine, with a real SMTP
// server on loopback receiving the sign-in mail.
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { SignJWT } from 'jose';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableEngines } from '../testing/database.ts';
import { startTestServer, type TestServer } from '../testing/harness.ts';
import { isDirectLocalRequest } from './magic-link.ts';

interface ReceivedMail {
  to: string[];
  text: string;
}

/** A real SMTP server on loopback that keeps what it receives. */
async function startSmtp(): Promise<{ url: string; mails: ReceivedMail[]; close(): Promise<void> }> {
  const mails: ReceivedMail[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), text: Buffer.concat(chunks).toString('utf8') });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const { port } = smtp.server.address() as { port: number };
  return { url: `smtp://127.0.0.1:${port}`, mails, close: () => new Promise((resolve) => smtp.close(() => resolve())) };
}

/** The mail's text with quoted-printable soft breaks and escapes undone. */
function decoded(mail: ReceivedMail): string {
  return mail.text.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** The sign-in token of a mail. */
function tokenOf(mail: ReceivedMail): string {
  const match = /verify\?token=(mlt_[A-Za-z0-9_-]+)/.exec(decoded(mail));
  if (!match?.[1]) throw new Error(`no token in mail:\n${mail.text}`);
  return match[1];
}

describe.each(await availableEngines())('identity on %s', (engine) => {
  let server: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let now = Date.parse('2026-11-20T10:00:00Z');

  beforeAll(async () => {
    smtp = await startSmtp();
    server = await startTestServer({ engine, clock: () => now, env: { SMTP_URL: smtp.url, MAIL_FROM: 'Tests <tests@example.com>' } });
  });
  afterAll(async () => {
    await server?.close();
    await smtp?.close();
  });

  const mailTo = async (email: string): Promise<ReceivedMail> => {
    for (let i = 0; i < 50; i++) {
      const mail = smtp.mails.findLast((m) => m.to.includes(email));
      if (mail) return mail;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`no mail to ${email}`);
  };

  describe('magic links', () => {
    it('sends a link by SMTP and signs the user in once; a new user is created on first sign-in', async () => {
      const email = `ml-${engine}@example.com`;
      const sent = await server.client().POST('/v1/auth/magic-link', { body: { email } });
      expect(sent.response.status).toBe(202);
      // Mail works: the link goes by mail only, even to a caller on this machine.
      expect(sent.data).not.toHaveProperty('dev_link');
      const mail = await mailTo(email);
      expect(decoded(mail)).toContain(`${server.url}/v1/auth/magic-link/verify?token=`);
      expect(mail.text).toMatch(/Content-Type: text\/html/i);
      expect(mail.text).toMatch(/Content-Type: text\/plain/i);
      const token = tokenOf(mail);
      expect(Buffer.from(token.slice(4), 'base64url').length).toBeGreaterThanOrEqual(16);

      const stored = await server.services.db.query<{ token_hash: string }>('SELECT token_hash FROM magic_links WHERE email = $1', [email]);
      expect(stored.map((row) => row.token_hash)).toEqual([createHash('sha256').update(token).digest('hex')]);

      const verified = await server.client().POST('/v1/auth/magic-link/verify', { body: { token } });
      expect(verified.response.status).toBe(200);
      expect(verified.data).toMatchObject({ token_type: 'Bearer', new_user: true, account: { email } });
      const me = await server.client(verified.data!.access_token).GET('/v1/account');
      expect(me.data?.email).toBe(email);

      const again = await server.client().POST('/v1/auth/magic-link/verify', { body: { token } });
      expect(again.response.status).toBe(400);
      expect(again.error?.error.code).toBe('invalid_token');

      await server.client().POST('/v1/auth/magic-link', { body: { email: email.toUpperCase() } });
      const second = await server.client().POST('/v1/auth/magic-link/verify', { body: { token: tokenOf(await mailTo(email)) } });
      expect(second.data).toMatchObject({ new_user: false, account: { id: verified.data!.account.id } });
    });

    it('answers the same 202 whether or not the address has an account', async () => {
      const known = await server.signUp(`known-${engine}@example.com`);
      const a = await server.client().POST('/v1/auth/magic-link', { body: { email: known.email } });
      const b = await server.client().POST('/v1/auth/magic-link', { body: { email: `nobody-${engine}@example.com` } });
      expect(a.response.status).toBe(202);
      expect(b.response.status).toBe(202);
      expect(a.data).toEqual(b.data);
    });

    it('expires links after 15 minutes', async () => {
      const email = `late-${engine}@example.com`;
      await server.client().POST('/v1/auth/magic-link', { body: { email } });
      const token = tokenOf(await mailTo(email));
      now += 16 * 60 * 1000;
      const late = await server.client().POST('/v1/auth/magic-link/verify', { body: { token } });
      expect(late.response.status).toBe(400);
      expect(late.error?.error.code).toBe('invalid_token');
    });

    it('redirects the emailed link to an allowed redirect_url with the token in the fragment, and refuses other origins', async () => {
      const email = `redirect-${engine}@example.com`;
      await server.client().POST('/v1/auth/magic-link', { body: { email, redirect_url: `${server.url}/signed-in` } });
      const token = tokenOf(await mailTo(email));
      const opened = await fetch(`${server.url}/v1/auth/magic-link/verify?token=${token}`, { redirect: 'manual' });
      expect(opened.status).toBe(302);
      const location = new URL(opened.headers.get('location')!);
      expect(`${location.origin}${location.pathname}`).toBe(`${server.url}/signed-in`);
      const fragment = new URLSearchParams(location.hash.slice(1));
      expect(fragment.get('token_type')).toBe('Bearer');
      const me = await server.client(fragment.get('access_token')!).GET('/v1/account');
      expect(me.data?.email).toBe(email);

      const open = await server.client().POST('/v1/auth/magic-link', { body: { email, redirect_url: 'https://evil.example/steal' } });
      expect(open.response.status).toBe(400);
      expect(open.error?.error.details?.[0]?.path).toBe('/body/redirect_url');
    });

    it('answers the emailed link with JSON when no redirect_url was given', async () => {
      const email = `plain-${engine}@example.com`;
      await server.client().POST('/v1/auth/magic-link', { body: { email } });
      const opened = await server.client().GET('/v1/auth/magic-link/verify', { params: { query: { token: tokenOf(await mailTo(email)) } } });
      expect(opened.response.status).toBe(200);
      expect(opened.data?.account.email).toBe(email);
    });

    it('rate-limits requests per email address', async () => {
      const email = `busy-${engine}@example.com`;
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        statuses.push((await server.client().POST('/v1/auth/magic-link', { body: { email } })).response.status);
      }
      expect(statuses.slice(0, 5)).toEqual([202, 202, 202, 202, 202]);
      const limited = await fetch(`${server.url}/v1/auth/magic-link`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ email }),
      });
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(limited.headers.get('ratelimit-policy')).toContain('q=5');
      expect((await limited.json()).error.code).toBe('rate_limited');
    });

    it('rate-limits requests per client address, whatever the email', async () => {
      // Its own app, so that its limiter starts empty and the other tests keep theirs.
      const fresh = await startTestServer({ engine, shareDatabaseWith: server, env: { SMTP_URL: smtp.url } });
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 21; i++) {
          const email = `many-${engine}-${i}@example.com`;
          statuses.push((await fresh.client().POST('/v1/auth/magic-link', { body: { email } })).response.status);
        }
        expect(statuses).toEqual([...Array<number>(20).fill(202), 429]);
        const limited = await fetch(`${fresh.url}/v1/auth/magic-link`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ email: `fresh-${engine}@example.com` }),
        });
        expect(limited.status).toBe(429);
        expect(limited.headers.get('ratelimit-policy')).toContain('q=20');
        expect((await limited.json()).error.code).toBe('rate_limited');
      } finally {
        await fresh.close();
      }
    });
  });

  describe('access tokens', () => {
    const signIn = async (email: string) => {
      await server.client().POST('/v1/auth/magic-link', { body: { email } });
      const verified = await server.client().POST('/v1/auth/magic-link/verify', { body: { token: tokenOf(await mailTo(email)) } });
      return verified.data!.access_token;
    };

    it('refuses tampered, unsigned, foreign-key and expired tokens with 401 and WWW-Authenticate', async () => {
      const token = await signIn(`jwt-${engine}@example.com`);
      const [header, payload, signature] = token.split('.') as [string, string, string];
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
      const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'usr_01JD3V7R2N8Q4X6Y0Z1A2B3C4D' })).toString('base64url')}.${signature}`;
      const unsigned = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload}.`;
      const foreign = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('x'.repeat(32)));
      for (const credential of [tampered, unsigned, foreign, 'garbage', `${token}x`]) {
        const response = await fetch(`${server.url}/v1/account`, { headers: { Authorization: `Bearer ${credential}` } });
        expect(response.status, credential).toBe(401);
        expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
        expect((await response.json()).error.code).toBe('unauthorized');
      }
      expect((await server.client(token).GET('/v1/account')).response.status).toBe(200);
      now += 8 * 24 * 3600 * 1000;
      expect((await server.client(token).GET('/v1/account')).response.status).toBe(401);
    });

    it('revokes the session on logout', async () => {
      const token = await signIn(`logout-${engine}@example.com`);
      const client = server.client(token);
      expect((await client.POST('/v1/auth/logout')).response.status).toBe(204);
      expect((await client.GET('/v1/account')).response.status).toBe(401);
    });

    it('refuses malformed Authorization headers', async () => {
      for (const header of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b']) {
        const response = await fetch(`${server.url}/v1/account`, { headers: { Authorization: header } });
        expect(response.status, header).toBe(401);
      }
    });
  });

  describe('API keys and the account', () => {
    it('shows the secret once, stores only its hash, and works as Bearer or X-API-Key', async () => {
      const { client, userId } = await server.signUp();
      const created = await client.POST('/v1/api-keys', { body: { name: 'laptop' } });
      expect(created.response.status).toBe(201);
      const secret = created.data!.secret;
      expect(secret).toMatch(/^oaa_[A-Za-z0-9_-]{43}$/);
      expect(created.data!.prefix).toBe(secret.slice(0, 10));

      const rows = await server.services.db.query<{ secret_hash: string }>('SELECT secret_hash FROM api_keys WHERE id = $1', [created.data!.id]);
      expect(rows[0]?.secret_hash).toBe(createHash('sha256').update(secret).digest('hex'));

      const listed = await client.GET('/v1/api-keys');
      expect(JSON.stringify(listed.data)).not.toContain(secret);
      const viaHeader = await fetch(`${server.url}/v1/account`, { headers: { 'X-API-Key': secret } });
      expect((await viaHeader.json()).id).toBe(userId);

      const fetched = await client.GET('/v1/api-keys/{keyId}', { params: { path: { keyId: created.data!.id } } });
      expect(fetched.data).toMatchObject({ name: 'laptop', prefix: created.data!.prefix });
      expect(fetched.data).not.toHaveProperty('secret');
    });

    it('revokes a key at once on DELETE', async () => {
      const { client } = await server.signUp();
      const created = await client.POST('/v1/api-keys', { body: { name: 'temp' } });
      const temp = server.client(created.data!.secret);
      expect((await temp.GET('/v1/account')).response.status).toBe(200);
      expect((await client.DELETE('/v1/api-keys/{keyId}', { params: { path: { keyId: created.data!.id } } })).response.status).toBe(204);
      expect((await temp.GET('/v1/account')).response.status).toBe(401);
      expect((await client.GET('/v1/api-keys/{keyId}', { params: { path: { keyId: created.data!.id } } })).response.status).toBe(404);
    });

    it('refuses an expired key', async () => {
      const { client } = await server.signUp();
      const created = await client.POST('/v1/api-keys', { body: { name: 'short', expires_at: new Date(now + 60_000).toISOString() } });
      const short = server.client(created.data!.secret);
      expect((await short.GET('/v1/account')).response.status).toBe(200);
      now += 120_000;
      expect((await short.GET('/v1/account')).response.status).toBe(401);
      const past = await client.POST('/v1/api-keys', { body: { name: 'past', expires_at: new Date(now - 1000).toISOString() } });
      expect(past.response.status).toBe(400);
    });

    it('pages through keys newest first', async () => {
      const { client } = await server.signUp();
      for (const name of ['a', 'b', 'c']) await client.POST('/v1/api-keys', { body: { name } });
      const first = await client.GET('/v1/api-keys', { params: { query: { limit: 2 } } });
      expect(first.data?.data.map((k) => k.name)).toEqual(['c', 'b']);
      expect(first.data?.has_more).toBe(true);
      const second = await client.GET('/v1/api-keys', { params: { query: { limit: 2, after: first.data!.next_cursor! } } });
      expect(second.data?.data.map((k) => k.name)).toEqual(['a', 'test']);
      expect(second.data).toMatchObject({ has_more: false, next_cursor: null });
      const bad = await client.GET('/v1/api-keys', { params: { query: { after: 'agt_01JD3V7R2N8Q4X6Y0Z1A2B3C4D' } } });
      expect(bad.response.status).toBe(400);
    });

    it("hides another user's keys: 404 to read or delete them", async () => {
      const alice = await server.signUp();
      const bob = await server.signUp();
      const key = await alice.client.POST('/v1/api-keys', { body: { name: 'mine' } });
      const path = { params: { path: { keyId: key.data!.id } } };
      expect((await bob.client.GET('/v1/api-keys/{keyId}', path)).response.status).toBe(404);
      expect((await bob.client.DELETE('/v1/api-keys/{keyId}', path)).response.status).toBe(404);
      expect((await alice.client.GET('/v1/api-keys/{keyId}', path)).response.status).toBe(200);
      const bobs = await bob.client.GET('/v1/api-keys');
      expect(bobs.data?.data.map((k) => k.id)).not.toContain(key.data!.id);
    });

    it('reads and renames the account', async () => {
      const { client, email } = await server.signUp();
      const account = await client.GET('/v1/account');
      expect(account.data).toMatchObject({ object: 'account', email, name: null, plan_id: 'free', subscription_status: 'none' });
      const renamed = await client.PATCH('/v1/account', { body: { name: 'Ada' } });
      expect(renamed.data?.name).toBe('Ada');
      const cleared = await client.PATCH('/v1/account', { body: { name: null } });
      expect(cleared.data?.name).toBeNull();
      const empty = await client.PATCH('/v1/account', { body: {} });
      expect(empty.response.status).toBe(400);
    });
  });
});

describe('sign-in links of a development server without mail', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  /** POST /v1/auth/magic-link with headers fetch would not let a test set (Host). */
  const ask = (email: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const body = JSON.stringify({ email, redirect_url: `${server.url}/playground/` });
      const call = request(`${server.url}/v1/auth/magic-link`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers } }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
      });
      call.on('error', reject);
      call.end(body);
    });

  it('answers the link to a caller on this machine, and the link signs in and comes back to the page', async () => {
    const sent = await ask('dev-link@example.com');
    expect(sent.status).toBe(202);
    expect(sent.body.dev_link).toMatch(new RegExp(`^${server.url}/v1/auth/magic-link/verify\\?token=mlt_`));
    const opened = await fetch(String(sent.body.dev_link), { redirect: 'manual' });
    expect(opened.status).toBe(302);
    const location = new URL(opened.headers.get('location')!);
    expect(location.pathname).toBe('/playground/');
    const me = await server.client(new URLSearchParams(location.hash.slice(1)).get('access_token')!).GET('/v1/account');
    expect(me.data?.email).toBe('dev-link@example.com');
  });

  it('keeps the link from requests relayed by a proxy or addressed to another host name', async () => {
    const relayed: Record<string, string>[] = [
      { 'X-Forwarded-For': '203.0.113.7' },
      { Forwarded: 'for=203.0.113.7' },
      { 'X-Real-IP': '203.0.113.7' },
      { Host: 'playground.example.com' },
    ];
    for (const headers of relayed) {
      const sent = await ask(`relayed-${Object.keys(headers)[0]}@example.com`, headers);
      expect(sent.status, JSON.stringify(headers)).toBe(202);
      expect(sent.body, JSON.stringify(headers)).not.toHaveProperty('dev_link');
      expect(sent.body.message).toBe('If that address can receive mail, a sign-in link is on its way.');
    }
  });

  it('tells a direct local request from others', () => {
    expect(isDirectLocalRequest('127.0.0.1', { host: 'localhost:3000' })).toBe(true);
    expect(isDirectLocalRequest('::ffff:127.0.0.1', { host: '127.0.0.1:3000' })).toBe(true);
    expect(isDirectLocalRequest('::1', { host: '[::1]:3000' })).toBe(true);
    expect(isDirectLocalRequest('192.168.1.20', { host: 'localhost:3000' })).toBe(false);
    expect(isDirectLocalRequest('127.0.0.1', { host: '192.168.1.5:3000' })).toBe(false);
    expect(isDirectLocalRequest('127.0.0.1', {})).toBe(false);
    expect(isDirectLocalRequest('127.0.0.1', { host: 'localhost', 'x-forwarded-host': 'public.example' })).toBe(false);
  });
});
