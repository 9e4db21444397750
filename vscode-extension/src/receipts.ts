/**
 * The receipt view: a review's receipt as the server renders it for a person (summary first,
 * the machine fields below), in a webview of its own rather than the Markdown preview, because
 * only a webview of ours may let its links run a command: the evidence links open the
 * transcript at their turn (`command:remem.openTranscript`, the one command they may run;
 * decision 0180). One tab per review, named by the session's title (retitled when the session is
 * renamed); opened again, it is read again.
 */

import * as vscode from 'vscode';

import { receiptTabTitle } from './args';
import type { Server } from './flows';
import { ClientCommands, RECEIPT_VIEW_TYPE } from './ids';
import { type ReceiptResult, Requests } from './protocol';

const LINK_COMMANDS = [ClientCommands.openTranscript]; // what the summary's links may run, nothing else

// No script and no resource: the page is the rendered Markdown and the theme's colors.
const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 20px; line-height: 1.5; }
a { color: var(--vscode-textLink-foreground); }
a:hover { color: var(--vscode-textLink-activeForeground); }
code { font-family: var(--vscode-editor-font-family); font-size: 0.9em; }
pre { background: var(--vscode-textCodeBlock-background); padding: 8px 12px; overflow-x: auto; }
blockquote { border-left: 4px solid var(--vscode-textBlockQuote-border); background: var(--vscode-textBlockQuote-background); margin: 0; padding: 2px 12px; }
h1, h2 { font-weight: 600; } h2 { border-bottom: 1px solid var(--vscode-panel-border); }
`;

interface Panel {
  panel: vscode.WebviewPanel;
  session: string;
}

export class ReceiptPanels implements vscode.Disposable {
  private readonly panels = new Map<string, Panel>(); // by review
  private readonly opening = new Map<string, Promise<void>>(); // by review: being read, its tab to come

  constructor(private readonly server: Server) {}

  /** The receipt of `review` in its tab (`title`, the session's, names it), read afresh. Asked
   * again while it is read (a double click), it is the same reading: one tab, never two. */
  show(review: string, title?: string): Promise<void> {
    const pending = this.opening.get(review);
    if (pending) return pending;
    const shown = this.read(review, title).finally(() => this.opening.delete(review));
    this.opening.set(review, shown);
    return shown;
  }

  private async read(review: string, title?: string): Promise<void> {
    const receipt = await this.server.request<ReceiptResult>(Requests.receipt, { review });
    const body = await vscode.commands.executeCommand<string>('markdown.api.render', receipt.summary);
    let panel = this.panels.get(review)?.panel;
    if (panel) {
      panel.reveal();
    } else {
      const tab = receiptTabTitle(title ?? receipt.title ?? undefined);
      panel = vscode.window.createWebviewPanel(RECEIPT_VIEW_TYPE, tab, vscode.ViewColumn.Active, {
        enableCommandUris: LINK_COMMANDS,
        enableFindWidget: true,
        localResourceRoots: [],
      });
      this.panels.set(review, { panel, session: receipt.session });
      panel.onDidDispose(() => this.panels.delete(review));
    }
    panel.webview.html = page(body);
  }

  /** The open receipts of sessions whose label changed (a rename): their tabs take the new one. */
  relabel(labels: Map<string, string>): void {
    for (const { panel, session } of this.panels.values()) {
      const label = labels.get(session);
      if (label) panel.title = receiptTabTitle(label);
    }
  }

  dispose(): void {
    for (const { panel } of this.panels.values()) panel.dispose();
  }
}

function page(body: string): string {
  const csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${csp}"><style>${STYLE}</style></head><body>${body}</body></html>`;
}
