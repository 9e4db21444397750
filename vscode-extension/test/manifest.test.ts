/** `package.json` contributes the ids `src/ids.ts` writes once: the two must agree. */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

import * as fixes from '../src/fixes';
import * as flows from '../src/flows';
import { ClientCommands, CommandTitles, ContextKeys, Settings, ViewNames, Views } from '../src/ids';

interface When {
  command?: string;
  when?: string;
}

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as {
  capabilities: Record<string, { supported: boolean | string }>;
  contributes: {
    commands: { command: string; title: string; category?: string }[];
    views: Record<string, { id: string; name: string }[]>;
    configuration: { properties: Record<string, unknown> };
    menus: Record<string, When[]>;
    keybindings: When[];
    viewsWelcome: { view: string; contents: string; when?: string }[];
  };
};
const { contributes } = manifest;

test('the commands, views and setting contributed are the ones the extension registers and reads', () => {
  assert.deepEqual(contributes.commands.map((c) => c.command).sort(), Object.values(ClientCommands).sort());
  assert.deepEqual(
    Object.values(contributes.views).flat().map((v) => v.id).sort(),
    Object.values(Views).sort(),
  );
  assert.deepEqual(Object.keys(contributes.configuration.properties), [Settings.commandName, Settings.traceName]);
  const commands = new Set<string>(Object.values(ClientCommands));
  const menus = [...Object.values(contributes.menus).flat(), ...contributes.keybindings];
  for (const { command } of menus) assert.ok(command && commands.has(command), `${command} is no command of the extension`);
  const whens = menus.map((m) => m.when ?? '').join('\n');
  assert.ok(whens.includes(ContextKeys.showArchived));
});

test('the views\' names the messages send the user to are the ones contributed', () => {
  const contributed = Object.values(contributes.views).flat();
  for (const [key, id] of Object.entries(Views)) {
    assert.equal(contributed.find((v) => v.id === id)?.name, ViewNames[key as keyof typeof Views], id);
  }
});

test('the sessions view\'s keys act on the focused row only, never while typing in its filter box', () => {
  const keys = contributes.keybindings.filter((k) => k.when?.includes(`focusedView == ${Views.sessions}`));
  assert.equal(keys.length, 3); // F2, Delete, Shift+Delete
  for (const { command, when } of keys) {
    assert.match(when ?? '', /&& listFocus && !inputFocus$/, `${command}: ${when}`);
  }
});

test('a virtual or untrusted workspace does not run the extension', () => {
  // In a virtual workspace no folder is on disk: the views would say "Loading…" for good.
  assert.equal(manifest.capabilities.virtualWorkspaces.supported, false);
  // A workspace can set remem.command: the program it names runs only in a trusted one.
  assert.equal(manifest.capabilities.untrustedWorkspaces.supported, false);
});

test('with no folder open, each view says to open one instead of staying blank', () => {
  for (const view of Object.values(Views)) {
    const welcome = contributes.viewsWelcome.filter((w) => w.view === view && w.when === 'workspaceFolderCount == 0');
    assert.equal(welcome.length, 1, `${view} has a welcome for no folder`);
    assert.match(welcome[0].contents, /\[Open Folder\]\(command:workbench\.action\.files\.openFolder\)/);
  }
  // A welcome's button runs a command of the extension's, or VS Code's own.
  const commands = new Set<string>(Object.values(ClientCommands));
  for (const { contents } of contributes.viewsWelcome) {
    for (const [, command] of contents.matchAll(/\(command:([\w.]+)\)/g)) {
      assert.ok(commands.has(command) || command.startsWith('workbench.'), `${command} is no command`);
    }
  }
});

test('the command titles messages name and offer as buttons are the ones the palette shows', () => {
  for (const [key, title] of Object.entries(CommandTitles)) {
    const contributed = contributes.commands.find((c) => c.command === ClientCommands[key as keyof typeof CommandTitles]);
    assert.deepEqual([contributed?.category, contributed?.title], ['Remem', title], key);
  }
});

test('a button that runs one of the commands is named as the palette names it, to be found there again', () => {
  const titles = new Set(contributes.commands.map((c) => c.title));
  for (const button of [flows.ENTER_KEY, flows.SELECT_MODEL, flows.SHOW_HISTORY]) {
    assert.ok(titles.has(button), `"${button}" is no command's title`);
  }
});

test('a fix that runs one of the commands is its button, titled as that command', () => {
  const commandKey = new Map<string, string>(Object.entries(ClientCommands).map(([key, id]) => [id, key]));
  const isFix = (value: unknown): value is fixes.Fix =>
    typeof value === 'object' && value !== null && 'title' in value && 'command' in value;
  const ours = Object.values(fixes).filter(isFix).filter((fix) => commandKey.has(fix.command));
  assert.ok(ours.length >= 2); // Restart Server, Show Log
  for (const { title, command } of ours) {
    assert.equal(title, CommandTitles[commandKey.get(command) as keyof typeof CommandTitles], `${command}'s button`);
  }
});

test('the README, the extension\'s page and its Learn More, lists each command its messages name', () => {
  const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
  // The Commands item of its Features list, to the next item: a title named elsewhere is no entry.
  const item = /^- \*\*Commands\*\*([\s\S]*?)(?=^- |^$)/m.exec(readme);
  assert.ok(item, 'the README has a **Commands** item');
  const listed = item[1].replace(/\s+/g, ' ');
  for (const title of Object.values(CommandTitles)) assert.ok(listed.includes(title), `the README's Commands do not list ${title}`);
});
