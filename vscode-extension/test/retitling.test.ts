import assert from 'node:assert/strict';
import { test } from 'node:test';

import { transcriptUri } from '../src/args';
import { Retitler, type TabHost, type TranscriptTab } from '../src/retitling';

const OLD = transcriptUri('s1', 'After turn 2 of Main');
const NEW = transcriptUri('s1', 'After turn 2 · new branch');
const LABELS = new Map([['s1', 'After turn 2 · new branch']]);

/** Tabs that behave as the editor's: reopening takes a while (the content comes from the server)
 * and makes the tab its group's active one; closing a tab that is gone throws. */
class FakeTabs implements TabHost<TranscriptTab> {
  open: TranscriptTab[] = [];
  readonly reopened: string[] = [];
  readonly warnings: string[] = [];
  duringReopen: () => void = () => undefined;
  failReopen = new Set<string>();

  tabs(): TranscriptTab[] {
    return this.open.map((tab) => ({ ...tab })); // new objects each time, as the editor's are
  }
  uriOf(session: string, label: string): string {
    return transcriptUri(session, label);
  }
  async reopen(tab: TranscriptTab, uri: string): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.failReopen.has(tab.uri)) throw new Error('cannot open');
    this.duringReopen();
    for (const t of this.open) if (t.column === tab.column) t.active = false;
    this.open.push({ session: tab.session, uri, column: tab.column, active: true });
    this.reopened.push(uri);
  }
  async close(tab: TranscriptTab): Promise<void> {
    const at = this.open.findIndex((t) => t.uri === tab.uri && t.column === tab.column);
    if (at < 0) throw new Error('Tab close: Invalid tab not found!');
    this.open.splice(at, 1);
  }
  warn(tab: TranscriptTab, error: unknown): void {
    this.warnings.push(`${tab.uri}: ${String(error)}`);
  }
}

test('two retitlings at once (the tree and a tab event) reopen the tab once, and neither fails', async () => {
  const host = new FakeTabs();
  host.open = [{ session: 's1', uri: OLD, column: 1, active: true }];
  const retitler = new Retitler(host);
  const results = await Promise.allSettled([
    retitler.retitle((id) => LABELS.get(id)),
    retitler.retitle((id) => LABELS.get(id)),
  ]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled'],
  );
  assert.deepEqual(host.reopened, [NEW]);
  assert.deepEqual(host.warnings, []);
  assert.deepEqual(
    host.open.map((t) => t.uri),
    [NEW],
  );
});

test('a tab closed while it is reopened is not closed again', async () => {
  const host = new FakeTabs();
  host.open = [{ session: 's1', uri: OLD, column: 1, active: true }];
  host.duringReopen = () => {
    host.open = host.open.filter((t) => t.uri !== OLD); // the user closed it meanwhile
  };
  await new Retitler(host).retitle((id) => LABELS.get(id));
  assert.deepEqual(host.warnings, []);
});

test('a tab that fails is warned of, and the other tabs are still retitled', async () => {
  const host = new FakeTabs();
  const other = transcriptUri('s2', 'Old name');
  host.open = [
    { session: 's1', uri: OLD, column: 1, active: true },
    { session: 's2', uri: other, column: 2, active: true },
  ];
  host.failReopen.add(OLD);
  const labels = new Map([...LABELS, ['s2', 'New name']]);
  await new Retitler(host).retitle((id) => labels.get(id));
  assert.equal(host.warnings.length, 1);
  assert.match(host.warnings[0], /cannot open/);
  assert.deepEqual(host.reopened, [transcriptUri('s2', 'New name')]);
});

test('a background tab keeps its title until it is shown: reopened, it would come to the front', async () => {
  const host = new FakeTabs();
  host.open = [{ session: 's1', uri: OLD, column: 1, active: false }]; // behind the file the user edits
  const retitler = new Retitler(host);
  await retitler.retitle((id) => LABELS.get(id));
  assert.deepEqual(host.reopened, []);
  host.open[0].active = true; // the user brings it to the front: the tab event retitles it
  await retitler.retitle((id) => LABELS.get(id));
  assert.deepEqual(host.reopened, [NEW]);
  assert.deepEqual(
    host.open.map((t) => t.uri),
    [NEW],
  );
});

test('a tab already named as the tree names it, or of a session the tree does not name, stays', async () => {
  const host = new FakeTabs();
  host.open = [
    { session: 's1', uri: NEW, column: 1, active: true },
    { session: 's9', uri: transcriptUri('s9', 'Elsewhere'), column: 2, active: true },
  ];
  await new Retitler(host).retitle((id) => LABELS.get(id));
  assert.deepEqual(host.reopened, []);
});

test('a tab whose new name cannot be made into a URI is warned of; later retitlings still run', async () => {
  const host = new FakeTabs();
  const other = transcriptUri('s2', 'Old name');
  host.open = [
    { session: 's1', uri: OLD, column: 1, active: true },
    { session: 's2', uri: other, column: 2, active: true },
  ];
  const uriOf = host.uriOf.bind(host);
  host.uriOf = (session, label) => {
    if (session === 's1') throw new URIError('URI malformed');
    return uriOf(session, label);
  };
  const retitler = new Retitler(host);
  const labels = new Map([...LABELS, ['s2', 'New name']]);
  await retitler.retitle((id) => labels.get(id));
  assert.equal(host.warnings.length, 1);
  assert.match(host.warnings[0], /URI malformed/);
  host.uriOf = uriOf;
  await retitler.retitle((id) => labels.get(id)); // the queue is not left rejected
  assert.deepEqual(host.reopened, [transcriptUri('s2', 'New name'), NEW]);
});
