/**
 * The language client library, bundled into a file of its own (`dist/languageclient.js`) that
 * `client.ts` loads when it starts the server: half of the extension's code, it is not read
 * while the window draws Session Branches (decision 0245).
 */

export * from 'vscode-languageclient/node';
