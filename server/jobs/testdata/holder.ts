// A process that takes one job and holds it forever, to be killed with SIGKILL by server/jobs/kill.test.ts.
import { createLogger } from '../../logger.ts';
import { openPostgres } from '../../store/postgres.ts';
import { createJobs } from '../jobs.ts';

const url = process.argv[2]!;
const kind = process.argv[3]!;
const db = await openPostgres(url, { max: 2 });
const jobs = createJobs({ db, logger: createLogger('silent'), instanceId: `holder-${process.pid}` });
await jobs.start();
await jobs.register(kind, async (_payload, job) => {
  process.stdout.write(`holding ${job.id}\n`);
  await new Promise(() => undefined);
});
await jobs.enqueue(kind, { work: 'once' }, { key: 'the-only-one' });
