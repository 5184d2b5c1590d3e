"""A static reading of a bash command line: what would run, with which words.

Used by the command analysis (:mod:`clawcore.security.commands`) to judge
every command a shell line would start, rather than the line's characters.
The reader never executes anything. It follows what bash does to the text
before it runs a command: quote removal (``r''m``, ``"rm"``, ``\\rm``),
``$'..'`` escapes, variables assigned earlier on the same line
(``c=rm; $c -rf ~``), ``$IFS`` word splitting, brace expansion
(``{rm,-rf,/}``), and command substitutions whose output is known
statically (``$(echo rm)``, ``$(printf '\\x72\\x6d')``). Anything whose value
depends on the running system is marked dynamic.

The result is a flat list of :class:`SimpleCommand` s with their pipeline
neighbours, so that rules can ask "what feeds this shell's stdin?".
Malformed input (an unclosed quote, an unmatched parenthesis) never raises:
it sets :attr:`Script.errors`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "DYNAMIC",
    "Redirect",
    "Script",
    "SimpleCommand",
    "Word",
    "brace_expand",
    "decode_escapes",
    "parse",
    "printf_output",
]

#: Marks an unknown value inside a word's static text.
DYNAMIC = "\x00"

_HOME_VARS = {
    "HOME": "~",
    "USER": "user",
    "LOGNAME": "user",
    "SHELL": "/bin/bash",
    "PWD": ".",
    "TMPDIR": "/tmp",
    "PATH": "/usr/bin:/bin",
}
_RESERVED_SKIP = {"if", "then", "else", "elif", "do", "while", "until", "!", "time", "{", "coproc"}
_RESERVED_END = {"fi", "done", "esac", "}", "then", "do", "else"}
_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "(", ")", "\n")
_REDIR = re.compile(r"(\d*|&)(<<<|<<-|<<|<>|>>|>&|<&|>\||>|<)")
_MAX_DEPTH = 8
#: A run of characters that mean nothing special inside a word.
_PLAIN = re.compile(r"[^ \t\r\n;&|()<>\\'\"$`!@*+?]+")


@dataclass(frozen=True)
class Word:
    """One word after expansion.

    ``text`` is the static value with :data:`DYNAMIC` where a value is
    unknown; ``raw`` the source spelling.
    """

    text: str
    raw: str
    quoted: bool = False

    @property
    def dynamic(self) -> bool:
        return DYNAMIC in self.text

    @property
    def value(self) -> str:
        """The static text with unknown parts dropped."""
        return self.text.replace(DYNAMIC, "")


@dataclass(frozen=True)
class Redirect:
    """``op`` is the operator without the fd (``>``, ``>>``, ``<``, ``<<<``, ``<<``, ``>&``);
    ``target`` the file, fd or here-string/here-document text."""

    fd: str
    op: str
    target: str


@dataclass
class SimpleCommand:
    """One command a shell would start, after expansion.

    ``origin`` says where it came from: ``""`` for the line itself,
    ``"$()"`` for a command substitution, ``"eval"``, ``"-c"`` for a
    ``bash -c`` string, ``"stdin"`` for text piped into a shell,
    ``"function"`` for a function body. ``stdin_from``/``stdout_to`` are the
    pipeline neighbours.
    """

    words: list[Word]
    redirects: list[Redirect] = field(default_factory=list)
    assignments: dict[str, str] = field(default_factory=dict)
    origin: str = ""
    depth: int = 0
    background: bool = False
    #: Position in the top-level list of pipelines (0 = first).
    chain_index: int = 0
    #: The separator that preceded this command's pipeline (``;``, ``&&``, ``||``, ``&``, ``\n``).
    joined_by: str = ""
    stdin_from: SimpleCommand | None = field(default=None, repr=False)
    stdout_to: SimpleCommand | None = field(default=None, repr=False)
    #: Inside a loop body (``while``/``until``/``for``).
    in_loop: bool = False
    #: Commands run by substitutions in this command's words (``$( )``, backticks, ``<( )``).
    substitutions: list[SimpleCommand] = field(default_factory=list, repr=False)
    #: Scratch space for readers that derive values from the command (never compared).
    memo: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        """The command name without its directory (``/usr/bin/id`` → ``id``)."""
        if not self.words:
            return ""
        text = self.words[0].value
        return text.rsplit("/", 1)[-1] if "/" in text and not text.endswith("/") else text

    @property
    def args(self) -> list[str]:
        return [w.value for w in self.words[1:]]

    @property
    def argv(self) -> list[str]:
        return [w.value for w in self.words]


@dataclass
class Script:
    """Everything a line would run, flattened, plus what the reader noticed on the way."""

    commands: list[SimpleCommand] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: Names of functions the line defines, with their bodies' commands.
    functions: dict[str, list[SimpleCommand]] = field(default_factory=dict)
    #: How many pipelines the line itself has (not counting substitutions).
    pipelines: int = 0
    #: A loop without an exit condition (``while true``, ``while :``, ``for ((;;))``).
    endless_loop: bool = False
    #: Notable spellings found while reading (``ifs``, ``escaped-letter``, ``ansi-c``,
    #: ``recursive-function``).
    tricks: set[str] = field(default_factory=set)


# --------------------------------------------------------------------------
# Lexing
# --------------------------------------------------------------------------


@dataclass
class _Tok:
    kind: str  # "word" | "op" | "redir"
    text: str
    word: list[Word] = field(default_factory=list)  # one or more fields after splitting
    fd: str = ""

    @property
    def raw(self) -> str:
        return self.text


class _Reader:
    """Lexes and parses one line; expansions are resolved against ``env``."""

    def __init__(self, src: str, env: dict[str, str], depth: int, origin: str, out: Script) -> None:
        self.src = src
        self.i = 0
        self.env = env
        self.depth = depth
        self.origin = origin
        self.out = out
        #: Commands appended since this reader last made a command: the next one's substitutions.
        self._since = len(out.commands)

    # -- low level ---------------------------------------------------------

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.src[j] if j < len(self.src) else ""

    def error(self, message: str) -> None:
        if message not in self.out.errors:
            self.out.errors.append(message)

    def skip_blanks(self) -> None:
        while True:
            c = self.peek()
            if c in (" ", "\t", "\r"):
                self.i += 1
            elif c == "\\" and self.peek(1) == "\n":
                self.i += 2
            elif c == "#" and (self.i == 0 or self.src[self.i - 1] in " \t\n;&|()"):
                while self.peek() not in ("", "\n"):
                    self.i += 1
            else:
                return

    def next_token(self) -> _Tok | None:
        self.skip_blanks()
        if self.i >= len(self.src):
            return None
        c = self.peek()
        if c == "\n":
            self.i += 1
            return _Tok("op", "\n")
        m = _REDIR.match(self.src, self.i) if c in "<>&0123456789" else None
        if m and m.group(1) == "&" and m.group(2) not in (">", ">>"):
            m = None  # only `&>` / `&>>` take an & prefix
        if m and self._redir_ok(m):
            self.i = m.end()
            return _Tok("redir", m.group(2), fd=m.group(1))
        if c not in "&|;()":
            return self.read_word()
        for op in _OPERATORS:
            if self.src.startswith(op, self.i):
                if op in ("<", ">"):
                    break
                self.i += len(op)
                return _Tok("op", op)
        return self.read_word()

    def _redir_ok(self, m: re.Match[str]) -> bool:
        op = m.group(2)
        if op in ("<", ">") and self.src.startswith("(", m.end()):
            return False  # process substitution, read as a word
        return True

    def take_heredoc(self, delim: str, strip_tabs: bool) -> str:
        """Cut the here-document body (the lines after the current line) out of the source."""
        start = self.src.find("\n", self.i)
        if start < 0:
            return ""
        lines = []
        pos = start + 1
        while pos < len(self.src):
            end = self.src.find("\n", pos)
            end = len(self.src) if end < 0 else end
            line = self.src[pos:end]
            pos = end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delim:
                break
            lines.append(line)
        self.src = self.src[: start + 1] + self.src[pos:]
        return "\n".join(lines)

    # -- words ---------------------------------------------------------------

    def read_word(self) -> _Tok:
        """Read one shell word; returns its fields after expansion and splitting."""
        start = self.i
        fields: list[list[str]] = [[]]  # list of fields, each a list of text pieces
        quoted = False
        braces_ok = True

        def add(text: str, split: bool = False) -> None:
            if split and text:
                parts = re.split(r"[ \t\n]+", text)
                fields[-1].append(parts[0])
                for part in parts[1:]:
                    fields.append([part])
            else:
                fields[-1].append(text)

        while self.i < len(self.src):
            plain = _PLAIN.match(self.src, self.i)
            if plain:
                add(plain.group(0))
                self.i = plain.end()
                continue
            c = self.src[self.i]
            if c in " \t\r\n;&|()":
                break
            if c in "<>" and self.peek(1) != "(":
                break
            if c == "\\":
                nxt = self.peek(1)
                if nxt == "\n":
                    self.i += 2
                    continue
                if nxt == "":
                    self.i += 1
                    continue
                add(nxt)
                if nxt in "nt" and nxt:
                    self.out.tricks.add("escaped-letter")
                self.i += 2
                continue
            if c == "'":
                end = self.src.find("'", self.i + 1)
                quoted = True
                braces_ok = False
                if end < 0:
                    self.error("unclosed single quote")
                    add(self.src[self.i + 1 :])
                    self.i = len(self.src)
                else:
                    add(self.src[self.i + 1 : end])
                    self.i = end + 1
                continue
            if c == '"':
                quoted = True
                braces_ok = False
                self.i += 1
                add(self.read_double_quoted())
                continue
            if c == "$" and self.peek(1) == "'":
                quoted = True
                self.i += 2
                add(self.read_ansi_c())
                continue
            if c == "$" or c == "`":
                value, split = self.read_expansion(in_quotes=False)
                add(value, split=split)
                continue
            if c in "<>" and self.peek(1) == "(":
                self.i += 2
                inner = self.read_balanced("(", ")")
                self.sub_parse(inner, "<()")
                add(DYNAMIC)
                continue
            if c in "!@*+?" and self.peek(1) == "(" and self.i > start - 1:
                # extglob pattern `!(x|y)`: a literal glob, not a subshell
                self.i += 2
                add(c + "(" + self.read_balanced("(", ")") + ")")
                continue
            add(c)
            self.i += 1
        raw = self.src[start : self.i]
        texts = ["".join(f) for f in fields]
        words: list[Word] = []
        for text in texts:
            if text == "" and len(texts) > 1:
                continue
            if braces_ok and "{" in text and "," in text:
                words.extend(Word(t, raw, quoted) for t in brace_expand(text))
            else:
                words.append(Word(text, raw, quoted))
        return _Tok("word", raw, words or [Word("", raw, quoted)])

    def read_double_quoted(self) -> str:
        parts: list[str] = []
        while True:
            c = self.peek()
            if c == "":
                self.error("unclosed double quote")
                return "".join(parts)
            if c == '"':
                self.i += 1
                return "".join(parts)
            if c == "\\" and self.peek(1) in '$`"\\\n':
                if self.peek(1) != "\n":
                    parts.append(self.peek(1))
                self.i += 2
                continue
            if c in "$`":
                value, _ = self.read_expansion(in_quotes=True)
                parts.append(value)
                continue
            parts.append(c)
            self.i += 1

    def read_ansi_c(self) -> str:
        start = self.i
        while self.i < len(self.src):
            if self.src[self.i] == "\\":
                self.i += 2
                continue
            if self.src[self.i] == "'":
                body = self.src[start : self.i]
                self.i += 1
                self.out.tricks.add("ansi-c")
                return decode_escapes(body)
            self.i += 1
        self.error("unclosed $'...' quote")
        return decode_escapes(self.src[start:])

    def read_balanced(self, open_: str, close: str) -> str:
        """Text up to the matching ``close`` (quote-aware); ``self.i`` is just after ``open_``."""
        start = self.i
        level = 1
        while self.i < len(self.src):
            c = self.src[self.i]
            if c == "\\":
                self.i += 2
                continue
            if c == "'" and close != "`":
                end = self.src.find("'", self.i + 1)
                self.i = len(self.src) if end < 0 else end + 1
                continue
            if c == '"' and close != "`":
                self.i += 1
                while self.i < len(self.src) and self.src[self.i] != '"':
                    self.i += 2 if self.src[self.i] == "\\" else 1
                self.i += 1
                continue
            if c == open_ and open_ != close:
                level += 1
            elif c == close:
                level -= 1
                if level == 0:
                    body = self.src[start : self.i]
                    self.i += 1
                    return body
            self.i += 1
        self.error(f"unclosed {open_!r}")
        return self.src[start:]

    def read_expansion(self, *, in_quotes: bool) -> tuple[str, bool]:
        """Read ``$...`` or a backtick group at ``self.i``; return (value, split-on-whitespace)."""
        c = self.peek()
        if c == "`":
            self.i += 1
            inner = self.read_balanced("`", "`")
            inner = re.sub(r"\\([`$\\])", r"\1", inner)
            return self.substitution(inner), not in_quotes
        nxt = self.peek(1)
        if nxt == "(" and self.peek(2) == "(":
            self.i += 3
            self.read_balanced("(", ")")
            if self.peek() == ")":
                self.i += 1
            return DYNAMIC, False
        if nxt == "(":
            self.i += 2
            inner = self.read_balanced("(", ")")
            return self.substitution(inner), not in_quotes
        if nxt == "{":
            self.i += 2
            body = self.read_balanced("{", "}")
            name = re.match(r"[!#]?([A-Za-z_][A-Za-z0-9_]*|\d+|[@*#?$!-])", body)
            if name is None or body.startswith(("!", "#")):
                return DYNAMIC, False
            value, split = self.variable(name.group(1), body, in_quotes)
            return self.operator(value, body[name.end() :]), split
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d|[@*#?$!-]").match(self.src, self.i + 1)
        if m is None:
            self.i += 1
            return "$", False
        self.i = m.end()
        return self.variable(m.group(0), m.group(0), in_quotes)

    def variable(self, name: str, spelled: str, in_quotes: bool) -> tuple[str, bool]:
        if name == "IFS":
            self.out.tricks.add("ifs")
            if in_quotes:
                return " ", False
            # `${IFS%??}` and friends still expand to blanks; an unquoted one splits the word.
            return " ", True
        if name in self.env:
            return self.env[name], not in_quotes
        if name in _HOME_VARS:
            return _HOME_VARS[name], False
        return DYNAMIC, False  # positional and special parameters, unknown variables

    @staticmethod
    def operator(value: str, op: str) -> str:
        """Apply ``${VAR<op>}``: defaults for unknown values, substrings of known ones."""
        if not op:
            return value
        default = re.match(r"^:?[-=](.*)$", op, re.DOTALL)
        if default:
            return default.group(1) if value in (DYNAMIC, "") else value
        if op.startswith(":?") or op.startswith("?"):
            return value  # `${VAR:?}` stops the command when VAR is empty
        substring = re.match(r"^:\s*(\d+)(?::\s*(\d+))?$", op)
        if substring and DYNAMIC not in value:
            start = int(substring.group(1))
            end = start + int(substring.group(2)) if substring.group(2) is not None else None
            return value[start:end]
        return DYNAMIC

    def substitution(self, inner: str) -> str:
        """Parse a command substitution; its output when it is static, else :data:`DYNAMIC`."""
        if not inner.strip():
            return ""
        commands = self.sub_parse(inner, "$()")
        if commands and len(commands) == 1:
            cmd = commands[0]
            if cmd.name == "echo" and not any(w.dynamic for w in cmd.words):
                args = [a for a in cmd.args if a not in ("-n", "-e", "-E", "-ne", "-en")]
                text = " ".join(args)
                return decode_escapes(text) if any(f in cmd.args for f in ("-e", "-ne", "-en")) else text
            if cmd.name == "printf" and cmd.args and not any(w.dynamic for w in cmd.words):
                return printf_output(cmd.args)
        return DYNAMIC

    def sub_parse(self, text: str, origin: str) -> list[SimpleCommand]:
        if self.depth >= _MAX_DEPTH:
            self.error("nesting too deep to read")
            return []
        before = len(self.out.commands)
        reader = _Reader(text, self.env, self.depth + 1, origin, self.out)
        reader.parse_list(top=False)
        return self.out.commands[before:]

    # -- grammar -------------------------------------------------------------

    def parse_list(self, *, top: bool, until: str | None = None) -> None:
        """A list of pipelines separated by ``;``, ``&``, ``&&``, ``||`` or newlines."""
        joined_by = ""
        index = 0
        loop_depth = 0
        while True:
            tok = self.next_token()
            if tok is None:
                if until:
                    self.error(f"missing {until!r}")
                return
            if tok.text == until:
                return
            if tok.kind == "op" and tok.text in (";", "\n", "&", "&&", "||", ";;"):
                joined_by = tok.text if tok.text != ";;" else ";"
                if tok.text == "&" and self.out.commands:
                    self.out.commands[-1].background = True
                continue
            if tok.kind == "op" and tok.text in ("|", "|&"):
                self.error(f"{tok.text!r} with nothing before it")
                continue
            if tok.kind == "op" and tok.text == ")":
                self.error("unmatched ')'")
                continue
            if tok.kind == "word" and tok.word[0].raw in ("while", "until", "for", "select"):
                loop_depth += 1
            if tok.kind == "word" and tok.word[0].raw == "done":
                loop_depth = max(0, loop_depth - 1)
            tok = self.parse_pipeline(tok, index, joined_by, in_loop=loop_depth > 0)
            if top:
                self.out.pipelines += 1
            index += 1
            if tok is None:
                if until:
                    self.error(f"missing {until!r}")
                return
            if tok.text == until:
                return
            if tok.kind == "op" and tok.text == ")":
                self.error("unmatched ')'")
                continue
            if tok.text == "&" and self.out.commands:
                self.out.commands[-1].background = True
            joined_by = tok.text if tok.text != ";;" else ";"

    def parse_pipeline(self, first: _Tok, index: int, joined_by: str, *, in_loop: bool) -> _Tok | None:
        previous: SimpleCommand | None = None
        tok: _Tok | None = first
        while True:
            cmd, tok = self.parse_command(tok, index, joined_by, in_loop=in_loop)
            if cmd is not None:
                if previous is not None:
                    previous.stdout_to = cmd
                    cmd.stdin_from = previous
                previous = cmd
            if tok is None or not (tok.kind == "op" and tok.text in ("|", "|&")):
                return tok
            nxt = self.next_token()
            while nxt is not None and nxt.kind == "op" and nxt.text == "\n":
                nxt = self.next_token()
            if nxt is None:
                self.error("pipe with nothing after it")
                return None
            tok = nxt

    def parse_command(
        self, tok: _Tok | None, index: int, joined_by: str, *, in_loop: bool
    ) -> tuple[SimpleCommand | None, _Tok | None]:
        """One command; returns it (the last one for a group) and the token that ended it."""
        words: list[Word] = []
        redirects: list[Redirect] = []
        assignments: dict[str, str] = {}
        last: SimpleCommand | None = None
        while tok is not None:
            if tok.kind == "op":
                if tok.text == "(" and not words:
                    if self.peek_is("("):
                        # `((...))` arithmetic: no command.
                        self.i += 1
                        self.read_balanced("(", ")")
                        if self.peek() == ")":
                            self.i += 1
                        tok = self.next_token()
                        continue
                    before = len(self.out.commands)
                    self.parse_list(top=False, until=")")
                    group = self.out.commands[before:]
                    last = group[-1] if group else None
                    tok = self.next_token()
                    continue
                if tok.text == "(" and words:
                    # `name() { ...; }` function definition.
                    close = self.next_token()
                    if close is None or close.text != ")":
                        self.error("unexpected '('")
                        tok = close
                        continue
                    fname = words[0].value
                    words = []
                    before = len(self.out.commands)
                    body_tok = self.next_token()
                    while body_tok is not None and body_tok.kind == "op" and body_tok.text == "\n":
                        body_tok = self.next_token()
                    _, tok = self.parse_command(body_tok, index, joined_by, in_loop=in_loop)
                    body = self.out.commands[before:]
                    for c in body:
                        c.origin = "function"
                    self.out.functions[fname] = body
                    continue
                break
            if tok.kind == "redir":
                target_tok = self.next_token()
                if target_tok is None or target_tok.kind != "word":
                    self.error(f"redirection {tok.text!r} without a target")
                    tok = target_tok
                    continue
                target = " ".join(w.text for w in target_tok.word)
                if tok.text in ("<<", "<<-"):
                    target = self.take_heredoc(target_tok.raw.strip("'\"\\"), tok.text == "<<-")
                redirects.append(Redirect(tok.fd, tok.text, target))
                tok = self.next_token()
                continue
            first = tok.word[0]
            if not words and not first.quoted:
                if first.raw in _RESERVED_SKIP or (first.raw in _RESERVED_END and first.raw != "}"):
                    if first.raw in ("while", "until"):
                        self._note_endless_loop()
                    if first.raw == "{":
                        before = len(self.out.commands)
                        self.parse_list(top=False, until="}")
                        group = self.out.commands[before:]
                        last = group[-1] if group else last
                    tok = self.next_token()
                    if first.raw == "time" and tok is not None and tok.kind == "word" and tok.raw in ("-p", "--"):
                        tok = self.next_token()  # `time -p CMD`: the keyword's one option
                    continue
                if first.raw == "}":
                    break
                if first.raw in ("for", "select", "case", "function"):
                    tok = self.skip_header(first.raw)
                    continue
            if not words:
                m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=", tok.raw)
                if m:
                    value = " ".join(w.text for w in tok.word).split("=", 1)[-1]
                    if self.peek_is("("):
                        # array assignment `a=(x y)`
                        self.i += 1
                        self.read_balanced("(", ")")
                        value = DYNAMIC
                    assignments[m.group(1)] = value
                    tok = self.next_token()
                    continue
            words.extend(tok.word)
            tok = self.next_token()
        if words or redirects or assignments:
            if not words:
                # plain assignments persist for the rest of the line
                self.env.update(assignments)
            cmd = SimpleCommand(
                words,
                redirects,
                assignments,
                self.origin,
                self.depth,
                chain_index=index,
                joined_by=joined_by,
                in_loop=in_loop,
            )
            cmd.substitutions = [
                c
                for c in self.out.commands[self._since :]
                if c.depth > self.depth and c.origin in ("$()", "<()")
            ]
            self.out.commands.append(cmd)
            self._since = len(self.out.commands)
            return cmd, tok
        return last, tok

    def peek_is(self, char: str) -> bool:
        return self.peek() == char

    def skip_header(self, keyword: str) -> _Tok | None:
        """Skip ``for x in ...;``, ``case ... in``, ``function name``: words that run nothing."""
        if keyword == "function":
            return self.next_token()
        if keyword == "case":
            # `case WORD in`: the subject runs nothing; patterns end with `)`.
            tok = self.next_token()
            while tok is not None and not (tok.kind == "word" and tok.raw == "in"):
                tok = self.next_token()
            tok = self.next_token()
            while tok is not None and tok.kind == "word" and tok.raw != "esac":
                nxt = self.next_token()
                if nxt is not None and nxt.kind == "op" and nxt.text == ")":
                    return self.next_token()
                tok = nxt
            return self.next_token() if tok is not None else None
        # for / select: skip to `;`, newline or `do`
        tok = self.next_token()
        if tok is not None and tok.kind == "op" and tok.text == "(":
            self.read_balanced("(", ")")
            if self.peek() == ")":
                self.i += 1
            if re.match(r"\(\s*;\s*;\s*\)", self.src):
                self.out.endless_loop = True
            self.out.endless_loop = self.out.endless_loop or ";;)" in self.src.replace(" ", "")
            return self.next_token()
        while tok is not None and not (tok.kind == "op" and tok.text in (";", "\n")):
            if tok.kind == "word" and tok.raw == "do":
                return self.next_token()
            tok = self.next_token()
        return self.next_token()

    def _note_endless_loop(self) -> None:
        rest = self.src[self.i :].lstrip()
        if re.match(r"(true|:|\[\s*1\s*\]|\(\(\s*1\s*\)\))\s*[;\n]", rest):
            self.out.endless_loop = True


# --------------------------------------------------------------------------
# Expansion helpers
# --------------------------------------------------------------------------


def brace_expand(text: str, limit: int = 64) -> list[str]:
    """Bash brace expansion of one unquoted word (``{rm,-rf,/}`` → ``rm -rf /``
    as separate words, ``a{b,c}`` → ``ab ac``); at most ``limit`` results."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", text)
    if not m:
        return [text]
    head, tail = text[: m.start()], text[m.end() :]
    out: list[str] = []
    for option in m.group(1).split(","):
        for rest in brace_expand(tail, limit):
            out.append(head + option + rest)
            if len(out) >= limit:
                return out
    return out


