// The TypeScript SDK v1 client (client.experimental.tasks, MCP 2025-11-25)
// against a server that serves the demo tools of `mcptasks serve`. Run by
// interop_test.go; it prints one JSON object per line and exits non-zero
// when a check fails.
//
//   node ts-client.mjs http URL TOKEN SCENARIO
//   node ts-client.mjs stdio COMMAND ARGS... -- SCENARIO
//
// Scenarios:
//   tasks      callToolStream with a task and an elicitation answered through
//              tasks/result; getTask, getTaskResult, listTasks, cancelTask.
//   create     creates a slow_compute task and prints its id (for others).
//   proxy      callToolStream through mcptasks proxy, question included.
//   get ID     getTask of a task made by an earlier run.
//   foreign ID getTask, getTaskResult, cancelTask of another principal's task
//              must fail, and listTasks must not show it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const args = process.argv.slice(2);
let transport;
let rest;
if (args[0] === 'http') {
  const [, url, token, ...r] = args;
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  rest = r;
} else if (args[0] === 'stdio') {
  const sep = args.indexOf('--');
  transport = new StdioClientTransport({ command: args[1], args: args.slice(2, sep), stderr: 'inherit' });
  rest = args.slice(sep + 1);
} else {
  console.error('usage: ts-client.mjs http URL TOKEN SCENARIO | stdio CMD ARGS... -- SCENARIO');
  process.exit(2);
}
const [scenario, ...sargs] = rest;

let failed = 0;
function check(name, ok, detail) {
  console.log(JSON.stringify({ check: name, ok: !!ok, detail }));
  if (!ok) failed++;
}
async function rejects(name, p) {
  try {
    const v = await p;
    check(name, false, { unexpected: v });
  } catch (e) {
    check(name, true, { code: e.code, message: e.message });
  }
}

const client = new Client(
  { name: 'ts-interop', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} }, tasks: { list: {}, cancel: {} } } }
);
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async req => {
  asked.push(req.params);
  return { action: 'accept', content: { overwrite: true, confirm: true } };
});

await client.connect(transport);
const caps = client.getServerCapabilities();
check('server declares tasks', caps?.tasks?.requests?.tools?.call && caps?.tasks?.list && caps?.tasks?.cancel, caps?.tasks);
check('server declares no extensions', caps?.extensions === undefined, caps?.extensions);
const { tools } = await client.listTools();
const byName = Object.fromEntries(tools.map(t => [t.name, t]));

if (scenario === 'tasks') {
  check('export_report is task-required', byName.export_report?.execution?.taskSupport === 'required', byName.export_report?.execution);
  check('greet is not a task tool', byName.greet?.execution === undefined, byName.greet?.execution);
  // A task with a question: callToolStream polls tasks/get, sees
  // input_required, and calls tasks/result, whose stream carries the
  // elicitation/create that the handler above answers.
  const seen = [];
  let created, result, error;
  for await (const m of client.experimental.tasks.callToolStream({ name: 'export_report', arguments: { rows: 7 } })) {
    seen.push(m.type === 'taskStatus' ? m.task.status : m.type);
    if (m.type === 'taskCreated') created = m.task;
    if (m.type === 'result') result = m.result;
    if (m.type === 'error') error = m.error;
  }
  check('task created working', created?.status === 'working' && created.ttl > 0 && typeof created.taskId === 'string', created);
  check('input_required seen', seen.includes('input_required'), seen);
  check('elicitation carried related-task', asked.length === 1 &&
    asked[0]._meta?.['io.modelcontextprotocol/related-task']?.taskId === created?.taskId, asked);
  check('result after the answer', !error && result?.content?.[0]?.text === 'Wrote 7 rows to report.csv', { result, error: error?.message });
  check('result carries related-task', result?._meta?.['io.modelcontextprotocol/related-task']?.taskId === created?.taskId, result?._meta);

  const got = await client.experimental.tasks.getTask(created.taskId);
  check('getTask completed', got.status === 'completed' && got.taskId === created.taskId, got);
  const again = await client.experimental.tasks.getTaskResult(created.taskId, CallToolResultSchema);
  check('getTaskResult again', again?.content?.[0]?.text === 'Wrote 7 rows to report.csv', again);

  // A running task, cancelled: cancelled before the reply, and a second
  // cancel of the now terminal task is refused.
  const slow = await client.request({ method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 60 }, task: { ttl: 60000 } } },
    CreateTaskResultSchema);
  check('slow_compute is a task', slow.task?.status === 'working', slow);
  const cancelled = await client.experimental.tasks.cancelTask(slow.task.taskId);
  check('cancelTask returns cancelled', cancelled.status === 'cancelled', cancelled);
  const after = await client.experimental.tasks.getTask(slow.task.taskId);
  check('getTask after cancel', after.status === 'cancelled', after);
  await rejects('cancelTask of a terminal task fails', client.experimental.tasks.cancelTask(slow.task.taskId));

  const list = await client.experimental.tasks.listTasks();
  const ids = list.tasks.map(t => t.taskId);
  check('listTasks shows both, newest first', ids.indexOf(slow.task.taskId) === 0 && ids.includes(created.taskId), ids);

  await rejects('tools/call of a required tool without task', client.request({ method: 'tools/call', params: { name: 'export_report', arguments: { rows: 1 } } },
    CallToolResultSchema));
  const greet = await client.callTool({ name: 'greet', arguments: { name: 'Ada' } });
  check('plain call still synchronous', greet.content?.[0]?.text?.includes('Ada'), greet);
} else if (scenario === 'create') {
  const r = await client.request({ method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 60 }, task: {} } }, CreateTaskResultSchema);
  console.log(JSON.stringify({ taskId: r.task.taskId }));
} else if (scenario === 'proxy') {
  // Through mcptasks proxy to a 2026-07-28 upstream: the proxy's task
  // follows the upstream's, and the upstream's question reaches this client.
  let created, result, error;
  for await (const m of client.experimental.tasks.callToolStream({ name: 'export_report', arguments: { rows: 4 } }, CallToolResultSchema, { task: {} })) {
    if (m.type === 'taskCreated') created = m.task;
    if (m.type === 'result') result = m.result;
    if (m.type === 'error') error = m.error;
  }
  check('proxied task created', created?.status === 'working', created);
  check('proxied question answered', asked.length === 1 && asked[0].message?.includes('Overwrite it with 4 rows?'), asked);
  check('proxied result', !error && result?.content?.[0]?.text === 'Wrote 4 rows to report.csv', { result, error: error?.message });
} else if (scenario === 'get') {
  const got = await client.experimental.tasks.getTask(sargs[0]);
  check('getTask of an earlier task', got.taskId === sargs[0] && typeof got.status === 'string', got);
} else if (scenario === 'foreign') {
  const [id] = sargs;
  await rejects('getTask of a foreign task', client.experimental.tasks.getTask(id));
  await rejects('getTaskResult of a foreign task', client.experimental.tasks.getTaskResult(id, CallToolResultSchema));
  await rejects('cancelTask of a foreign task', client.experimental.tasks.cancelTask(id));
  const list = await client.experimental.tasks.listTasks();
  check('listTasks hides the foreign task', !list.tasks.some(t => t.taskId === id), list.tasks.map(t => t.taskId));
} else {
  check('known scenario', false, scenario);
}
await client.close();
process.exit(failed ? 1 : 0);
