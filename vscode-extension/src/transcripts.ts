/**
 * `remem-session:` documents: a session's transcript as Markdown, fetched from the language
 * server (`remem/transcript`). The client's document selector includes the scheme, so the
 * server sees them open and serves its code lenses ("Consolidate this session", "Branch from here").
 * A tab is named by the title in its URI, and the transcript is headed by that name, so a
 * renamed session's tabs are opened again under the new title: a shown tab at once, a background
 * one when it is shown.
 */

import * as vscode from 'vscode';

import { sessionIdFromTranscriptPath, transcriptHeading, transcriptUri } from './args';
import type { Server } from './flows';
import { Requests, TRANSCRIPT_SCHEME, type TranscriptResult } from './protocol';
import { type LabelOf, Retitler, type TabHost, type TranscriptTab } from './retitling';
import { errorMessage } from './vscodeapi';

export class TranscriptProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly retitler: Retitler<EditorTab>;
  private readonly watching: vscode.Disposable;

  constructor(
    private readonly server: Server,
    private readonly labelOf: LabelOf,
    log: Pick<vscode.LogOutputChannel, 'warn'>,
  ) {
    this.retitler = new Retitler(editorTabs(log));
    // A tab comes to be shown (a background tab brought to the front, or one just opened, maybe
    // under a name the tree gave while it opened): it takes the tree's name then.
    this.watching = vscode.window.tabGroups.onDidChangeTabs(() => void this.retitler.retitle(labelOf));
  }

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

  /** The shown transcripts of sessions whose label changed, opened again under it where they
   * were; the others once they are shown. Never rejects: a tab that fails is logged. */
  relabel(labels: Map<string, string>): Promise<void> {
    return this.retitler.retitle((id) => labels.get(id));
  }

  dispose(): void {
    this.changed.dispose();
    this.watching.dispose();
  }
}

interface EditorTab extends TranscriptTab {
  tab: vscode.Tab;
}

function editorTabs(log: Pick<vscode.LogOutputChannel, 'warn'>): TabHost<EditorTab> {
  return {
    tabs: () => vscode.window.tabGroups.all.flatMap((group) => group.tabs.flatMap((tab) => transcriptTab(group, tab))),
    uriOf: (session, label) => vscode.Uri.parse(transcriptUri(session, label)).toString(),
    reopen: reopenInPlace,
    close: async ({ tab }) => {
      await vscode.window.tabGroups.close(tab, true);
    },
    warn: ({ uri }, error) => log.warn(`retitling ${uri}: ${errorMessage(error)}`),
  };
}

function transcriptTab(group: vscode.TabGroup, tab: vscode.Tab): EditorTab[] {
  const uri = tab.input instanceof vscode.TabInputText ? tab.input.uri : undefined;
  const session = uri?.scheme === TRANSCRIPT_SCHEME ? sessionIdFromTranscriptPath(uri.path) : undefined;
  if (!uri || !session) return [];
  return [{ session, uri: uri.toString(), column: group.viewColumn, active: tab.isActive, tab }];
}

/** Opens `renamed` in the group of `tab`, at its selection and scrolled as it was. The tab is
 * its group's active one, so its editor is visible, and read before the new one covers it. */
async function reopenInPlace({ uri, column }: EditorTab, renamed: string): Promise<void> {
  const old = vscode.window.visibleTextEditors.find((e) => e.viewColumn === column && e.document.uri.toString() === uri);
  const top = old?.visibleRanges[0];
  const editor = await vscode.window.showTextDocument(vscode.Uri.parse(renamed), {
    viewColumn: column,
    preview: false,
    preserveFocus: true,
    selection: old?.selection,
  });
  if (top) editor.revealRange(top, vscode.TextEditorRevealType.AtTop);
}
