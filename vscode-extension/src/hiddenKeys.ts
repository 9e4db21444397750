/**
 * The Remem log as the language client writes to it, with API keys hidden. A key typed into
 * "Enter API Key" travels to the server as a command's argument, and with the log at Trace level
 * and `remem.trace.server` set to `compact` or `verbose` the client traces every request's
 * parameters whole into this log (a file on disk, shared in bug reports). The server and daemon
 * never log it; this keeps the editor's side as tight.
 */

import type * as vscode from 'vscode';

import { SECRET_FIELDS } from './protocol';

// The channel's methods that write text: each passes its text through `hideKeys`.
const WRITERS = new Set<PropertyKey>(['trace', 'debug', 'info', 'warn', 'error', 'append', 'appendLine', 'replace']);
// A secret field's JSON string value, as the client's text and JSON trace formats print it.
const SECRET_VALUE = new RegExp(`("(?:${SECRET_FIELDS.join('|')})"\\s*:\\s*)"(?:[^"\\\\]|\\\\.)*"`, 'g');

/** `log`, writing through `hideKeys`. */
export function hidingKeys(log: vscode.LogOutputChannel): vscode.LogOutputChannel {
  return new Proxy(log, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (!WRITERS.has(property)) return value.bind(target);
      return (text: unknown, ...rest: unknown[]) =>
        value.call(target, typeof text === 'string' ? hideKeys(text) : text, ...rest);
    },
  });
}

/** `text` with the value of every secret field replaced by "…". */
export function hideKeys(text: string): string {
  return text.replace(SECRET_VALUE, '$1"…"');
}
