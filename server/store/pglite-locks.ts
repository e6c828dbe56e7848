// PGlite's locks, taken without leaving each statement behind for the old generation.
//
// PGlite serializes its work with the async-mutex it bundles, built for ES2015: `runExclusive` there wraps
// its body in a generator function made anew on each call and run through a promise helper. Running a
// generator function made per call gives V8 a new initial map for it, and maps live in the old generation.
// That map holds the generator function, which holds the call's callback and all the callback holds, so
// every statement (its callback, its parameters, whatever they reach) outlives every young collection and
// waits in the old generation for the next full one. A PGlite statement in a loop left 3.3 MB alive at each
// young collection; with `runExclusive` as a native async function, 200 bytes (`node --trace-gc-nvp`).
//
// The semaphore is reached through the Mutex that PGlite exports, which is the bundled one its own locks
// use; the replacement does what the original does, in the same order.
import { Mutex } from '@electric-sql/pglite';

interface Semaphore {
  acquire(weight?: number): Promise<[number, () => void]>;
  runExclusive<T>(callback: (value: number) => T | Promise<T>, weight?: number): Promise<T>;
}

let replaced = false;

/** Gives PGlite's semaphores a `runExclusive` that is a native async function; answers whether it could. */
export function lockWithoutGenerators(): boolean {
  if (replaced) return true;
  const semaphore = (new Mutex() as unknown as { _semaphore?: Semaphore })._semaphore;
  const prototype = semaphore && (Object.getPrototypeOf(semaphore) as Semaphore);
  // A PGlite whose mutex looks different keeps its own; the test in pglite-locks.test.ts says so.
  if (!prototype || typeof prototype.acquire !== 'function' || typeof prototype.runExclusive !== 'function') return false;
  prototype.runExclusive = async function runExclusive<T>(this: Semaphore, callback: (value: number) => T | Promise<T>, weight = 1): Promise<T> {
    const [value, release] = await this.acquire(weight);
    try {
      return await callback(value);
    } finally {
      release();
    }
  };
  replaced = true;
  return true;
}
