/**
 * `remem-session:` documents: a session's transcript as Markdown, fetched from the language
 * server (`remem/transcript`). The client's document selector includes the scheme, so the
 * server sees them open and serves its code lenses ("Consolidate this session", "Branch from here").
 */

import * as vscode from 'vscode';

import { sessionIdFromTranscriptPath } from './args';
import type { Server } from './flows';
import { Requests, TRANSCRIPT_SCHEME, type TranscriptResult } from './protocol';

export class TranscriptProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly server: Server) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const id = sessionIdFromTranscriptPath(uri.path);
    if (!id) throw new Error(`remem: ${uri.toString()} names no session (expected ${TRANSCRIPT_SCHEME}:/<id>.md)`);
    const result = await this.server.request<TranscriptResult>(Requests.transcript, { id });
    return result.markdown;
  }

  /** Sessions grow and get renamed: re-read the transcripts that are open. */
  refreshOpen(): void {
    for (const document of vscode.workspace.textDocuments) {
      if (document.uri.scheme === TRANSCRIPT_SCHEME) this.changed.fire(document.uri);
    }
  }

  dispose(): void {
    this.changed.dispose();
  }
}
