// Gives memory back once the server is quiet. Start-up and busy spells grow V8's young generation to its
// largest (and leave garbage in the old one), and V8 keeps those pages for as long as nothing allocates,
// which at rest is for good: an idle server held about 215 MB on PostgreSQL where 140 MB is live
// (bench/startup.ts). One memory-reducing collection (V8's "last resort": full collections until nothing
// more is freed, and the young generation shrunk) returns them. It blocks the event loop for a while
// (about 0.2 s on a 2-core machine), so it runs only when no request is in flight and none arrived for a
// quiet spell, once per spell.
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

type Collect = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

let collect: Collect | undefined;

/** V8's collector, taken from a fresh context with the flag that exposes it on for that moment only. */
function collector(): Collect {
  if (!collect) {
    v8.setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as Collect;
    v8.setFlagsFromString('--no-expose-gc');
  }
  return collect;
}

/** A collection that returns to the system whatever memory V8 can spare. */
export function reduceMemory(): void {
  collector()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

export interface MemoryReducerOptions {
  /** Quiet time after start-up before the first reduction. */
  afterStartMs: number;
  /** Quiet time after the last request before memory is reduced again. */
  quietMs: number;
  /** Whether requests are in flight now. */
  busy: () => boolean;
  /** Reduces memory; reduceMemory unless a test says otherwise. */
  reduce?: () => void;
}

export interface MemoryReducer {
  /** A request arrived. */
  activity(): void;
  stop(): void;
}

export function createMemoryReducer(options: MemoryReducerOptions): MemoryReducer {
  const reduce = options.reduce ?? reduceMemory;
  let last = performance.now();
  let quiet = options.afterStartMs;
  let pending = true;
  const timer = setInterval(() => {
    if (!pending || options.busy() || performance.now() - last < quiet) return;
    pending = false;
    quiet = options.quietMs;
    reduce();
  }, Math.max(50, Math.min(options.afterStartMs, options.quietMs) / 2));
  timer.unref();
  return {
    activity() {
      last = performance.now();
      pending = true;
    },
    stop() {
      clearInterval(timer);
    },
  };
}
