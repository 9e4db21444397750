/**
 * The `remem lsp` process: spawned by the extension itself, and ended if it outlives a stop.
 *
 * The client library could spawn it, but only after an asynchronous `stat` of the working
 * folder; while the editor activates its built-in extensions, that one wait held the start of
 * the server back by up to half a second. Spawned here, it starts the moment the client does.
 */

import { type ChildProcess, spawn } from 'node:child_process';

/** How long a server may take to exit after the client stopped it, as the client library allows. */
const EXIT_GRACE_MS = 2000;

/** `<executable> lsp` in `cwd`; rejects with a message naming the executable if it cannot be spawned. */
export function spawnServer(executable: string, cwd: string, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  // No `--stdio`: `remem lsp` always speaks on stdio.
  const server = spawn(executable, ['lsp'], { cwd, env });
  if (server.pid !== undefined) return Promise.resolve(server);
  return new Promise((_resolve, reject) => {
    // A failed spawn reports why only in its 'error' event, which follows at once.
    server.once('error', (error) => reject(new Error(`cannot run "${executable} lsp": ${error.message}`)));
  });
}

/** Kills `server` unless it exits by itself within `graceMs` (a server that ignores `exit`). */
export function endProcess(server: ChildProcess, graceMs: number = EXIT_GRACE_MS): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.kill('SIGKILL'), graceMs);
    server.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
