/**
 * `remem-session:` documents: a session's transcript as Markdown, fetched from the language
 * server (`remem/transcript`). The client's document selector includes the scheme, so the
 * server sees them open and serves its code lenses ("Consolidate this session", "Branch from here").
 * A tab is named by the title in its URI, and the transcript is headed by that name, so a
 * renamed session's tabs are opened again under the new title.
 */

import * as vscode from 'vscode';

import { sessionIdFromTranscriptPath, transcriptHeading, transcriptUri } from './args';
import type { Server } from './flows';
import { Requests, TRANSCRIPT_SCHEME, type TranscriptResult } from './protocol';

export class TranscriptProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly server: Server,
    private readonly labelOf: (session: string) => string | undefined,
  ) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const id = sessionIdFromTranscriptPath(uri.path);
    if (!id) throw new Error(`remem: ${uri.toString()} names no session (expected ${TRANSCRIPT_SCHEME}:/<id>.md)`);
    // Headed by the name its tab shows, so that tab, heading and tree row read the same.
    const title = transcriptHeading(uri.path, this.labelOf(id));
    const result = await this.server.request<TranscriptResult>(Requests.transcript, { id, ...(title ? { title } : {}) });
    return result.markdown;
  }

  /** Sessions grow and get renamed: re-read the transcripts that are open. */
  refreshOpen(): void {
    for (const document of vscode.workspace.textDocuments) {
      if (document.uri.scheme === TRANSCRIPT_SCHEME) this.changed.fire(document.uri);
    }
  }

  /** The open transcripts of sessions whose label changed, opened again under it where they were. */
  async relabel(labels: Map<string, string>): Promise<void> {
    const stale = vscode.window.tabGroups.all.flatMap((group) =>
      group.tabs.flatMap((tab) => {
        const uri = tab.input instanceof vscode.TabInputText ? tab.input.uri : undefined;
        const id = uri?.scheme === TRANSCRIPT_SCHEME ? sessionIdFromTranscriptPath(uri.path) : undefined;
        const label = id && labels.get(id);
        if (!uri || !id || !label) return [];
        const renamed = vscode.Uri.parse(transcriptUri(id, label));
        return renamed.toString() === uri.toString() ? [] : [{ group, tab, uri, renamed }];
      }),
    );
    for (const { group, tab, uri, renamed } of stale) {
      const editor = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === uri.toString());
      await vscode.window.showTextDocument(renamed, {
        viewColumn: group.viewColumn,
        preview: false,
        preserveFocus: true,
        selection: editor?.selection,
      });
      await vscode.window.tabGroups.close(tab, true);
    }
  }

  dispose(): void {
    this.changed.dispose();
  }
}
