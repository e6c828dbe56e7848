// Memory goes back once the server is quiet: the collection frees what V8 held, and it runs only after a
// quiet spell with nothing in flight, once per spell.
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemoryReducer, reduceMemory } from './memory.ts';

describe('memory at rest', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('gives back the heap that garbage took, without leaving gc exposed to other contexts', () => {
    const garbage = () => Array.from({ length: 200_000 }, (_, i) => ({ i, text: `item ${i}` })).length;
    expect(garbage()).toBe(200_000);
    const grown = v8.getHeapStatistics().total_heap_size;
    reduceMemory();
    expect(v8.getHeapStatistics().total_heap_size).toBeLessThan(grown);
    expect(runInNewContext('typeof gc')).toBe('undefined');
  });

  it('reduces after start-up and after each quiet spell, never while requests are in flight', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    let inFlight = 0;
    const reduce = vi.fn();
    const reducer = createMemoryReducer({ afterStartMs: 1_000, quietMs: 10_000, busy: () => inFlight > 0, reduce });
    vi.advanceTimersByTime(600);
    expect(reduce).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1_000);
    expect(reduce).toHaveBeenCalledTimes(1);
    // Quiet and nothing new: once per spell.
    vi.advanceTimersByTime(60_000);
    expect(reduce).toHaveBeenCalledTimes(1);

    reducer.activity();
    inFlight = 1;
    vi.advanceTimersByTime(30_000);
    expect(reduce).toHaveBeenCalledTimes(1);
    inFlight = 0;
    vi.advanceTimersByTime(1_000);
    expect(reduce).toHaveBeenCalledTimes(2);

    reducer.activity();
    vi.advanceTimersByTime(5_000);
    expect(reduce).toHaveBeenCalledTimes(2);
    reducer.stop();
    vi.advanceTimersByTime(60_000);
    expect(reduce).toHaveBeenCalledTimes(2);
  });
});
