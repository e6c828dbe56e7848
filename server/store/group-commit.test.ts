// Group commit: the calls of one turn of the event loop share a write, calls made during a write share the
// next, deferred calls wait for the window, every caller gets its own answer, and a bad item fails only its
// own call.
import { describe, expect, it } from 'vitest';
import { groupCommit } from './group-commit.ts';

describe('groupCommit', () => {
  it('writes the calls of one turn together, in order, and answers each its own result', async () => {
    const writes: number[][] = [];
    const double = groupCommit(async (items: readonly number[]) => {
      writes.push([...items]);
      return items.map((item) => item * 2);
    });
    expect(await Promise.all([double(1), double(2), double(3)])).toEqual([2, 4, 6]);
    expect(writes).toEqual([[1, 2, 3]]);
    expect(await double(4)).toBe(8);
    expect(writes).toEqual([[1, 2, 3], [4]]);
  });

  it('gathers the calls made while a write is under way into the next write', async () => {
    const writes: string[][] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const echo = groupCommit(async (items: readonly string[]) => {
      writes.push([...items]);
      if (writes.length === 1) await held;
      return items;
    });
    const first = echo('a');
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([['a']]);
    const later = [echo('b'), echo('c')];
    await new Promise((resolve) => setTimeout(resolve, 10));
    // Still waiting for the first write: nothing more has gone out.
    expect(writes).toEqual([['a']]);
    release();
    expect(await Promise.all([first, ...later])).toEqual(['a', 'b', 'c']);
    expect(writes).toEqual([['a'], ['b', 'c']]);
  });

  it('writes each call of a failed batch again on its own, so that only the bad one fails', async () => {
    const writes: number[][] = [];
    const store = groupCommit(async (items: readonly number[]) => {
      writes.push([...items]);
      if (items.includes(13)) throw new Error('unlucky');
      return items.map(() => 'stored');
    });
    const results = await Promise.allSettled([store(1), store(13), store(2)]);
    expect(results.map((result) => (result.status === 'fulfilled' ? result.value : (result.reason as Error).message))).toEqual(['stored', 'unlucky', 'stored']);
    expect(writes).toEqual([[1, 13, 2], [1], [13], [2]]);
  });

  it('splits what waits into writes of at most maxBatch calls', async () => {
    const sizes: number[] = [];
    const count = groupCommit(
      async (items: readonly number[]) => {
        sizes.push(items.length);
        return items;
      },
      { maxBatch: 2 },
    );
    await Promise.all([1, 2, 3, 4, 5].map((item) => count(item)));
    expect(sizes).toEqual([2, 2, 1]);
  });

  it('holds deferred calls for the window, which a call that is not deferred or a flush ends', async () => {
    const writes: string[][] = [];
    // Longer than the test may take: only an early end lets it pass.
    const store = groupCommit(
      async (items: readonly string[]) => {
        writes.push([...items]);
        return items;
      },
      { windowMs: 120_000 },
    );
    const deferred = store('later', { defer: true });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(writes).toEqual([]);
    expect(await Promise.all([deferred, store('now')])).toEqual(['later', 'now']);
    expect(writes).toEqual([['later', 'now']]);

    const waiting = store('flushed', { defer: true });
    await store.flush();
    expect(writes).toEqual([['later', 'now'], ['flushed']]);
    expect(await waiting).toBe('flushed');
  });
});
