/**
 * Retitling transcript tabs when the tree names their session anew (a tab is named by the title in
 * its URI, so it is opened again under the new one and the old tab closed). Apart from the
 * editor's API so the decisions can be tested with plain fakes; `transcripts.ts` is the editor side.
 */

/** An open tab of a transcript, as the editor shows it. */
export interface TranscriptTab {
  session: string;
  uri: string; // as the editor spells it
  column: number; // its group's view column
  active: boolean; // the tab its group shows
}

/** The editor's part: its tabs, and how a tab is opened again and closed. */
export interface TabHost<T extends TranscriptTab> {
  tabs(): T[];
  /** The URI of `session`'s transcript named `label`, spelled as `tabs()` spells it. */
  uriOf(session: string, label: string): string;
  /** Opens `uri` in `tab`'s group, at the selection and scroll position of `tab`. */
  reopen(tab: T, uri: string): Promise<void>;
  close(tab: T): Promise<void>;
  warn(tab: T, error: unknown): void;
}

export type LabelOf = (session: string) => string | undefined;

export class Retitler<T extends TranscriptTab> {
  // One retitling at a time: two at once would both reopen the same tab, and the second's close
  // would find it gone (the editor throws "Invalid tab not found").
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly host: TabHost<T>) {}

  /** Retitles the shown tabs whose session `labelOf` names otherwise, after the retitlings asked
   * before. Never rejects: a tab that fails is warned of and the others go on. */
  retitle(labelOf: LabelOf): Promise<void> {
    this.queue = this.queue.then(() => this.retitleShown(labelOf));
    return this.queue;
  }

  private async retitleShown(labelOf: LabelOf): Promise<void> {
    for (const tab of this.host.tabs()) {
      try {
        const uri = this.renamed(tab, labelOf);
        // An earlier tab's reopening gave the user time to close or leave this one.
        if (uri === undefined || !this.find(tab)?.active) continue;
        await this.host.reopen(tab, uri);
        const old = this.find(tab);
        if (old) await this.host.close(old);
      } catch (error) {
        this.host.warn(tab, error);
      }
    }
  }

  /** The URI that names a shown `tab` as `labelOf` says, when that is not its own (undefined
   * else). A background tab waits until it is shown: opened again now, it would come to the
   * front of its group, over the file the user works in. */
  private renamed(tab: T, labelOf: LabelOf): string | undefined {
    const label = tab.active ? labelOf(tab.session) : undefined;
    const uri = label ? this.host.uriOf(tab.session, label) : tab.uri;
    return uri === tab.uri ? undefined : uri;
  }

  /** `tab` as the editor has it now, if it is still open. */
  private find(tab: T): T | undefined {
    return this.host.tabs().find((open) => open.uri === tab.uri && open.column === tab.column);
  }
}