_ESCAPES = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|u[0-9A-Fa-f]{4}|.)", re.DOTALL)
_SIMPLE = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "0": "\0",
}


def decode_escapes(text: str) -> str:
    """Decode ``\\n``, ``\\x72``, ``\\162`` and ``\\u0072`` escapes (``$'..'``, ``printf``, ``echo -e``)."""

    def sub(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] == "x" and len(e) > 1:
            return chr(int(e[1:], 16))
        if e[0] == "u" and len(e) == 5:
            return chr(int(e[1:], 16))
        if e[0] in "01234567" and (len(e) > 1 or e != "0"):
            return chr(int(e, 8) & 0xFF)
        return _SIMPLE.get(e, "\\" + e)

    return _ESCAPES.sub(sub, text)


def printf_output(args: list[str]) -> str:
    """What ``printf FORMAT ARGS...`` prints, for static arguments."""
    fmt, rest = args[0], list(args[1:])
    if fmt == "--" and rest:
        fmt, rest = rest[0], rest[1:]
    out = decode_escapes(fmt)
    if "%" not in out:
        return out
    pieces: list[str] = []
    values = iter(rest)
    for part in re.split(r"(%[-+ #0]*\d*(?:\.\d+)?[sbdiouxXcq%])", out):
        if part.startswith("%") and len(part) > 1:
            kind = part[-1]
            if kind == "%":
                pieces.append("%")
            else:
                value = next(values, "")
                pieces.append(decode_escapes(value) if kind == "b" else value)
        else:
            pieces.append(part)
    return "".join(pieces)


def parse(command: str, *, env: Mapping[str, str] | None = None, origin: str = "", depth: int = 0) -> Script:
    """Read a command line statically; never raises, never runs anything."""
    out = Script()
    reader = _Reader(command, dict(env or {}), depth, origin, out)
    try:
        reader.parse_list(top=True)
    except (RecursionError, IndexError, ValueError) as exc:  # defensive: unreadable is doubtful
        out.errors.append(f"unreadable command line ({type(exc).__name__})")
    for name, body in out.functions.items():
        calls_self = any(c.name == name for c in body)
        if calls_self:
            out.tricks.add("recursive-function")
    return out
