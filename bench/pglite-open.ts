// What start-up on PGlite cannot go below: a Node process that only opens the server's PGlite data
// directory (as server/store/pglite.ts opens it), runs one query and exits. bench/startup.ts times it from
// spawn to exit, next to the server's own time to a healthy /health.
//   node bench/pglite-open.ts DATA_DIR
import path from 'node:path';
import { openPglite } from '../server/store/pglite.ts';

const db = await openPglite({ dataDir: path.join(process.argv[2] ?? '', 'pglite') });
await db.query('SELECT 1');
await db.close();
