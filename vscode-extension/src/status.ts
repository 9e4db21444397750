/** The status bar item's text and tooltip for the daemon's state and a running consolidation. */

import { shortId } from './format';
import { CommandTitles, paletteName } from './ids';
import type { StatusParams } from './protocol';

export interface StatusView {
  text: string;
  tooltip: string;
  warning: boolean;
}

export function statusView(status: StatusParams): StatusView {
  const detail = status.message ? `\n\n${status.message}` : '';
  if (status.state === 'no-server') {
    return {
      text: '$(error) remem',
      tooltip: `remem: the language server is not running: memory files are not validated.${detail}\n\nRun "${paletteName(CommandTitles.restartServer)}", or click to show the log.`,
      warning: true,
    };
  }
  if (status.state === 'unavailable') {
    return {
      text: '$(warning) remem',
      tooltip: `remem: the daemon is unavailable. Memory files are still validated.${detail}\n\nClick to show the log.`,
      warning: true,
    };
  }
  if (status.state === 'starting') {
    return { text: '$(loading~spin) remem', tooltip: `remem: starting…${detail}`, warning: false };
  }
  if (status.consolidating) {
    return {
      text: '$(sync~spin) remem: consolidating',
      tooltip: `remem: consolidating session ${shortId(status.consolidating)} (${status.consolidating})${detail}`,
      warning: false,
    };
  }
  return { text: '$(check) remem', tooltip: `remem: connected to the daemon${detail}`, warning: false };
}
