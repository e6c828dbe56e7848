// Creates a user (or finds it) and prints a new API key for it: the quickest way to a credential.
//   npm run create-key -- --email me@example.com [--name laptop]
// It opens the same store the server uses (DATA_DIR or DATABASE_URL), so with the embedded PGlite run it
// while the server is stopped.
import { parseArgs } from 'node:util';
import { loadConfig } from '../server/config.ts';
import { findOrCreateUser } from '../server/identity/users.ts';
import { createApiKeyStore } from '../server/identity/api-keys.ts';
import { migrate } from '../server/store/migrate.ts';
import { openDatabase } from '../server/services.ts';

const { values } = parseArgs({
  options: { email: { type: 'string' }, name: { type: 'string', default: 'cli' } },
});
if (!values.email || !/^[^@\s]+@[^@\s]+$/.test(values.email)) {
  console.error('Usage: npm run create-key -- --email you@example.com [--name laptop]');
  process.exit(2);
}
const config = loadConfig();
const db = await openDatabase(config);
try {
  await migrate(db);
  const { user, created } = await findOrCreateUser(db, values.email);
  const key = await createApiKeyStore(db, { clock: Date.now }).create(user.id, { name: values.name });
  console.error(`${created ? 'Created' : 'Found'} user ${user.email} (${user.id}). Your API key, shown once:`);
  console.log(key.secret);
} finally {
  await db.close();
}
