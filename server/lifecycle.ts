// Tracks requests in flight so that shutdown can stop taking work, let open streams end with a final
// event, and wait for what was acknowledged to finish.
export interface Lifecycle {
  /** Aborted when shutdown begins. */
  readonly shuttingDown: AbortSignal;
  readonly inFlight: number;
  /** Counts one request until the returned function is called. */
  track(): () => void;
  /** Begins shutdown; resolves true when nothing is in flight any more, false when the timeout passed first. */
  drain(timeoutMs: number): Promise<boolean>;
}

export function createLifecycle(): Lifecycle {
  const controller = new AbortController();
  let inFlight = 0;
  let idle: (() => void) | undefined;
  return {
    shuttingDown: controller.signal,
    // eslint-disable-next-line no-restricted-syntax -- made once per process, not per request
    get inFlight() {
      return inFlight;
    },
    track() {
      inFlight += 1;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        inFlight -= 1;
        if (inFlight === 0) idle?.();
      };
    },
    drain(timeoutMs) {
      controller.abort(new Error('The server is shutting down.'));
      if (inFlight === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        idle = () => {
          clearTimeout(timer);
          resolve(true);
        };
      });
    },
  };
}
