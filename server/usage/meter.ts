// Records usage as it happens: model calls' tokens per user, API key and model (a row sums the calls of one
// batch, see batchStatement), with monthly and daily rollups so that quota checks and GET /v1/account/usage
// read a row instead of scanning. Records are written by group commit (store/group-commit.ts), so that
// under load the store sees one write per batch rather than one per call. `record` resolves once its
// record is stored. Callers that do not wait for that (the model endpoints, which answer first) defer their
// records, which then gather for the batch window before they are written.
import type { Queryable, SqlValue } from '../store/db.ts';
import { groupCommit } from '../store/group-commit.ts';

export type UsageKind = 'chat' | 'completion' | 'embedding' | 'run';

export interface UsageRecord {
  userId: string;
  apiKeyId: string | null;
  model: string;
  kind: UsageKind;
  promptTokens: number;
  completionTokens: number;
}

/** The month `monthOf` answered last, with where it starts and ends: most calls fall in it. */
let lastMonth = { start: 0, end: 0, name: '' };

/** The first day of `time`'s UTC month, as `YYYY-MM-01`. */
export function monthOf(time: number): string {
  if (time >= lastMonth.start && time < lastMonth.end) return lastMonth.name;
  const date = new Date(time);
  const start = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  lastMonth = { start, end: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1), name: new Date(start).toISOString().slice(0, 10) };
  return lastMonth.name;
}

export function dayOf(time: number): string {
  return new Date(time).toISOString().slice(0, 10);
}

export interface UsageMeterOptions {
  /**
   * How long a user's token total for the month may be served from memory, in milliseconds (0: always
   * read). This process's own records count at once; other processes' within this time.
   */
  monthlyCacheMs?: number;
  /** Records per statement at most. */
  maxBatch?: number;
  /**
   * How long deferred records gather before they are written, in milliseconds (0: at once). Writes block
   * PGlite, which runs on the main thread; gathering for a while turns one write per call into one per
   * interval. A record that is not deferred ends the window at once.
   */
  batchWindowMs?: number;
}

interface Pending {
  usage: UsageRecord;
  at: number;
  /** monthOf(at), computed once. */
  period: string;
}

/**
 * One statement that stores `batch` and adds it to the monthly rollups. The calls of one user, API key,
 * model and kind in one month go into one row, which counts them (`requests`) and sums their tokens: under
 * load a batch is hundreds of calls from few such groups, and a row costs the store far more than adding
 * a call to one. The rows travel as one array per column, so that the statement is the same text with the
 * same parameters whatever the batch's size.
 */
function batchStatement(batch: readonly Pending[]): { sql: string; params: SqlValue[] } {
  const groups = new Map<string, { usage: UsageRecord; requests: number; promptTokens: number; completionTokens: number; at: number; period: string }>();
  for (const { usage, at, period } of batch) {
    const key = `${usage.userId}\n${usage.apiKeyId ?? ''}\n${usage.model}\n${usage.kind}\n${period}`;
    const group = groups.get(key);
    if (group) {
      group.requests++;
      group.promptTokens += usage.promptTokens;
      group.completionTokens += usage.completionTokens;
      group.at = Math.min(group.at, at);
    } else {
      groups.set(key, { usage, requests: 1, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, at, period });
    }
  }
  const rows = [...groups.values()];
  // One statement, so that records and rollups land together without a transaction's round trips.
  const sql = `WITH input (user_id, api_key_id, model, kind, requests, prompt_tokens, completion_tokens, created_at, period) AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::int[], $7::int[], $8::timestamptz[], $9::date[])
     ),
     records AS (
       INSERT INTO usage_records (user_id, api_key_id, model, kind, requests, prompt_tokens, completion_tokens, total_tokens, created_at)
       SELECT user_id, api_key_id, model, kind, requests, prompt_tokens, completion_tokens, prompt_tokens + completion_tokens, created_at FROM input
     )
     INSERT INTO usage_monthly (user_id, period, requests, tokens)
     SELECT user_id, period, sum(requests), sum(prompt_tokens + completion_tokens) FROM input GROUP BY user_id, period
     ON CONFLICT (user_id, period) DO UPDATE
       SET requests = usage_monthly.requests + EXCLUDED.requests, tokens = usage_monthly.tokens + EXCLUDED.tokens`;
  const params = [
    rows.map((row) => row.usage.userId),
    rows.map((row) => row.usage.apiKeyId),
    rows.map((row) => row.usage.model),
    rows.map((row) => row.usage.kind),
    rows.map((row) => row.requests),
    rows.map((row) => row.promptTokens),
    rows.map((row) => row.completionTokens),
    rows.map((row) => new Date(row.at)),
    rows.map((row) => row.period),
  ];
  return { sql, params };
}

