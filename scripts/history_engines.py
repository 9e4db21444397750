"""Compare git engines for memory history: the `git` CLI, dulwich and pygit2.

Times one commit of a 10-record generation (blobs, tree, commit, ref) and a walk of a
10 000-entry log (id, time, message of each). Needs `pip install dulwich pygit2` and `git`;
the figures are in docs/decisions/0085-history-in-git-via-pygit2.md.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECORDS = 10
ENTRIES = 10_000
COMMITS = 50


def generation(n: int) -> dict[str, bytes]:
    return {
        f"record-{i}.md": f"---\nname: record-{i}\n---\nbody {n} {i}\n".encode() * 20 for i in range(RECORDS)
    }


def pygit2_engine(path: Path):
    import pygit2

    repo = pygit2.init_repository(str(path), bare=True)
    sig = pygit2.Signature("remem", "remem@localhost")

    def commit(files: dict[str, bytes], message: str) -> None:
        builder = repo.TreeBuilder()
        for name, data in sorted(files.items()):
            builder.insert(name, repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
        ref = "refs/heads/ws"
        head = repo.references.get(ref)
        parents = [head.target] if head is not None else []
        repo.create_commit(ref, sig, sig, message, builder.write(), parents)

    def log() -> int:
        head = repo.references["refs/heads/ws"].target
        return sum(1 for c in repo.walk(head) if c.message and c.commit_time)

    return commit, log


def dulwich_engine(path: Path):
    from dulwich.objects import Blob, Commit, Tree
    from dulwich.repo import Repo

    path.mkdir()
    repo = Repo.init_bare(str(path))

    def commit(files: dict[str, bytes], message: str) -> None:
        tree = Tree()
        for name, data in sorted(files.items()):
            blob = Blob.from_string(data)
            repo.object_store.add_object(blob)
            tree.add(name.encode(), 0o100644, blob.id)
        repo.object_store.add_object(tree)
        c = Commit()
        c.tree = tree.id
        ref = b"refs/heads/ws"
        c.parents = [repo.refs[ref]] if ref in repo.refs else []
        c.author = c.committer = b"remem <remem@localhost>"
        c.commit_time = c.author_time = int(time.time())
        c.commit_timezone = c.author_timezone = 0
        c.message = message.encode()
        repo.object_store.add_object(c)
        repo.refs[ref] = c.id

    def log() -> int:
        return sum(1 for e in repo.get_walker([repo.refs[b"refs/heads/ws"]]) if e.commit.message)

    return commit, log


def git_cli_engine(path: Path):
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    env = {**os.environ, "GIT_DIR": str(path), "GIT_AUTHOR_NAME": "remem", "GIT_AUTHOR_EMAIL": "r@l",
           "GIT_COMMITTER_NAME": "remem", "GIT_COMMITTER_EMAIL": "r@l"}  # fmt: skip

    def git(*args: str, data: bytes | None = None) -> str:
        return (
            subprocess.run(["git", *args], input=data, env=env, check=True, capture_output=True)
            .stdout.decode()
            .strip()
        )

    def commit(files: dict[str, bytes], message: str) -> None:
        # One hash-object for all blobs, then mktree, commit-tree, update-ref: four processes.
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, data in sorted(files.items()):
                (Path(tmp) / name).write_bytes(data)
                paths.append(str(Path(tmp) / name))
            ids = git("hash-object", "-w", *paths).split()
        listing = "".join(f"100644 blob {i}\t{n}\n" for n, i in zip(sorted(files), ids, strict=True))
        tree = git("mktree", data=listing.encode())
        try:
            parent = ["-p", git("rev-parse", "--verify", "-q", "refs/heads/ws")]
        except subprocess.CalledProcessError:
            parent = []
        new = git("commit-tree", tree, *parent, "-m", message)
        git("update-ref", "refs/heads/ws", new)

    def log() -> int:
        return len(git("log", "--format=%H %ct %B", "refs/heads/ws").splitlines())

    return commit, log


def measure(name: str, make) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        commit, log = make(Path(tmp) / "history")
        times = []
        for n in range(COMMITS):
            files = generation(n)
            start = time.perf_counter()
            commit(files, f"entry {n}\n\nRemem-Actor: cli\n")
            times.append(time.perf_counter() - start)
        for n in range(COMMITS, ENTRIES):
            commit({"a.md": f"{n}\n".encode()}, f"entry {n}\n\nRemem-Actor: cli\n")
        start = time.perf_counter()
        count = log()
        walk = time.perf_counter() - start
        p50 = statistics.median(times) * 1e3
        print(f"{name:8} commit p50 {p50:6.2f} ms   log of {count} {walk * 1e3:7.1f} ms")


if __name__ == "__main__":
    engines = {"pygit2": pygit2_engine, "dulwich": dulwich_engine, "git-cli": git_cli_engine}
    for wanted in sys.argv[1:] or list(engines):
        measure(wanted, engines[wanted])
