// Prometheus metrics (prom-client). Each app instance has its own registry, since tests run several apps
// in one process; the Node process metrics (memory, CPU, event loop, GC) describe the process, so they
// live in one registry per process and are appended to every instance's exposition.
// The hot path is one request: the per-operation and per-status children are looked up once and kept,
// so that recording a request is one increment and one observation, with no label lookup.
import type { Request, RequestHandler, Response } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RunStatus } from '../runs/store.ts';

/** The exposition format version 0.0.4 that Prometheus scrapes, as prom-client writes it. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4';

const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const UPSTREAM_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
/** Methods a client may send are unbounded; anything else is counted as OTHER, so that labels stay few. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** nginx's status for a client that closed the connection before the response was sent. */
const CLIENT_CLOSED = 499;
/** The operation label of requests that matched no operation (404, 405, docs assets, refusals at shutdown). */
const NO_OPERATION = 'none';

/** How an upstream model call ended: answered, one of the gateway's failure kinds, or abandoned by the caller. */
export type UpstreamOutcome = 'ok' | 'aborted' | 'error' | 'rate_limited' | 'server' | 'timeout' | 'network' | 'refused' | 'not_found';

/** Records one upstream call of a model: seconds to its answer (for a stream, to its first item). */
export type UpstreamObserver = (outcome: UpstreamOutcome, seconds: number) => void;

export interface UpstreamMetrics {
  /** The observer for one provider and model; keep it, the lookup is the expensive part. */
  upstream(provider: string, model: string): UpstreamObserver;
}

export interface RunMetrics {
  /** A run stopped executing: completed, failed, canceled, or halted for client tool results. */
  runFinished(status: RunStatus): void;
}

/** Counts requests of one operation and times them. */
export interface OperationRecorder {
  record(status: number, seconds: number): void;
}

export interface Metrics extends UpstreamMetrics, RunMetrics {
  /** Open server-sent event streams. */
  openStreams: { inc(): void; dec(): void };
  /** Rate-limit commands Redis failed or did not answer in time, counted on this server instead. */
  rateLimitStoreFailures: { inc(): void };
  /** The recorder for one operation, to be kept with its route. */
  operation(operationId: string, method: string): OperationRecorder;
  /** Starts the clock of every request and records it when its connection closes; mount it first. */
  requests: RequestHandler;
  /** Reads the number of runs executing on this server at each scrape. */
  countLiveRuns(read: () => number): void;
  /** Reads the size of the embedded database's WebAssembly memory at each scrape. */
  measureEmbeddedDatabase(read: () => number): void;
  /** The exposition: this instance's metrics, then the process's. */
  render(): Promise<string>;
}

let processRegistry: Registry | undefined;

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

declare module 'express-serve-static-core' {
  interface Request {
    /** When the request arrived (performance.now()), for its duration. */
    metricsStart?: number;
    /** The operation the request matched, set when its route runs. */
    operationRecorder?: OperationRecorder;
  }
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by operationId (none: no operation matched), method and status (499: the client left first).',
    labelNames: ['operation', 'method', 'status'] as const,
    registers,
  });
  const durations = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from a request to the end of its response (for event streams, the whole stream), by operationId.',
    labelNames: ['operation'] as const,
    buckets: REQUEST_BUCKETS,
    registers,
  });
  const upstreamDurations = new Histogram({
    name: 'model_upstream_duration_seconds',
    help: "Time a model's provider took to answer (for streams, to the first item), by provider, public model id and outcome; each fallback attempt counts.",
    labelNames: ['provider', 'model', 'outcome'] as const,
    buckets: UPSTREAM_BUCKETS,
    registers,
  });
  const openStreams = new Gauge({ name: 'http_sse_streams_open', help: 'Server-sent event streams open now.', registers });
  const rateLimitStoreFailures = new Counter({
    name: 'rate_limit_store_failures_total',
    help: 'Rate-limit commands that Redis failed or did not answer in time; each was counted on this server alone (the limiter fails open).',
    registers,
  });
  const runsFinished = new Counter({
    name: 'runs_finished_total',
    help: 'Agent and team runs that stopped executing on this server, by status (requires_action: halted for client tool results).',
    labelNames: ['status'] as const,
    registers,
  });
  let liveRuns: () => number = () => 0;
  new Gauge({
    name: 'runs_live',
    help: 'Agent and team runs executing on this server now.',
    registers,
    collect() {
      this.set(liveRuns());
    },
  });
  let embeddedBytes: () => number = () => 0;
  new Gauge({
    name: 'database_embedded_memory_bytes',
    help: "The embedded database's (PGlite's) WebAssembly memory: its buffer pool, caches and work memory. It grows to its high-water mark and never shrinks, as WebAssembly memory cannot; 0 on PostgreSQL.",
    registers,
    collect() {
      this.set(embeddedBytes());
    },
  });
  processMetrics();

  const recorders = new Map<string, OperationRecorder>();
  const operation = (operationId: string, method: string): OperationRecorder => {
    const key = `${operationId} ${method}`;
    const known = recorders.get(key);
    if (known) return known;
    const duration = durations.labels(operationId);
    const byStatus = new Map<number, { inc(): void }>();
    const recorder: OperationRecorder = {
      record(status, seconds) {
        let counter = byStatus.get(status);
        if (!counter) {
          counter = requests.labels(operationId, method, String(status));
          byStatus.set(status, counter);
        }
        counter.inc();
        duration.observe(seconds);
      },
    };
    recorders.set(key, recorder);
    return recorder;
  };

  function recordResponse(this: Response): void {
    const req: Request = this.req;
    const seconds = (performance.now() - (req.metricsStart ?? 0)) / 1000;
    const recorder = req.operationRecorder ?? operation(NO_OPERATION, KNOWN_METHODS.has(req.method) ? req.method : 'OTHER');
    recorder.record(this.headersSent || this.writableFinished ? this.statusCode : CLIENT_CLOSED, seconds);
  }

  const upstreamObservers = new Map<string, UpstreamObserver>();

  return {
    openStreams,
    rateLimitStoreFailures,
    operation,
    requests(req, res, next) {
      req.metricsStart = performance.now();
      res.on('close', recordResponse);
      next();
    },
    upstream(provider, model) {
      const key = `${provider} ${model}`;
      let observer = upstreamObservers.get(key);
      if (!observer) {
        const children = new Map<UpstreamOutcome, { observe(seconds: number): void }>();
        observer = (outcome, seconds) => {
          let child = children.get(outcome);
          if (!child) {
            child = upstreamDurations.labels(provider, model, outcome);
            children.set(outcome, child);
          }
          child.observe(seconds);
        };
        upstreamObservers.set(key, observer);
      }
      return observer;
    },
    runFinished(status) {
      runsFinished.inc({ status });
    },
    measureEmbeddedDatabase(read) {
      embeddedBytes = read;
    },
    countLiveRuns(read) {
      liveRuns = read;
    },
    async render() {
      return (await registry.metrics()) + (await processMetrics().metrics());
    },
  };
}
