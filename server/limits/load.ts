// Load shedding: when the event loop falls behind, new runs and model calls are refused (503 with
// Retry-After) before they are started, so that what is already running (streams, runs, /health and
// /ready, which no guard touches) keeps its share of the loop. The signal is the event loop's own delay:
// the 99th percentile of the last half second's samples, or how late the sampling timer itself fired,
// whichever is worse. A server whose loop stays late by more than the threshold for two windows in a row
// is past what it can serve; one late window alone is a stall (a module loaded on first use, a large
// garbage collection, start-up) that is over by the time anyone could be refused, so it sheds nothing.
import { monitorEventLoopDelay } from 'node:perf_hooks';

const WINDOW_MS = 500;
/** Late windows in a row that make an overload. */
const SUSTAINED_WINDOWS = 2;

export interface LoadMonitor {
  /** The event loop's recent delay in milliseconds. */
  delayMs(): number;
  /** Whether new work should be refused now. */
  overloaded(): boolean;
  /**
   * Forgets the delay so far: the loop was blocked on purpose, by work done only while nothing was in
   * flight (see server/memory.ts), which says nothing about the load.
   */
  discount(): void;
  stop(): void;
}

/** `thresholdMs` 0 never sheds. */
export function createLoadMonitor(thresholdMs: number): LoadMonitor {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let recent = 0;
  let lateWindows = 0;
  let expected = performance.now() + WINDOW_MS;
  // A discounted block may still be in the samples the histogram takes after it: its window is skipped.
  let discounted = false;
  const timer = setInterval(() => {
    const now = performance.now();
    recent = discounted ? 0 : Math.max(histogram.percentile(99) / 1e6, now - expected);
    discounted = false;
    lateWindows = thresholdMs > 0 && recent > thresholdMs ? lateWindows + 1 : 0;
    expected = now + WINDOW_MS;
    histogram.reset();
  }, WINDOW_MS);
  timer.unref();
  return {
    delayMs: () => recent,
    overloaded: () => lateWindows >= SUSTAINED_WINDOWS,
    discount() {
      discounted = true;
      recent = 0;
      lateWindows = 0;
    },
    stop() {
      clearInterval(timer);
      histogram.disable();
    },
  };
}
