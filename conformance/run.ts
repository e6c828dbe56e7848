// The conformance kit's command line: checks a server that claims to implement open-agent-api.yaml.
//   npm run conformance -- --base-url http://localhost:3000 --api-key oaa_… [--api-key-2 oaa_…]
//     [--model local] [--only getHealth,createAgent] [--json]
// Prints a verdict per operation and a summary line; exits 1 when anything failed, 2 on bad usage or
// when the server cannot be reached.
import { parseArgs } from 'node:util';
import { formatReport, runConformance, summaryLine, UsageError } from './suite.ts';

const usage = `Usage: npm run conformance -- --base-url URL --api-key KEY [--api-key-2 KEY] [--model MODEL]
       [--only operationId,…] [--contract open-agent-api.yaml] [--timeout-seconds 60] [--json]`;

let values;
try {
  ({ values } = parseArgs({
    options: {
      'base-url': { type: 'string' },
      'api-key': { type: 'string' },
      'api-key-2': { type: 'string' },
      model: { type: 'string' },
      only: { type: 'string' },
      contract: { type: 'string' },
      'timeout-seconds': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (error) {
  console.error(`${(error as Error).message}\n${usage}`);
  process.exit(2);
}
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const baseUrl = values['base-url'];
const apiKey = values['api-key'];
const timeoutSeconds = Number(values['timeout-seconds'] ?? '60');
if (!baseUrl || !/^https?:\/\//.test(baseUrl) || !apiKey || !(timeoutSeconds > 0)) {
  console.error(usage);
  process.exit(2);
}

try {
  const report = await runConformance({
    baseUrl,
    apiKey,
    ...(values['api-key-2'] ? { apiKey2: values['api-key-2'] } : {}),
    ...(values.model ? { model: values.model } : {}),
    ...(values.contract ? { contractFile: values.contract } : {}),
    ...(values.only ? { only: values.only.split(',').map((id) => id.trim()).filter(Boolean) } : {}),
    timeoutMs: timeoutSeconds * 1000,
  });
  console.log(values.json ? JSON.stringify(report, null, 2) : formatReport(report));
  if (values.json) console.error(summaryLine(report.summary));
  process.exitCode = report.ok ? 0 : 1;
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  console.error(error.message);
  process.exitCode = 2;
}
