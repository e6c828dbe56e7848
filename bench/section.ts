// What a benchmark section is: bench/run.ts runs sections, each module section exports one.

export interface BenchOptions {
  /** Seconds per measured load run. */
  durationSeconds: number;
  /** Also take a CPU profile of the system under test and report where its time goes. */
  profile: boolean;
}

export interface BenchResult {
  /** What to print. */
  report: string;
  /** What to keep. */
  json: unknown;
}

export interface BenchSection {
  name: string;
  description: string;
  run(options: BenchOptions): Promise<BenchResult>;
}
