"""The one set of credential patterns: redacting them, finding them, the keys in use, and an
environment without the variables that hold them (`without_credentials`).

Session evidence can quote `.env` files, shell output and config snippets, and provider errors
can echo request headers or the key itself. Masking the common, well-shaped credentials keeps
them out of the worker's input, of receipts, debug entries and log lines; finding them lets
proposals be refused and memory files warned about. It is deliberately best effort, as the
seed (§7.2) says: no scanner recognises every secret. What is certain is masked exactly: the
API keys this process uses (`remember`) are redacted wherever they appear, whatever their
shape. Each match becomes `[redacted <kind>]`; for `key = value` assignments (`DB_PASS=x` and
`MYSQL_PWD=x` too), a URL's `user:password@`, `--password x`, `mysql -px`, `curl -u user:x`,
`docker login -p x`, `sshpass -p x`, a netrc entry's `password x`, an `Authorization: Basic`
header and an Azure connection string's `AccountKey=` or `SharedAccessSignature=` only the value
is replaced, so the text still says what was there.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass

_PRIVATE_KEY = re.compile(
    # An unterminated block (a truncated paste) is redacted to the end: what follows is key material.
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)",
    re.DOTALL,
)
# Each token pattern with the literals one of which any match contains: a `\b`-led pattern is
# tried at every offset, so `find` (run on every keystroke in the editor) looks for those first.
_TOKENS = (
    ("aws-access-key-id", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), (b"AKIA", b"ASIA")),
    ("api-key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"), (b"sk-",)),
    (
        "github-token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
        (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
    ),
    ("slack-token", re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}"), (b"xox",)),
    # Stripe's secret and restricted keys (its publishable `pk_` keys are public).
    ("stripe-key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"), (b"k_live_", b"k_test_")),
    # Each token below begins with its literal, which `re` looks for as fast as a substring, and
    # then looks back for the word boundary: `redact` tries every pattern on every text.
    # A JWT: a header and a payload, both base64url JSON objects (`{"` is `eyJ`), and a signature;
    # not inside a longer base64url run, so that a run of `eyJ-` is tried once, not at each.
    (
        "jwt",
        re.compile(r"eyJ(?<![\w-]eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}"),
        (b"eyJ",),
    ),
    ("google-api-key", re.compile(r"AIza(?<!\wAIza)[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"), (b"AIza",)),
    # Letters of both cases, so that a long `hf_` identifier in code is not one.
    (
        "huggingface-token",
        re.compile(r"hf_(?<!\whf_)(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[a-z])[A-Za-z0-9]{30,}\b"),
        (b"hf_",),
    ),
    ("npm-token", re.compile(r"npm_(?<!\wnpm_)[A-Za-z0-9]{36}\b"), (b"npm_",)),
    ("gitlab-token", re.compile(r"glpat-(?<!\wglpat-)[A-Za-z0-9_-]{20,}"), (b"glpat-",)),
)
_NOT_A_VALUE = r"(?!\[redacted\ )"  # already masked by a more specific pattern
_AWS_SECRET = re.compile(
    r"(?i)(\baws_secret_access_key[\"']?\s*[:=]\s*[\"']?)" + _NOT_A_VALUE + r"[A-Za-z0-9/+=]+"
)
_BEARER = re.compile(
    r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?bearer\s+)" + _NOT_A_VALUE + r"[A-Za-z0-9._~+/=-]+"
)
# HTTP Basic credentials: base64 of `user:password`. `Basic realm`, `Basic <base64>`, `Basic $B64`
# and a word (`Basic authentication`) hold none: the value is 8 or more base64 characters with a
# digit, `+`, `/` or `=`, or an upper-case letter past its first (base64 of text always has one).
_BASIC = re.compile(
    r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?basic[ \t]+)"
    + _NOT_A_VALUE
    + r"(?-i:(?=[A-Za-z0-9+/]*[0-9+/=]|[A-Za-z0-9+/]+[A-Z])[A-Za-z0-9+/]{8,}={0,2})(?![\w+/=-])"
)
# Azure connection strings (`AccountKey=...==;`, Service Bus's `SharedAccessKey=`) and a SAS
# (`SharedAccessSignature=sv=...&sig=...`): the value runs to the next `;`. Placeholders
# (`<key>`, `{key}`, `$KEY`, `...`, `****`) are no value.
_AZURE_KEY = re.compile(
    r"(?i)(\b(?:account|shared[_-]?access)[_-]?key\s*=\s*)" + _NOT_A_VALUE + r"[A-Za-z0-9+/=]{16,}"
)
_AZURE_SAS = re.compile(
    r"(?i)(\bshared[_-]?access[_-]?signature\s*=\s*)" + _NOT_A_VALUE + r"(?![$<{*]|\.\.\.)[^\s;\"'`<>]{8,}"
)
# A match starts at one of these words (in any case); the name before it (`DB_PASSWORD`) stays.
_SECRET_WORDS = (b"password", b"passwd", b"secret", b"token", b"api_key", b"api-key", b"apikey",
                 b"private_key", b"private-key", b"privatekey", b"pass", b"pwd")  # fmt: skip
# `PASS` and `PWD` name a password only as the last word of an upper-case variable (`DB_PASS`,
# `MYSQL_PWD`): `first_pass = 2` is code, `PWD`, `$PWD` and `pwd: /home/x` a directory. Such a
# variable also names a count, a switch or a folder (`NUM_PASS=2`, `SKIP_PASS: true`,
# `OLD_PWD=/srv`, `OLD_PWD=C:\Users\me`), so its value must look like a secret: not a number
# of up to 5 digits (a count, a port; a longer one may be a PIN), not a boolean, not a path
# (`/`, `~/`, `./`, `../`, `C:\`; a value merely beginning with `.` or `~`, `.hunter2x`, is one).
_NOT_A_PASS = r"""(?: / | ~/ | \.\.?/ | [A-Za-z]:[\\/] | \\\\
    | (?: [-+]?[0-9]{1,5}(?:\.[0-9]+)? | (?i:true|false|yes|no|on|off|null|none) ) (?![^\s"',;&`]) )"""
_ASSIGNMENT = re.compile(
    r"""(?ix)
    (?P<key>(?:password|passwd|secret(?:[_-]?key)?|token|api[_-]?key|private[_-]?key
            |(?P<upper>(?-i:(?<=[A-Z0-9]_)(?:PASS|PWD))))
        ["']?\s*[:=]\s*)
    """
    + _NOT_A_VALUE
    + r"(?(upper)(?![\"']?"
    + _NOT_A_PASS
    + "))"
    # `$VAR`, `<placeholder>` and `{template}` name a secret without holding one; a bare value
    # ends at a backtick, the end of the inline code it is written in.
    + r"""
    (?: "(?P<double>[^"\n]+)" | '(?P<single>[^'\n]+)' | (?P<bare>(?![$<{])[^\s"',;&`]+) )
    """
)


# What a value of the forms below never is: `$VAR`, `${VAR}`, `<placeholder>`, `{template}`, a
# `%s` format, `****`, `...`, `xxx` or the word `password` standing for one (`user:password@host`
# in a how-to), or a credential a more specific pattern masked already.
_PLACEHOLDER = (
    r"(?![$<{*]|%[sd(]|\.\.\.|\[redacted\ "
    r"|(?i:password|passwd|secret|x{3,})(?=[@\s\"'`]|$))"
)
# Each pattern below begins with a literal (`re` looks for it as fast as a substring) and looks
# back from it where it needs to. Only its `value` group (or `value_dq`/`value_sq`, inside double
# or single quotes) is the credential: what names it (a URL's scheme and host, a flag, a command,
# a user) stays. None holds a blank line (decision 0152's cuts): their whitespace is spaces,
# tabs and a shell line continuation, and a netrc entry's single line breaks.
_URL_LOGIN = re.compile(
    # `scheme://user:password@`, masked as `mask_userinfo` masks a base_url's login, to the last
    # @ (a password may hold one); a login without a password (`ssh://git@host`) is no secret.
    r"://(?<=[A-Za-z0-9+.-]://)(?P<value>[^/?#\s:@]*:" + _PLACEHOLDER + r"[^/?#\s]+)@"
)
_QUOTED = (
    r"""(?: "(?P<value_dq>"""
    + _PLACEHOLDER
    + r"""[^"\n]+)" | '(?P<value_sq>"""
    + _PLACEHOLDER
    + r"""[^'\n]+)' )"""
)
# What a flag's value never is in prose: a lower-case word (`the --password option`, `-p is
# deprecated`) or an upper-case placeholder (`--password PASSWORD`).
_NOT_A_WORD = r"""(?![a-z]+[.,;:!?)\]`'"*]*(?!\S)) (?![A-Z][A-Z0-9_]*[.,;:!?)\]`'"*]*(?!\S))"""
_PASSWORD_FLAG = re.compile(
    # `--password x`, `--db-password x` (the `=` form is an assignment). The value is taken only
    # where a flag's value is unambiguous: not a flag (`--password --user x`), nor a word.
    r"""(?x) --(?<![\w-]--) (?!(?:no|ask|prompt|skip|use|with|without|require|allow|empty)-)
    (?:[a-z0-9]+-)?pass(?:word|wd) [ \t]+
    (?: """
    + _QUOTED
    + r""" | (?P<value>"""
    + _PLACEHOLDER
    + r"""(?![-"'`(\[]) """
    + _NOT_A_WORD
    + r""" [^\s"'`;&|()<>]+ ) )"""
)


def _option_of(first: str, rest: str, option: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`option` given to a command named `first` + `rest`; and the same option again further on
    in that command. Its words reach to a blank before the option: spaces, tabs and line
    continuations, never the next command (`;`, `&&`, `|`) nor another command of that name,
    where that one's match begins instead (a line naming it often is scanned once)."""
    name = rf"{first}(?<!\w{first})(?:{rest})\b"
    words = rf"(?:(?!{name})[^\n;&|]|\\\n)*?[ \t]"
    return re.compile(f"(?x){name}{words}{option}"), re.compile(f"(?x){words}{option}")


# The MySQL clients' `-p<password>`, attached: `-p secret` prompts, `secret` is the database.
_MYSQL_PASSWORD = _option_of(
    "m",
    r"ysql(?:dump|admin|import|show|check|pump)?|ariadb(?:-dump|-admin)?",
    r"-p (?: " + _QUOTED + r" | (?P<value>" + _PLACEHOLDER + r"""(?!["'])[^\s"'`;&|()<>]+ ) )""",
)
# `curl -u user:password` (`--user`); without a password (`-u user`) curl asks for one.
_CURL_LOGIN = _option_of(
    "c",
    "url",
    r"""(?:-u[ \t]*|--user(?:[ \t]+|=))
    (?: "[^"\s:]*:(?P<value_dq>"""
    + _PLACEHOLDER
    + r"""[^"\n]+)"
      | '[^'\s:]*:(?P<value_sq>"""
    + _PLACEHOLDER
    + r"""[^'\n]+)'
      | [^\s"':]*:(?P<value>"""
    + _PLACEHOLDER
    + r"""[^\s"'`;&|()<>]+) )""",
)
# What a `-p` value is where `-p` takes a password: not a flag (`-p -u x`), not a placeholder,
# not a lower-case word ending a clause (`-p, deprecated`, `docker login -p.`). Any other word
# is: `sshpass -p hunter ssh h` holds the password `hunter` (prose seldom reaches `-p` where
# only the command's own options may stand before it, below).
_P_VALUE = (
    r"-p (?:[ \t]+|=)? (?: "
    + _QUOTED
    + r" | (?P<value>"
    + _PLACEHOLDER
    + r"""(?![-="']) (?![a-z]*[.,:](?!\S)) [^\s"'`;&|()<>]+ ) )"""
)
# `docker login -p x` (`podman login`, the same options) and `sshpass -p x` (it runs the command
# that follows with that password). `-p` is a password only as that command's own option: what
# comes between is only its options (with their values) and, for a login, its registry. So the
# span ends at a pipe, `;`, `&`, a backtick, a comma, parentheses or a redirection, and at the
# command sshpass runs (`sshpass -f pw ssh -p 2222`) or another word (`docker login, then docker
# run -p 8080:80`), where `-p` is a port, a project or a flag of that command. Every word is
# read once: each is an option (its kind tells whether a value follows), a value, or the one
# registry, so the pattern never tries a word two ways and takes time linear in the text.
_BLANK = r"(?:[ \t]|\\\n)+"  # spaces, tabs and line continuations, never a line's end
_WORD = r"""[^\s"'`,;&|()<>]"""  # a character of a word in a command


def _login_pattern(
    first: str, rest: str, option: Callable[[str], str], registry: bool
) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`-p` given to the command `first` + `rest`, whose options `option(argument)` makes (given
    the pattern of a value); with `registry`, one other word may stand among them. Also the
    pattern of `-p` again further on in that command. No value is that command's name: where
    it is named again, its own match begins, so a text naming it often is read once."""
    argument = rf"""(?: "[^"\n]*" | '[^'\n]*' | <[\w.-]+> | (?!{first}{rest}(?!{_WORD})){_WORD}+ )"""
    options = rf"(?: {_BLANK} {option(argument)} )*"
    words = rf"{options} (?: {_BLANK} (?!-){argument} {options} )?" if registry else options
    return (
        re.compile(rf"(?x) {first}(?<!\w{first}){rest}\b {words} {_BLANK} {_P_VALUE}"),
        re.compile(rf"(?x) {words} {_BLANK} {_P_VALUE}"),
    )


# docker login's and podman login's options: those taking a value (`-u bob`, `--authfile=f`),
# and flags (`--password-stdin`, `-v`, `--tls-verify=false`, `-ubob`); `--password x` is
# `_PASSWORD_FLAG`'s.
_LOGIN_VALUED = r"(?:-u|--username|--authfile|--cert-dir|--compat-auth-file|--secret)"


def _login_option(argument: str) -> str:
    return rf"""(?: {_LOGIN_VALUED} (?: ={argument} | {_BLANK}(?!-){argument} )
    | (?!{_LOGIN_VALUED}(?![\w-])) (?: -(?!p)[A-Za-z] | --(?!password(?![\w-]))[A-Za-z] ) {_WORD}* )"""


# sshpass's: `-f file`, `-d fd` and `-P prompt` take a value (apart or attached), `-e[VAR]`, `-v`
# and `-h` none. The first other word is the command it runs.
def _sshpass_option(argument: str) -> str:
    return rf"""(?: -[fdP] (?: {_BLANK}(?!-){argument} | {_WORD}+ ) | -[ehvV]{_WORD}*
    | --[A-Za-z][\w-]*(?:={argument})? )"""


_DOCKER_LOGIN = _login_pattern("d", r"ocker[ \t]+login", _login_option, registry=True)
_PODMAN_LOGIN = _login_pattern("p", r"odman[ \t]+login", _login_option, registry=True)
_SSHPASS = _login_pattern("s", "shpass", _sshpass_option, registry=False)
# A netrc entry: `machine host [login user] [account a] [port p] password value`, on one line or
# several (never over a blank one). In prose (`the machine password is required`) what follows
# `password` is a word: a lower-case word, like an upper-case placeholder, is no value, as for
# `--password`.
_NETRC_SPACE = r"(?=\s)[ \t]*(?:\n[ \t]*)?"
_NETRC = re.compile(
    rf"""(?x) machine(?<![\w-]machine) {_NETRC_SPACE} (?!password\b)\S+
    (?: {_NETRC_SPACE} (?:login|account|port) {_NETRC_SPACE} \S+ )*
    {_NETRC_SPACE} password {_NETRC_SPACE}
    (?P<value>"""
    + _PLACEHOLDER
    + r"""(?![a-z]+[.,;:!?)\]`'"*]*(?!\S)) (?![A-Z][A-Z0-9_]*[.,;:!?)\]`'"*]*(?!\S)) \S+ )"""
)
# Each with its kind, the pattern of its further values in the same command (all of them are
# masked at once, so that masking again changes nothing), and the literals one of which any
# match contains.
_VALUED: tuple[tuple[str, re.Pattern[str], re.Pattern[str] | None, tuple[bytes, ...]], ...] = (
    ("userinfo", _URL_LOGIN, None, (b"://",)),
    ("password", _PASSWORD_FLAG, None, (b"-passw",)),
    ("password", *_MYSQL_PASSWORD, (b"mysql", b"mariadb")),
    ("password", *_CURL_LOGIN, (b"curl",)),
    ("password", *_DOCKER_LOGIN, (b"docker",)),
    ("password", *_PODMAN_LOGIN, (b"podman",)),
    ("password", *_SSHPASS, (b"sshpass",)),
    ("password", _NETRC, None, (b"machine",)),
)


def _values(
    text: str, pattern: re.Pattern[str], further: re.Pattern[str] | None
) -> Iterator[tuple[int, int]]:
    """The spans of the values `pattern` finds in `text`, in order, each followed by those
    `further` finds right after it."""
    for found in pattern.finditer(text):
        match: re.Match[str] | None = found
        while match is not None:
            start, end = next(match.span(k) for k, v in match.groupdict().items() if v is not None)
            yield start, end
            match = further.match(text, end) if further is not None else None


def _masked(text: str, spans: Iterator[tuple[int, int]], kind: str) -> str:
    parts, at = [], 0
    for start, end in spans:
        parts += [text[at:start], f"[redacted {kind}]"]
        at = end
    return "".join(parts) + text[at:] if parts else text


def _assignment(match: re.Match[str]) -> str:
    quote = '"' if match["double"] is not None else "'" if match["single"] is not None else ""
    return f"{match['key']}{quote}[redacted secret]{quote}"


def _keep_key(kind: str) -> Callable[[re.Match[str]], str]:
    return lambda match: f"{match[1]}[redacted {kind}]"


# Shorter values (a local server's placeholder key) would mask ordinary words.
_REMEMBER_MIN = 8
# Longest first, so that a key containing another is masked whole; replaced, never changed, so
# a reader (every keystroke's `find`) needs no lock.
_remembered: tuple[str, ...] = ()
_remembered_lock = threading.Lock()


@dataclass(frozen=True)
class Found:
    """A likely credential in a text: its span (offsets) and its kind, never its value."""

    start: int
    end: int
    kind: str


def remember(value: str) -> None:
    """Mask `value` (an API key this process uses) in everything `redact` sees from now on."""
    global _remembered
    if len(value) >= _REMEMBER_MIN:
        with _remembered_lock:
            _remembered = tuple(sorted({*_remembered, value}, key=len, reverse=True))


def redact(text: str) -> str:
    """`text` with the remembered keys and recognisable credentials replaced by `[redacted <kind>]`."""
    for value in _remembered:
        text = text.replace(value, "[redacted route-key]")
    text = _PRIVATE_KEY.sub("[redacted private-key]", text)
    for kind, pattern, _ in _TOKENS:
        text = pattern.sub(f"[redacted {kind}]", text)
    for kind, pattern, _ in _KEYED:
        text = pattern.sub(_keep_key(kind), text)
    # Assignments before the valued forms: `DB_PASSWORD=postgres://u:p@h` is masked whole.
    text = _ASSIGNMENT.sub(_assignment, text)
    for kind, pattern, further, _ in _VALUED:
        text = _masked(text, _values(text, pattern, further), kind)
    return text


def find(text: str, utf8: bytes | None = None) -> list[Found]:
    """Each likely credential in `text`, in order, overlapping matches reported once.

    `utf8` is the text's UTF-8 (`surrogatepass`) if the caller has it. The editor runs this on
    every keystroke, so a long text is scanned in pieces (`_pieces`) whose findings are kept:
    a keystroke re-scans the piece it changed. The pieces end where no pattern can match
    across, so the findings are exactly those of one scan; where that cannot be told from the
    text (remembered keys, a private key block, a character `re` matches to an ASCII letter
    when ignoring case), the text is scanned whole.
    """
    whole = len(text) < 2 * _PIECE_MIN or _remembered or _PEM_START in text
    if whole or (not text.isascii() and any(c in text for c in _FOLDS_TO_ASCII)):  # isascii: O(1)
        return _scan(text, utf8)
    found: list[Found] = []
    for offset, piece in _pieces(text):
        if hits := _scan_piece(piece):  # most pieces hold none
            found += [Found(f.start + offset, f.end + offset, f.kind) for f in hits]
    return found


# The patterns whose match keeps the key before the value (its group 1), each with the words (in
# any case) one of which every match holds.
_KEYED = (
    ("aws-secret-access-key", _AWS_SECRET, (b"aws_secret_access_key",)),
    ("bearer-token", _BEARER, (b"authorization",)),
    ("basic-auth", _BASIC, (b"authorization",)),
    (
        "azure-key",
        _AZURE_KEY,
        (b"accountkey", b"account_key", b"account-key", b"accesskey", b"access_key", b"access-key"),
    ),  # fmt: skip
    ("azure-sas", _AZURE_SAS, (b"signature",)),
)


def _scan(text: str, utf8: bytes | None) -> list[Found]:
    keys = (m for value in _remembered for m in re.finditer(re.escape(value), text))
    found = [Found(m.start(), m.end(), "route-key") for m in keys]
    found += [Found(m.start(), m.end(), "private-key") for m in _PRIVATE_KEY.finditer(text)]
    literals = _Literals(text, utf8)
    for kind, pattern, hints in _TOKENS:
        if literals.has(hints):
            found += [Found(m.start(), m.end(), kind) for m in pattern.finditer(text)]
    for kind, pattern, words in _KEYED:
        if any(map(literals.has_any_case, words)):
            found += [Found(m.end(1), m.end(), kind) for m in pattern.finditer(text)]
    for m in _assignments(text, literals):
        value = next(g for g in ("double", "single", "bare") if m[g] is not None)
        found.append(Found(m.start(value), m.end(value), "secret"))
    for kind, pattern, further, gate in _VALUED:
        if literals.has(gate):
            found += [Found(start, end, kind) for start, end in _values(text, pattern, further)]
    kept: list[Found] = []
    for item in sorted(found, key=lambda f: f.start):
        if not kept or item.start >= kept[-1].end:
            kept.append(item)
    return kept


# Characters; a keystroke re-scans about this much of a long text. Each piece costs a slice, a
# hash and a few searches, and rescanning one costs about 20 literal searches over it: 1 KiB
# measured fastest per keystroke on 8 KiB and 24 KiB texts (2 and 4 KiB up to 1.4x slower).
_PIECE_MIN = 1024
_PEM_START = "-----BEGIN"  # a private key block matches across lines, to the end if unterminated
# What `re` matches to an ASCII letter when ignoring case (İ ı ſ K): the literal gates and the
# secret-word starts could then differ between a piece and the whole text.
_FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u017f", "\u212a")


@functools.lru_cache(maxsize=1024)
def _scan_piece(piece: str) -> tuple[Found, ...]:
    return tuple(_scan(piece, None))


def _pieces(text: str) -> Iterator[tuple[int, str]]:
    """`text` cut after blank lines, each piece at least `_PIECE_MIN` long, with its offset.

    A cut falls only where no pattern can match across it: the only whitespace a match may hold
    is around an assignment's `:` or `=` and after `bearer`, so the text around the
    blank line must not continue one (the next character `:`, `=` or more whitespace; the last
    one before the blank line `:`, `=` or the end of `bearer`); the valued forms (`_VALUED`) hold
    spaces, tabs, line continuations and a netrc entry's single line breaks only, never a blank
    line. A cut is found after the
    previous one's minimum, so an edit moves only the cuts near it.
    """
    start = 0
    at = text.find("\n\n", _PIECE_MIN)
    while at >= 0:
        cut = at + 2
        if _cuttable(text, at, cut):
            yield start, text[start:cut]
            start = cut
            at = text.find("\n\n", cut + _PIECE_MIN)
        else:
            at = text.find("\n\n", cut)
    yield start, text[start:]


def _cuttable(text: str, at: int, cut: int) -> bool:
    if cut >= len(text) or text[cut].isspace() or text[cut] in ":=":
        return False
    last = at - 1
    while last >= 0 and text[last].isspace():
        last -= 1
    return last >= 0 and text[last] not in ":=" and text[max(0, last - 5) : last + 1].lower() != "bearer"


# The only characters whose lower case holds ASCII letters: İ lowers to "i̇", K (Kelvin) to "k".
_LOWERS_TO_ASCII = ("\u0130", "\u212a")


class _Literals:
    """Where ASCII literals occur in a text, exactly or in any case (as in `text.lower()`).

    Looked for in UTF-8 bytes: an ASCII literal occurs in a text where its bytes occur in the
    text's UTF-8, and bytes lower only ASCII, at C speed, which is the same as lowering the text
    unless it holds a character of `_LOWERS_TO_ASCII`; then the lowered text is encoded instead.
    """

    def __init__(self, text: str, utf8: bytes | None) -> None:
        self._data = text.encode("utf-8", "surrogatepass") if utf8 is None else utf8
        folds = any(c in text for c in _LOWERS_TO_ASCII)
        self._lowered = text.lower().encode("utf-8", "surrogatepass") if folds else self._data.lower()
        self._characters = len(text)
        self._offsets_carry = "\u0130" not in text  # the only character that lowers to two

    def has(self, literals: tuple[bytes, ...]) -> bool:
        """Whether one of `literals` occurs exactly (`map` keeps the searches at C speed)."""
        return any(map(self._data.__contains__, literals))

    def has_any_case(self, word: bytes) -> bool:
        return word in self._lowered

    def starts(self, words: tuple[bytes, ...]) -> list[int] | None:
        """The text offsets where one of the lower-case `words` starts in any case, in order;
        None when lowering changes the text's length, so that offsets in the lowered text are
        not the text's."""
        if not self._offsets_carry:
            return None
        lowered, found = self._lowered, set()
        for needle in words:
            at = lowered.find(needle)
            while at >= 0:
                found.add(at)
                at = lowered.find(needle, at + 1)
        ordered = sorted(found)
        return ordered if len(lowered) == self._characters else _character_offsets(lowered, ordered)


def _character_offsets(data: bytes, offsets: list[int]) -> list[int]:
    """Byte offsets of ASCII characters in UTF-8 `data`, as offsets in the text it encodes."""
    characters, done, at = [], 0, 0
    for offset in offsets:
        done += len(data[at:offset].decode("utf-8", "surrogatepass"))
        characters.append(done)
        at = offset
    return characters


def _assignments(text: str, literals: _Literals) -> Iterator[re.Match[str]]:
    """`_ASSIGNMENT.finditer(text)`, tried only where a secret word starts."""
    starts = literals.starts(_SECRET_WORDS)
    if starts is None:  # a few characters lower to two: offsets would not carry over
        yield from _ASSIGNMENT.finditer(text)
        return
    end = 0
    for start in starts:
        if start >= end and (match := _ASSIGNMENT.match(text, start)) is not None:
            end = match.end()
            yield match


# `scheme://user:password@host`: a provider's base_url may carry a proxy's or a server's login,
# masked whole, a password or not (a token may be the user). Evidence and proposals mask only a
# login with a password (`_URL_LOGIN`): in prose, `ssh://git@host` names no secret.
#
# Both take a URL from where its scheme's run of characters (`[a-z0-9+.-]`) begins, and read that
# run once: the lookahead (never gone back into) holds the run to its end, from its first letter
# at a word's start, and `://` must follow; the scheme starts at that letter as before, and what
# precedes it in the run is kept as written. Tried from each letter, `\b[a-z][a-z0-9+.-]*://` read
# the rest of the run again from each, and `a.a.a...` took time growing with the square of its
# length, a stall for any log line holding one long token (a provider's error body).
def _scheme(group: str) -> str:
    return rf"(?<![a-z0-9+.-])(?=(?P<{group}>[a-z0-9+.-]*?\b[a-z][a-z0-9+.-]*))(?P={group})://"


_USERINFO = re.compile(rf"(?i)(?P<url>{_scheme('run')})[^/?#\s]+@")  # to the last @: a password may hold one
# A URL's query (`?key=...`, `?api-version=...`): a gateway may take its key there, under any
# name, so every value is masked (decision 0413). It ends where a URL cannot go on: whitespace, a
# quote, `<>`, a backtick, the fragment, and not on the punctuation of a sentence or parentheses
# around it; a login already masked (`[redacted userinfo]@`) is passed over, so masking twice
# changes nothing. The path before the `?` is read up to the next scheme, not over it: the URL
# that scheme begins reaches the same `?`, so the same query is masked, and a token of many URLs
# without one (`a://a://...`, a list) is read once, not once from each.
_QUERY = re.compile(
    rf"(?i){_scheme('run')}(?:\[redacted userinfo\]@)?(?:(?!{_scheme('next')})[^\s?#\"'<>`])*"
    r"\?(?P<query>[^\s#\"'<>`]*[^\s#\"'<>`).,;:!?])"
)
_MASKED_QUERY = "[redacted query]"


def query_parameters(query: str) -> list[tuple[str, str, str]]:
    """Each parameter of a URL's query as its name, `=` and value; a bare one (`?token`) names
    nothing and is all value (perhaps the key itself): `("", "", "token")`."""
    parameters = []
    for parameter in query.split("&"):
        name, equals, value = parameter.partition("=")
        parameters.append((name, equals, value) if equals else ("", "", name))
    return parameters


def _masked_query(match: re.Match[str]) -> str:
    parameters = [
        f"{name}{equals}{value}"
        if not value or value.startswith("[redacted")
        else f"{name}{equals}{_MASKED_QUERY}"
        for name, equals, value in query_parameters(match["query"])
    ]
    return match.group()[: match.start("query") - match.start()] + "&".join(parameters)


def mask_userinfo(text: str) -> str:
    """`text` with the login and the query values of every URL in it masked: how remem shows a
    base_url anywhere (the query first: its pattern passes over a login masked already)."""
    if "://" not in text:  # most log lines: both patterns need it
        return text
    return _USERINFO.sub(r"\g<url>[redacted userinfo]@", _QUERY.sub(_masked_query, text))


# A variable whose name says it holds a credential: `OPENAI_API_KEY`, `GITHUB_TOKEN`,
# `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`. None of what a process of remem needs (`PATH`, `HOME`,
# `PYTHONPATH`, `LANG`, `LC_*`, `TZ`, `REMEM_*`, a harness's home) is named so.
_CREDENTIAL_VARIABLE = re.compile(
    r"(?i)(?:^|_)(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|(?:SECRET|ACCESS|PRIVATE)_KEY)$"
)


def without_credentials(environ: Mapping[str, str], named: Collection[str]) -> dict[str, str]:
    """`environ` without the variables `named` (those the settings name as a provider's key,
    whatever their name) and those whose name says they hold a credential: the environment of
    a process that needs none (a cold listing's workers, decision 0374)."""
    return {k: v for k, v in environ.items() if k not in named and not _CREDENTIAL_VARIABLE.search(k)}


class RedactingFormatter(logging.Formatter):
    """Log lines, tracebacks included, with credentials masked: an exception may quote a key, and
    the HTTP client logs each request's URL, login and query included."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(mask_userinfo(super().format(record)))


def log_to_stderr(level: int, fmt: str) -> None:
    """Log this process to stderr from `level` up, every line masked: how each remem process
    logs (the daemon, `remem lsp`, `remem mcp`, a command run without the daemon)."""
    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter(fmt))
    logging.basicConfig(level=level, handlers=[handler], force=True)
