// PGlite's locks without a generator per statement (pglite-locks.ts). What a statement leaves in the old
// generation is measured in fresh Node processes with the collector exposed: a few thousand statements one
// at a time, two young collections to promote whatever survived, and the old generation's growth per
// statement, with PGlite's own `runExclusive` (the control) and with the replacement.
import { Mutex } from '@electric-sql/pglite';
import { describe, expect, it } from 'vitest';
import { evalModule, OLD_GENERATION_PROBE } from '../testing/processes.ts';
import { lockWithoutGenerators } from './pglite-locks.ts';

async function oldBytesPerStatement(replace: boolean): Promise<number> {
  return evalModule<number>(
    `
    import { PGlite } from '@electric-sql/pglite';
    ${OLD_GENERATION_PROBE}
    ${replace ? `(await import('./server/store/pglite-locks.ts')).lockWithoutGenerators();` : ''}
    const pg = await PGlite.create();
    const payload = 'x'.repeat(512);
    const perStatement = await oldBytesPer(async (count) => { for (let i = 0; i < count; i++) await pg.query('select length($1::text) as n', [payload + i]); }, 500, 3000);
    await pg.close();
    console.log(JSON.stringify(perStatement));
  `,
    ['--expose-gc'],
  );
}

describe("PGlite's locks", () => {
  it('leave nothing of a statement in the old generation once it has run', { timeout: 120_000 }, async () => {
    // About 3,460 bytes a statement with PGlite's own, its 512-character parameter among them; about 830
    // with the replacement, the same with a parameter of 8 characters or 2,048: what query() itself keeps
    // for a while, none of it the statement's.
    expect(await oldBytesPerStatement(false)).toBeGreaterThan(2048);
    expect(await oldBytesPerStatement(true)).toBeLessThan(1280);
  });

  it('are replaced wherever the server opens PGlite', async () => {
    const script = `
      import { Mutex } from '@electric-sql/pglite';
      const kind = () => Object.getPrototypeOf(new Mutex()._semaphore).runExclusive.constructor.name;
      const before = kind();
      const db = await (await import('./server/store/pglite.ts')).openPglite();
      console.log(JSON.stringify([before, kind()]));
      await db.close();
    `;
    expect(await evalModule(script)).toEqual(['Function', 'AsyncFunction']);
  });

  it('still run one holder at a time, in order, and let go when the holder throws', async () => {
    expect(lockWithoutGenerators()).toBe(true);
    const mutex = new Mutex();
    const steps: string[] = [];
    const holder = (name: string, fail = false) =>
      mutex.runExclusive(async () => {
        steps.push(`${name} in`);
        await new Promise((resolve) => setTimeout(resolve, 5));
        steps.push(`${name} out`);
        if (fail) throw new Error(`${name} failed`);
        return name;
      });
    const results = await Promise.allSettled([holder('a'), holder('b', true), holder('c')]);
    expect(steps).toEqual(['a in', 'a out', 'b in', 'b out', 'c in', 'c out']);
    expect(results.map((result) => (result.status === 'fulfilled' ? result.value : (result.reason as Error).message))).toEqual(['a', 'b failed', 'c']);
    expect(mutex.isLocked()).toBe(false);
  });
});
