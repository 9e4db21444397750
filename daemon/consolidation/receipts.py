"""Receipts: the auditable record of each review, one Markdown file per review id.

`memory/reviews/<review-id>.md` holds YAML front matter (the machine-readable receipt) and a
short summary for people. It names sessions, revisions, evidence ranges and content hashes,
never memory or evidence text. Every write replaces the file atomically, under the review's
lock; the status may only move along the state machine below.

A receipt is read only as a regular file, never through a symbolic link (it could lead out of
the home) nor opened when it is a FIFO, socket or device (a FIFO would wait for a writer for
good, holding a daemon thread): such a file is a receipt that cannot be read, named with what
it is, and every other receipt reads on. A write renames a fresh file over the path, so it
replaces whatever stands there and never writes through it.

Only a write makes the receipts' folder: a read of a home that has none yet finds no receipts.
The home is left as it was only where nothing else makes its folders (a hover in the language
server): the daemon and the CLI make its fixed folders, this one among them, as they start.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Final, TypeVar

import yaml
from pydantic import ValidationError

from .. import safe_yaml
from ..credentials import mask_userinfo, redact
from ..fsutil import atomic_rewrite, refused_as_unwritable
from ..home import RECEIPT_NAME, Home
from ..locks import LockUnusable, held_elsewhere
from ..os_names import shown
from ..protocol.consolidation import Attempt, HistoryLink, Receipt, Status
from ..protocol.sessions import ListError, ReviewState
from ..safe_open import open_regular, refused, standing_at
from ..validation import problems as validation_problems

# libyaml when present: the pure-Python dumper took a few ms per receipt write.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# Where a receipt write may be killed, its synced temp not yet renamed over the receipt: the old
# receipt stands, and the next write of it removes the temp (decision 0411).
AFTER_TEMP_WRITE = "consolidation.receipt.after-temp-write"
CONSOLIDATOR_VERSION = 2  # bump when prompt, schema, projection or commit semantics change


SUCCEEDED = frozenset({Status.COMMITTED, Status.NO_CHANGE})
IN_FLIGHT = frozenset({Status.PREPARED, Status.RUNNING, Status.PROPOSED})
FAILED = frozenset(Status) - SUCCEEDED - IN_FLIGHT - {Status.COMMITTING}
# What readers call a review in flight that no run holds (`ReceiptStore.interrupted`), never written.
INTERRUPTED: Final = "interrupted"
_NEXT: dict[Status, frozenset[Status]] = {
    Status.PREPARED: frozenset({Status.RUNNING}) | FAILED | SUCCEEDED,
    Status.RUNNING: frozenset({Status.PROPOSED}) | FAILED | {Status.NO_CHANGE},
    Status.PROPOSED: frozenset({Status.COMMITTING}) | FAILED | {Status.NO_CHANGE},
    Status.COMMITTING: frozenset({Status.COMMITTED, Status.TARGET_CONFLICT}),
}


# A receipt keeps its first attempt and the newest ones (decision 0446): a review retried
# forever would grow its receipt without bound. Numbers are never reused (each names a worker
# session), so the gap after the first says how many were dropped.
NEWEST_ATTEMPTS_KEPT = 20
T = TypeVar("T")


def kept_attempts(attempts: list[T]) -> list[T]:
    """`attempts` as a receipt keeps them: the first and the newest `NEWEST_ATTEMPTS_KEPT`."""
    if len(attempts) <= NEWEST_ATTEMPTS_KEPT + 1:
        return attempts
    return [attempts[0], *attempts[-NEWEST_ATTEMPTS_KEPT:]]


def next_attempt(attempts: list[Attempt]) -> int:
    """The number of the attempt after `attempts`: one past the highest, whatever was dropped."""
    return _highest(attempts) + 1


def dropped_attempts(attempts: list[Attempt]) -> int:
    """How many attempts of a review its receipt no longer lists. Distinct numbers are
    counted: a remem from before the cap, sharing the home, lists some sessions twice."""
    return _highest(attempts) - len({a.number for a in attempts})


def _highest(attempts: list[Attempt]) -> int:
    """The highest attempt number listed (0 for none). Not the last one's: a remem from before
    the cap numbers its attempt by how many are listed, which may be a number already used
    (decision 0458); going on from it would record listed worker sessions a second time."""
    return max((a.number for a in attempts), default=0)


def moved(receipt: Receipt, status: Status, **fields: object) -> Receipt:
    """This receipt in `status`; refuses a move the state machine does not allow."""
    if status not in _NEXT.get(receipt.status, frozenset()) and not (
        receipt.status in FAILED | IN_FLIGHT and status is Status.PREPARED  # an explicit retry
    ):
        raise ValueError(f"a receipt cannot go from {receipt.status.value} to {status.value}")
    done = now() if status in SUCCEEDED | FAILED else None
    return receipt.model_copy(update={"status": status, "completedAt": done, **fields})


def ended(receipt: Receipt, status: Status, error: str | None = None, **fields: object) -> Receipt:
    """`moved` to a final status, which the last attempt (if any) ends with too.

    The error is redacted here too, whatever its source: a receipt is printed and kept."""
    attempts = list(receipt.attempts)
    if attempts:
        masked = None if error is None else redact(mask_userinfo(error))
        attempts[-1] = attempts[-1].model_copy(update={"status": status, "endedAt": now(), "error": masked})
    return moved(receipt, status, attempts=attempts, **fields)


def review_id(session_id: str, digest: str, workspace_key: str, version: int = CONSOLIDATOR_VERSION) -> str:
    """sha256 over the length-prefixed (version, session, digest, workspace): the same evidence
    under the same semantics is the same review, whenever and however often it is asked for."""
    h = hashlib.sha256()
    for part in (str(version), session_id, digest, workspace_key):
        data = part.encode("utf-8")
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def review_states(
    receipts: list[Receipt], digests: dict[str, str | None], interrupted: frozenset[str] = frozenset()
) -> dict[str, ReviewState]:
    """Each session's review state for its current digest (`digests`: session id → digest;
    None when it could not be taken, the file having changed since it was listed), the reviews
    in `interrupted` (`ReceiptStore.interrupted`) said so rather than pending.

    The newest receipt of the current content decides; receipts only of older content, or of
    content that could not be hashed, mean the session changed since it was last reviewed.
    """
    states: dict[str, ReviewState] = {}
    by_review = {r.review: r for r in receipts}
    for receipt in receipts:  # oldest first, so the newest of each session wins
        session = receipt.source.session
        if session not in digests:
            continue
        if digests[session] is None or receipt.source.digest != digests[session]:
            states.setdefault(session, ReviewState(state="changed"))
        else:  # a repeat stands for the review it repeats: memory holds what that one learned
            decided = by_review.get(receipt.repeats or "", receipt)
            states[session] = _state_of(decided.status, decided.review in interrupted)
    return states


def same_evidence(receipts: list[Receipt], session: str, workspace: str, evidence: str) -> Receipt | None:
    """The latest succeeded review of `session` into `workspace`, by this consolidator, that read
    `evidence` (its digest): what a review of the same evidence would learn, it learnt."""
    return next(
        (
            r
            for r in reversed(receipts)
            if r.status in SUCCEEDED
            and r.consolidator == CONSOLIDATOR_VERSION
            and r.source.evidence == evidence
            and (r.source.session, r.target.workspace) == (session, workspace)
        ),
        None,
    )


def _state_of(status: Status, interrupted: bool) -> ReviewState:
    if interrupted:
        return ReviewState(state=INTERRUPTED, status=status.value)
    if status is Status.COMMITTED:
        return ReviewState(state="consolidated")
    if status is Status.NO_CHANGE:
        return ReviewState(state="no-change")
    pending = status in IN_FLIGHT or status is Status.COMMITTING
    return ReviewState(state="pending" if pending else "failed", status=status.value)


def now() -> str:
    return iso(datetime.now(timezone.utc).timestamp())


def iso(seconds: float) -> str:
    """A receipt's timestamp: UTC, milliseconds, `Z`."""
    moment = datetime.fromtimestamp(seconds, timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ReceiptError(Exception):
    """A receipt file exists but cannot be read; the message names it and the problem."""


class _NotAFile(Exception):
    """Something at a receipt's path that is no regular file; the message says what it is."""


def _regular_stat(path: Path) -> os.stat_result:
    """`path`'s own stat (a link's, not its target's); `_NotAFile` unless it is a regular file,
    `FileNotFoundError` when there is none. Nothing is opened."""
    st = path.lstat()
    if not stat.S_ISREG(st.st_mode):
        raise _NotAFile(standing_at(path))
    return st


# A receipt file's inode, mtime, ctime and size: a rewrite renames a new one. The ctime too, as
# an edit in place that sets the mtime back (`touch -r`, `cp -p`, `rsync -t`) cannot set it.
_Version = tuple[int, int, int, int]


def _version(st: os.stat_result) -> _Version:
    return st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size


def _read_text(path: Path) -> tuple[str, _Version]:
    """The text of the receipt file at `path` and the `_Version` it was read at, opened as
    `safe_open.open_regular` opens it: never through a link, never waiting on a FIFO. Swapped
    for anything but a regular file since its stat: `_NotAFile`; `FileNotFoundError` when gone."""
    try:
        fd = open_regular(path)
    except OSError as exc:
        if not refused(exc):
            raise
        raise _NotAFile(standing_at(path)) from None
    with os.fdopen(fd, encoding="utf-8") as handle:  # newlines as `read_text` reads them
        return handle.read(), _version(os.fstat(fd))


class ReceiptStore:
    def __init__(self, home: Home) -> None:
        self._home = home
        self.folder = home.reviews
        self.locks = home.locks
        # Parsed receipts by file and stat: listings ask for all of them, and YAML is slow.
        self._parsed: dict[Path, tuple[_Version, Receipt]] = {}
        # What each misnamed file holds, by file and stat: every filtered listing asks (the
        # language server's after each review), and a renamed receipt may be a megabyte to parse.
        self._misnamed: dict[Path, tuple[_Version, _Held]] = {}

    def path(self, review: str) -> Path:
        return self.folder / f"{review}.md"

    def lock_path(self, review: str) -> Path:
        return self.locks / f"review-{review}.lock"

    def turn_path(self, workspace_key: str) -> Path:
        """The lock a review of that workspace holds from its memory's freeze to its end."""
        return self.locks / f"reviews-of-{workspace_key}.lock"

    def read(self, review: str) -> Receipt | None:
        found = self.read_as_written(review)
        return None if found is None else found[0]

    def read_as_written(self, review: str) -> tuple[Receipt, str] | None:
        """The receipt of `review` and its file's text exactly as written; None when there is
        none; `ReceiptError` when the file is not a valid receipt, or is no regular file (a link,
        a FIFO: never followed nor waited on); `HomeUnusable` when the receipts' folder, or one
        above it in the home, is a symbolic link or no folder (a file). Other `OSError`s pass."""
        path = self.path(review)
        self._home.refuse_link(self.folder)
        try:
            text = _read_text(path)[0]
            return parse_receipt(text), text
        except FileNotFoundError:
            return None
        except NotADirectoryError:  # a file where the receipts' folder, or one above it, goes
            self._home.refuse_unusable(self.folder)  # says which, as a listing of the receipts says it
            raise  # a folder again since: what is left is a bug's
        except _NotAFile as exc:
            raise ReceiptError(f"{path}: {exc}") from None
        except (ValueError, ValidationError, yaml.YAMLError) as exc:
            raise ReceiptError(f"{path}: not a valid receipt ({exc})") from None

    def write(self, receipt: Receipt) -> None:
        """Replace the receipt of `receipt.review`; `fsutil.Unwritable` when the disk refuses it."""
        self._home.private_dir(self.folder)
        with refused_as_unwritable(self.folder):
            atomic_rewrite(
                self.path(receipt.review), render_receipt(receipt).encode("utf-8"), written=AFTER_TEMP_WRITE
            )

    def all(self) -> list[Receipt]:
        """Every readable receipt, oldest first; unreadable ones are skipped (see `listing`)."""
        return self.listing()[0]

    def listing(self) -> tuple[list[Receipt], list[ListError]]:
        """Every readable receipt, oldest first, and each file that is not one, with why."""
        receipts, errors = [], []
        for path in self._files():
            try:
                receipts.append(self._cached(path))
            except FileNotFoundError:  # replaced or removed since the glob
                continue
            except _NotAFile as exc:  # a link, a FIFO: never followed nor opened
                errors.append(ListError(path=str(path), message=str(exc), kind="reviews"))
            except (OSError, ValueError, ValidationError, yaml.YAMLError) as exc:
                errors.append(
                    ListError(path=str(path), message=f"not a valid receipt ({exc})", kind="reviews")
                )
        return sorted(receipts, key=lambda r: (r.createdAt, r.review)), sorted(errors, key=lambda e: e.path)

    def misnamed(self, wanted: Callable[[Receipt], bool] | None = None) -> ListError | None:
        """The files of the receipts' folder named as a receipt could be (`.md`, no dotfile) but
        not as remem names one (`RECEIPT_NAME`: a `notes.md`, a receipt renamed by hand, a name
        not UTF-8), as one error naming how many and the first few (bytes not UTF-8 escaped):
        no receipt, so no review state is made unknown by them, but `remem receipts` does not
        pass them over in silence, where a user looks for what the folder holds. Other names (a
        `notes.txt`, an editor's `.#a.md` lock) are passed over. `HomeUnusable` as `listing`.

        `wanted`: a filtered listing's filter (one session's reviews); only the files that may be
        a receipt it keeps are said (`_may_be`), not another session's or a note (decision 0547)."""
        found = {
            n for n in self._home.names_in(self.folder) if _receipt_like(n) and not RECEIPT_NAME.fullmatch(n)
        }
        for gone in [
            path for path in list(self._misnamed) if path.name not in found
        ]:  # list(): others may list
            self._misnamed.pop(gone, None)
        names = [n for n in found if wanted is None or self._may_be(self.folder / n, wanted)]
        if not names:
            return None
        first = ", ".join(sorted(shown(n) for n in names)[:NAMED_FILES])
        more = f" and {len(names) - NAMED_FILES} more" if len(names) > NAMED_FILES else ""
        message = (
            f"{len(names)} file(s) not named as remem names a receipt ({first}{more}) are no receipts "
            "(remem names each by its review id: 64 hex digits, then .md) and were passed over; move "
            "them out of the folder, or give a receipt renamed by hand its name back"
        )
        return ListError(path=str(self.folder), message=message, kind="reviews")

    def _files(self) -> list[Path]:
        """The receipt files, named `RECEIPT_NAME`: nothing else there is read as one, since an
        editor's lock (`.#a.md`) or a README read so made every session's review state unknown, as
        a damaged receipt must (decision 0529). None while their folder is not made. Never
        through a link; a folder that cannot be listed (a file there, no permission) is
        `HomeUnusable`."""
        return [
            self.folder / name for name in self._home.names_in(self.folder) if RECEIPT_NAME.fullmatch(name)
        ]

    def interrupted(self, receipts: Iterable[Receipt]) -> frozenset[str]:
        """The reviews among `receipts` (as `listing` read them) whose receipt says they are under
        way but which no run holds: stopped without finishing (killed, or its end unwritten),
        until a run of their session reviews them again. Nothing is written or made: a lock file
        is only looked at. A receipt rewritten since it was read is passed over (still pending): a
        run may have ended it, and let its lock go, between the read and the look."""
        return frozenset(r.review for r in receipts if r.status in IN_FLIGHT and self._unheld(r))

    def _unheld(self, receipt: Receipt) -> bool:
        path = self.path(receipt.review)
        read = self._parsed.get(path)
        if read is None or read[1] is not receipt:
            return False
        try:
            if held_elsewhere(self.lock_path(receipt.review)):
                return False
            return _version(_regular_stat(path)) == read[0]
        except (OSError, LockUnusable, _NotAFile):  # not known to have stopped: said pending
            return False

    def _may_be(self, path: Path, wanted: Callable[[Receipt], bool]) -> bool:
        """Whether the misnamed file at `path` may be a receipt `wanted` keeps (`_held_in`), read
        again only once its stat changed."""
        try:
            key = _version(path.lstat())  # a link's own: never followed
        except FileNotFoundError:  # removed since the folder was listed
            return False
        except OSError:
            return True
        known = self._misnamed.get(path)
        if known is None or known[0] != key:
            known = self._misnamed[path] = (key, _held_in(path))
        front = known[1]
        return front if isinstance(front, bool) else wanted(front)

    def _cached(self, path: Path) -> Receipt:
        key = _version(_regular_stat(path))
        known = self._parsed.get(path)
        if known is None or known[0] != key:
            text, key = _read_text(path)  # the key of what was read, should it change meanwhile
            known = self._parsed[path] = (key, parse_receipt(text))
        return known[1]


NAMED_FILES = 3  # the files one error about several names; the rest are counted


def said_once(folder: Path, errors: list[ListError]) -> list[ListError]:
    """The receipt files `listing` could not read, as one error naming how many and the first
    few when there are several: each leaves every review state unknown alike, and an editor
    showing a row for each showed noise. `remem receipts` names each."""
    if len(errors) <= 1:
        return errors
    named = "; ".join(f"{Path(e.path).name}: {e.message}" for e in errors[:NAMED_FILES])
    more = f"; and {len(errors) - NAMED_FILES} more" if len(errors) > NAMED_FILES else ""
    message = (
        f"{len(errors)} receipt files cannot be read, so no session's review state is shown "
        f"({named}{more}); `remem receipts` names each: fix or remove them"
    )
    return [ListError(path=str(folder), message=message, kind="reviews")]


# What a misnamed file holds (`_held_in`): a receipt renamed by hand; False, a note; True, no telling.
_Held = Receipt | bool


def _held_in(path: Path) -> _Held:
    """What the misnamed file at `path` holds. A receipt renamed by hand is read (its front matter
    only, never through a link nor waiting on a FIFO) for whose it is; a file that does not open
    with front matter is a note, no receipt (False); one that cannot be read, or whose front matter
    is no valid receipt (damaged; CRLF lines or a BOM, as an editor may save it, which
    `parse_receipt` does not read), cannot be told to be another's (True)."""
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            head = handle.read(_FRONT_READ_BYTES).decode("utf-8", errors="replace")
    except FileNotFoundError:  # removed since its stat
        return False
    except OSError:
        return True
    if not head.removeprefix("\ufeff").startswith(("---\n", "---\r\n")):
        return False
    try:
        return parse_receipt(head)
    except ValueError:  # what `parse_receipt` raises of any text
        return True


# Enough of a misnamed file to parse its front matter, which remem parses up to this size.
_FRONT_READ_BYTES = safe_yaml.MAX_BYTES + 64 * 1024


def _receipt_like(name: str) -> bool:
    """Whether a name is one a receipt could be mistaken for: a Markdown file, not a dotfile."""
    return name.endswith(".md") and not name.startswith(".")


def render_receipt(receipt: Receipt) -> str:
    return f"---\n{_front(receipt)}---\n\n{summary(receipt)}\n"


def _front(receipt: Receipt) -> str:
    return yaml.dump(receipt.model_dump(mode="json"), Dumper=_DUMPER, sort_keys=False, allow_unicode=True)


# What a receipt's front matter may take when its changes are planned: what remem parses back
# (`safe_yaml.MAX_BYTES`), less room for what a commit adds (the history link names each record
# added, changed or removed, at most RECORDS_MAX, and the times and revisions).
FRONT_ROOM_BYTES = safe_yaml.MAX_BYTES - 128 * 1024


def front_bytes(receipt: Receipt) -> int:
    """The bytes of `receipt`'s front matter, which is all a read parses."""
    return len(_front(receipt).encode("utf-8"))


def history_summary(link: HistoryLink) -> str:
    """What the review changed, as a diff stat, and the history entries to look at it with."""
    parts = [
        f"{len(names)} record(s) {label} ({', '.join(f'`{n}`' for n in names)})"
        for label, names in (("added", link.added), ("changed", link.changed), ("removed", link.removed))
        if names
    ]
    if link.globalChanged:
        parts.append("Global memory changed")
    entries = [
        f"{scope} {entry[:12]}"
        for scope, entry in (("workspace", link.workspaceEntry), ("Global", link.globalEntry))
        if entry
    ]
    what = "; ".join(parts) or "nothing"
    return (
        f"Changed: {what}; {link.insertions} insertion(s)(+), {link.deletions} deletion(s)(-). "
        f"History: {', '.join(entries)} (`remem memory diff ENTRY`)."
    )


def parse_receipt(text: str) -> Receipt:
    if not text.startswith("---\n") or "\n---\n" not in text[3:]:
        raise ValueError("no YAML front matter")
    front = text[4 : text.index("\n---\n", 3) + 1]
    # One line each: the receipt's error is listed and quoted in refusals.
    try:
        return Receipt.model_validate(safe_yaml.load(front))
    except ValidationError as exc:
        raise ValueError(validation_problems(exc)) from None
    except yaml.YAMLError as exc:
        raise ValueError(" ".join(str(exc).split())) from None


def summary(receipt: Receipt) -> str:
    """A few lines a person can read without knowing the schema."""
    unit = receipt.source.unit
    lines = [f"Review of session {receipt.source.session} (through {unit} {receipt.source.coveredSeq}): "
             f"**{receipt.status.value}**."]  # fmt: skip
    for change in receipt.changes:
        what = "Global memory" if change.action == "replace-global" else f"`{change.name}`"
        ranges = ", ".join(f"{r.fromSeq}-{r.toSeq}" for r in change.evidence)
        lines.append(f"- {change.action} {what} (evidence: {unit}s {ranges})")
    if receipt.repeats is not None:
        lines.append(
            f"\nIts evidence is what review {receipt.repeats} read: only the session's metadata "
            "(a title, say) changed since, so no model was asked."
        )
    if receipt.history is not None:
        lines.append(f"\n{history_summary(receipt.history)}")
    attempt = receipt.attempt
    if attempt is not None:
        detail = f": {attempt.error}" if attempt.error else ""
        route = f"{attempt.provider}/{attempt.model}"
        lines.append(f"\nAttempt {attempt.number} with {route}: {attempt.status.value}{detail}")
    dropped = dropped_attempts(receipt.attempts)
    if dropped:
        lines.append(
            f"\n{dropped} attempt(s) after the first are not listed: a receipt keeps the first and "
            f"the newest {NEWEST_ATTEMPTS_KEPT}; their worker sessions are kept"
        )
    return "\n".join(lines)
