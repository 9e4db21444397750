#!/usr/bin/env bash
# Builds the extension and installs what the end-to-end tests in a real VS Code need:
#   the extension's npm packages and its .vsix, Debian's chromium and libkrb5-dev (apt; only when
#   missing), Node 24 (the npm package node@24, which code-server 4.139 needs), code-server 4.139.1
#   (npm; it ships its own ripgrep, so it installs offline from the registry).
# Everything but the apt packages goes into $REMEM_E2E_DIR (default: the user's cache,
# ~/.cache/remem/e2e), so every clone and worktree of the machine shares one install of the
# pinned versions; a fresh clone spends seconds here instead of minutes building code-server.
# Idempotent: a second run only checks the versions and rebuilds the extension.
set -euo pipefail
cd "$(dirname "$0")/../.."

CODE_SERVER_VERSION=4.139.1
e2e=${REMEM_E2E_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/remem/e2e}
mkdir -p "$e2e"

# The extension first: it builds with the machine's own Node (20 or newer), so its .vsix exists
# (for `code --install-extension`) even where the rest cannot be installed. The lock pins every package.
(
    cd vscode-extension
    if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
        npm ci --prefer-offline --no-audit --no-fund  # the lock pins every tarball: a cached one is it
    fi
    npm run package
)

if ! command -v chromium >/dev/null || ! dpkg -s libkrb5-dev >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "tests/e2e/install.sh: needs chromium and libkrb5-dev; as root: apt-get install chromium libkrb5-dev" >&2
        exit 1
    fi
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium libkrb5-dev
fi

# Two clones set up at once share the folder: one installs, the other waits and then finds it done.
if command -v flock >/dev/null; then
    exec 9>"$e2e/.install.lock"
    flock 9
fi

# One npm project per tool, so each keeps its own lock and none leaks into the repository.
npm_project() {
    mkdir -p "$1"
    [ -f "$1/package.json" ] || (cd "$1" && npm init -y >/dev/null)
}

node24_bin() {
    ls -d "$e2e"/node24/node_modules/node/node_modules/node-*/bin 2>/dev/null | head -n 1
}
if [ -z "$(node24_bin)" ] || [ "$("$(node24_bin)/node" -p 'process.versions.node.split(".")[0]')" != 24 ]; then
    npm_project "$e2e/node24"
    (cd "$e2e/node24" && npm install --no-audit --no-fund node@24)
fi
n24=$(node24_bin)

installed_cs=$(node -p "require('$e2e/cs/node_modules/code-server/package.json').version" 2>/dev/null || true)
if [ "$installed_cs" != "$CODE_SERVER_VERSION" ]; then
    npm_project "$e2e/cs"
    # Native modules must build against Node 24's headers (a user ~/.npmrc nodedir may point elsewhere);
    # prebuilt downloads fail offline and fall back to these local builds.
    (cd "$e2e/cs" && PATH="$n24:$PATH" npm_config_nodedir="$(dirname "$n24")" \
        npm install --no-audit --no-fund --foreground-scripts "code-server@$CODE_SERVER_VERSION")
fi

