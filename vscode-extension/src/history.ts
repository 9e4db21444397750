/**
 * `remem-history:` documents: a memory file as a history entry left it, read-only, fetched from
 * the language server (`remem/memoryAt`); the empty state before a scope's first entry, or a
 * file an entry did not have, is an empty document. An entry never changes, so each is asked once.
 */

import * as vscode from 'vscode';

import { historyTarget } from './args';
import type { Server } from './flows';
import { HISTORY_SCHEME, type MemoryAtResult, Requests } from './protocol';

const KEPT_ENTRIES = 32;

export class HistoryProvider implements vscode.TextDocumentContentProvider {
  private readonly entries = new Map<string, Promise<MemoryAtResult>>();

  constructor(private readonly server: Server) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const target = historyTarget(uri.path);
    if (!target) throw new Error(`remem: ${uri.toString()} names no history entry (${HISTORY_SCHEME}:/<entry>/<file>)`);
    if (target.entry === null) return '';
    return (await this.at(target.entry)).files[target.file] ?? '';
  }

  private at(entry: string): Promise<MemoryAtResult> {
    let answer = this.entries.get(entry);
    if (!answer) {
      answer = this.server.request<MemoryAtResult>(Requests.memoryAt, { entry });
      answer.catch(() => this.entries.delete(entry)); // a failed read is asked again next time
      this.entries.set(entry, answer);
      if (this.entries.size > KEPT_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
    }
    return answer;
  }
}
