import './clientHarness';

import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';

import { createMessageConnection, StreamMessageReader, StreamMessageWriter, Trace, TraceFormat } from 'vscode-jsonrpc/node';

import { RememClient } from '../src/client';
import { hidingKeys } from '../src/hiddenKeys';
import { ServerCommands, type SetApiKeyArgs } from '../src/protocol';
import { ui } from './clientHarness';

const KEY = 'sk-ant-"typed\\key';

/** A Remem log that records what is written to it. */
function recordingLog(): { log: never; written: string[] } {
  const written: string[] = [];
  const write = (text: string) => written.push(text);
  const log = { logLevel: 1, trace: write, debug: write, info: write, warn: write, error: write, appendLine: write };
  return { log: log as never, written };
}

/** What vscode-jsonrpc traces of a `setApiKey` request sent with `trace` and `format`, into
 * the language client's channel (as the client writes it: the message, then its data). */
async function traced(trace: Trace, format: TraceFormat): Promise<string[]> {
  const { log, written } = recordingLog();
  const channel = hidingKeys(log);
  const toServer = new PassThrough();
  const connection = createMessageConnection(new StreamMessageReader(new PassThrough()), new StreamMessageWriter(toServer));
  connection.listen();
  const tracer = {
    log: (message: unknown, data?: string) =>
      channel.trace(typeof message === 'string' ? `${message}${data ? `\n${data}` : ''}` : JSON.stringify(message)),
  };
  await connection.trace(trace, tracer, { sendNotification: false, traceFormat: format });
  const args: SetApiKeyArgs = { provider: 'anthropic', apiKey: KEY };
  const sent = connection.sendRequest('workspace/executeCommand', { command: ServerCommands.setApiKey, arguments: [args] });
  connection.dispose(); // no server answers: the request is traced as it is sent
  await sent.catch(() => undefined);
  return written;
}

for (const [name, trace, format] of [
  ['verbose', Trace.Verbose, TraceFormat.Text],
  ['compact', Trace.Compact, TraceFormat.Text],
  ['json', Trace.Verbose, TraceFormat.JSON],
] as const) {
  test(`a key sent to the server is hidden from the ${name} trace, the rest of the request kept`, async () => {
    const written = (await traced(trace, format)).join('\n');
    assert.match(written, /remem\.lsp\.setApiKey/);
    assert.match(written, /anthropic/);
    assert.match(written, /"apiKey":\s*"…"/);
    assert.doesNotMatch(written, /typed/);
  });
}

test('the hidden log is the same channel otherwise: its level, and what it writes with no key', () => {
  const { log, written } = recordingLog();
  const channel = hidingKeys(log);
  assert.equal(channel.logLevel, 1);
  channel.warn('remem lsp: "apiKeyEnv": "DEEPSEEK_API_KEY"');
  assert.deepEqual(written, ['remem lsp: "apiKeyEnv": "DEEPSEEK_API_KEY"']);
});

type Channel = { trace(text: string): void };

test('the language client writes and traces into the Remem log through hidingKeys', async () => {
  const { log, written } = recordingLog();
  await new RememClient(log).start();
  const options = ui.options as unknown as { outputChannel: Channel; traceOutputChannel?: Channel };
  // The channel the library traces into: its `traceOutputChannel` getter's, the trace channel
  // given, else the output channel.
  const traces = options.traceOutputChannel ?? options.outputChannel;
  const params = `Params: ${JSON.stringify({ arguments: [{ apiKey: KEY }] })}`;
  for (const channel of [traces, options.outputChannel]) channel.trace(params);
  assert.deepEqual(written.slice(-2), Array(2).fill('Params: {"arguments":[{"apiKey":"…"}]}'));
});
