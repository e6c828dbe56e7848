// The server's entry point (`npm start`, the Dockerfile). It turns on Node's compile cache before it
// loads anything else, then starts the server (serve.ts): a restart then finds the bytecode of the modules
// it loads (the project's, with types stripped, and its dependencies') on disk instead of compiling them
// again, 0.2–0.4 s of a restart on this machine (README, target 6). The cache lives where
// Node keeps it by default, `node-compile-cache` in the temporary directory, or where NODE_COMPILE_CACHE
// says; NODE_DISABLE_COMPILE_CACHE=1 turns it off. A cache that cannot be written costs nothing but the
// gain.
import { enableCompileCache } from 'node:module';

enableCompileCache();
await import('./serve.ts');
