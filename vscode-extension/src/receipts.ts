/**
 * `remem-receipt:/<review>/<title>.md` documents: a receipt as the server renders it for a
 * person (summary first, the machine fields below), shown in the Markdown preview. The title
 * segment only names the tab; receipts change while a review runs, so each read asks again.
 */

import * as vscode from 'vscode';

import { receiptTarget } from './args';
import type { Server } from './flows';
import { RECEIPT_SCHEME, type ReceiptResult, Requests } from './protocol';

export class ReceiptProvider implements vscode.TextDocumentContentProvider {
  constructor(private readonly server: Server) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const review = receiptTarget(uri.path);
    if (!review) throw new Error(`remem: ${uri.toString()} names no review (${RECEIPT_SCHEME}:/<review>/<title>.md)`);
    return (await this.server.request<ReceiptResult>(Requests.receipt, { review })).summary;
  }
}
