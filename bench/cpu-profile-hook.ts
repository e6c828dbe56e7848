// Preloaded into a process under benchmark (`node --import ./bench/cpu-profile-hook.ts …`): SIGUSR2 starts
// the V8 CPU profiler, the next SIGUSR2 stops it and writes the profile to $CPU_PROFILE_FILE. Unlike
// `--cpu-prof`, which profiles from start-up to exit, this captures only the steady state under load.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

const file = process.env.CPU_PROFILE_FILE;
if (!file) throw new Error('CPU_PROFILE_FILE must name the file the profile is written to.');
const session = new Session();
session.connect();
let running = false;

process.on('SIGUSR2', () => {
  void (async () => {
    if (!running) {
      running = true;
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 100 });
      await session.post('Profiler.start');
      return;
    }
    const { profile } = await session.post('Profiler.stop');
    running = false;
    writeFileSync(file, JSON.stringify(profile));
    process.stdout.write(`${JSON.stringify({ msg: 'cpu profile written', file })}\n`);
  })();
});