export function createUsageMeter(db: Queryable, clock: () => number, options: UsageMeterOptions = {}) {
  const monthlyCacheMs = options.monthlyCacheMs ?? 0;
  const maxBatch = options.maxBatch ?? 500;
  const batchWindowMs = options.batchWindowMs ?? 0;
  /** Tokens recorded but not yet stored, per user and month, so that totals read meanwhile include them. */
  const unstored = new Map<string, number>();
  const monthly = new Map<string, { period: string; tokens: number; expiresAt: number }>();

  const countRun = groupCommit(async (runs: readonly { userId: string; day: string }[]) => {
    await db.query(
      `INSERT INTO usage_daily (user_id, day, runs)
       SELECT user_id, day, count(*) FROM unnest($1::text[], $2::date[]) AS t(user_id, day) GROUP BY user_id, day
       ON CONFLICT (user_id, day) DO UPDATE SET runs = usage_daily.runs + EXCLUDED.runs`,
      [runs.map((run) => run.userId), runs.map((run) => run.day)],
    );
    return runs.map(() => undefined);
  });

  const addUnstored = (pending: Pending, sign: 1 | -1) => {
    const key = `${pending.usage.userId} ${pending.period}`;
    const tokens = (unstored.get(key) ?? 0) + sign * (pending.usage.promptTokens + pending.usage.completionTokens);
    if (tokens === 0) unstored.delete(key);
    else unstored.set(key, tokens);
  };

  // One bad record (its user deleted meanwhile, say) does not cost the others theirs: group commit writes
  // each of a failed batch again on its own.
  const commit = groupCommit(
    async (batch: readonly Pending[]) => {
      const { sql, params } = batchStatement(batch);
      await db.query(sql, params);
      return batch.map(() => undefined);
    },
    { maxBatch, windowMs: batchWindowMs },
  );

  return {
    /** Stores a record; `defer` lets it wait for the batch window, for callers that do not wait for it. */
    async record(usage: UsageRecord, options: { defer?: boolean } = {}): Promise<void> {
      const at = clock();
      const period = monthOf(at);
      const cached = monthly.get(usage.userId);
      if (cached?.period === period) cached.tokens += usage.promptTokens + usage.completionTokens;
      const pending = { usage, at, period };
      addUnstored(pending, 1);
      try {
        await commit(pending, { defer: options.defer === true });
      } finally {
        addUnstored(pending, -1);
      }
    },

    /** Writes what is waiting now and resolves once every record so far is stored (or has failed). */
    flush(): Promise<void> {
      return commit.flush();
    },

    /** Counts one run started today; runs that start at once are counted in one statement. */
    recordRun(userId: string): Promise<void> {
      return countRun({ userId, day: dayOf(clock()) });
    },

    async tokensThisMonth(userId: string): Promise<number> {
      const period = monthOf(clock());
      const cached = monthly.get(userId);
      if (cached?.period === period && cached.expiresAt > performance.now()) return cached.tokens;
      const rows = await db.query<{ tokens: number }>('SELECT tokens FROM usage_monthly WHERE user_id = $1 AND period = $2', [userId, period]);
      const tokens = (rows[0]?.tokens ?? 0) + (unstored.get(`${userId} ${period}`) ?? 0);
      if (monthlyCacheMs > 0) {
        monthly.delete(userId);
        // Maps iterate in insertion order: the first key is the oldest entry.
        if (monthly.size >= 10_000) monthly.delete(monthly.keys().next().value!);
        monthly.set(userId, { period, tokens, expiresAt: performance.now() + monthlyCacheMs });
      }
      return tokens;
    },

    async runsToday(userId: string): Promise<number> {
      const rows = await db.query<{ runs: number }>('SELECT runs FROM usage_daily WHERE user_id = $1 AND day = $2', [userId, dayOf(clock())]);
      return rows[0]?.runs ?? 0;
    },

    /** Token totals per model since `since`. */
    async byModel(userId: string, since: Date) {
      return db.query<{ model: string; requests: number; prompt_tokens: number; completion_tokens: number; total_tokens: number }>(
        `SELECT model, sum(requests)::int8 AS requests, sum(prompt_tokens)::int8 AS prompt_tokens,
                sum(completion_tokens)::int8 AS completion_tokens, sum(total_tokens)::int8 AS total_tokens
         FROM usage_records WHERE user_id = $1 AND created_at >= $2 GROUP BY model ORDER BY model`,
        [userId, since],
      );
    },
  };
}

export type UsageMeter = ReturnType<typeof createUsageMeter>;
