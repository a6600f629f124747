"""What a person wrote around a log: Markdown prose and source code quote error messages that did not happen.

A GitHub issue, a wiki page or team notes say "I thought it was `CUDA out of memory`" or list "- `NCCL WARN Call
to shm_open failed` -- chmod /dev/shm"; a Python file holds the messages it may print as strings. Read as a log,
each quoted message would be a finding, and in an issue it would outrank the traceback the user pasted below it.

:func:`log_view` keeps what a Markdown document shows as output and blanks the writer's words (line numbers kept):

* fenced blocks (```` ``` ```` / ``~~~``) are kept, except one that is gpudoctor's own report, Python source or
  tagged as a configuration or code (```yaml, ```python, ...);
* outside them, Markdown structure (headings, list items, quotes, table rows), lines with inline code spans, lines
  of a person speaking (a first-person pronoun, a greeting) and, in a document whose output is fenced or in a
  conversation, sentences and wordy lines (mostly lower-case words) are blanked, and so is a paragraph of them;
  anything else (an unfenced collect_env, a traceback pasted without a fence) is kept.

An e-mail or a chat paste (:func:`is_conversation`: two lines of a person speaking) is read the same way.

:func:`is_python_source` recognises a Python module (top-level imports / definitions, mostly code lines, no
traceback or log lines): it is not an input.
"""
from __future__ import annotations

import re
from collections.abc import Callable

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+\S")
_HEADING_TEXT = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*?)[ \t#]*$")
_STRUCTURE = re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]|[-*+][ \t]+\S|\d{1,3}[.)][ \t]+\S|>|\|)|^[ \t]*\*\*[^*\s]")
_MARK = re.compile(r"^[ \t]{0,3}(?:[-*+][ \t]+\S|\d{1,3}[.)][ \t]+\S|\|.*\|[ \t]*$)|\*\*[^*\s][^*\n]*\*\*")
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_LINK = re.compile(r"\[[^\]\n]+\]\([^)\s]+\)")
#: a sentence: a capitalised word, four or more words, ending in . ? ! or : -- never a line that starts like output
#: (an exception name, a traceback header, a path, a bracketed prefix, a timestamp, an all-capitals level)
_START = r"^[ \t]{0,3}[A-Z][a-z'’]*[,;]?(?: \S+){4,}"
_SENTENCE = re.compile(_START + r"[.?!:][\"”)]?[ \t]*$")
#: the first line of a wrapped paragraph: a capitalised word and four more (its sentence ends on a later line)
_SENTENCE_START = re.compile(_START)
_OUTPUT_START = re.compile(r"^[ \t]*(?:Traceback\b|[\w.]*(?:Error|Exception|Warning|Interrupt|Exit)\b|\[|/|\d"
                           r"|(?:[a-z_]\w*\.)+[A-Z]\w*:"
                           r"|(?:ERROR|WARN(?:ING)?|INFO|DEBUG|FATAL|CRITICAL|NOTICE)\b|[A-Z][A-Z0-9_]{2,}:|File \""
                           r"|\S+:\d+:|[A-Z]\d{4} \d)|\bNCCL (?:INFO|WARN)\b|\bNVRM: ")
#: a word of prose: lower-case letters (an apostrophe, closing punctuation allowed)
_WORD = re.compile(r"^[(\"“]?[a-z][a-z'’-]*[,.;:?!)\"”]*$")
#: a person speaking: a first-person pronoun, or a greeting / sign-off opening the line
_PERSON = re.compile(r"(?<![\w/])(?:I|[Ww]e|[Mm]y|[Oo]ur)(?:['’](?:m|ve|d|ll|re))? [a-z]"
                     r"|(?<![\w/.=])i(?:['’](?:m|ve|d|ll))? (?!in\b|=)[a-z]")
#: a message quoted in a sentence: 'NCCL reports "unhandled system error" on the second node.'
_QUOTED = re.compile(r"[\"“`][^\"“”`\n]{8,}[\"”`]")
_GREETING = re.compile(r"^[ \t>]*(?:(?:Hi|Hello|Hey|Dear)(?:[ \t]+[\w.-]+){0,2}[ \t]*[,!][ \t]*$"
                       r"|(?:Thanks|Thank you|Many thanks|Cheers|Best|Best regards|Regards|Kind regards)"
                       r"[ \t]*[,!.]?[ \t]*$"
                       r"|(?:EDIT|Edit|UPDATE|Update|UPD|Solved|SOLVED|P\.S)\d*[ \t]*:"
                       r"|On .{6,120} wrote:[ \t]*$)")
#: the language of a fenced block that holds a configuration or code, not output (```yaml, ```python ...)
_CODE_FENCE = re.compile(r"^[ \t]{0,3}(?:`{3,}|~{3,})[ \t]*(?:ya?ml|toml|ini|cfg|conf|json|jsonc|python|py|c|cpp"
                         r"|c\+\+|cu"
                         r"|cuda|h|hpp|js|ts|go|rust|rs|java|dockerfile|Dockerfile|make|makefile|cmake|diff|patch)\b",
                         re.IGNORECASE)
#: a line that is surely program output, wherever it stands: a traceback, an exception line, a bracketed or dated
#: log prefix, a source location, an NCCL or kernel line (a paragraph holding one is not prose)
_OUTPUT = re.compile(r"^[ \t]*(?:Traceback \(|[\w.]*(?:Error|Exception)\b:|\[[^\]\n]{1,64}\](?!\()"
                     r"|File \"|\S+\.\w+:\d+[:\]]"
                     r"|\d{4}-\d\d-\d\d[ T]\d\d:|[A-Z]\d{4} \d\d:)|\bNCCL (?:INFO|WARN)\b|\bNVRM: ")
#: how many Markdown marks (headings, list items, links, inline code) make a text a Markdown document when it has
#: no fenced block
_MIN_MARKS = 3


def is_markdown(text: str) -> bool:
    """Whether ``text`` is a Markdown document: a fenced block, or a heading and at least _MIN_MARKS - 1 list items,
    bold phrases, table rows or links. Inline code alone does not count (torch's own messages quote `names` in
    backticks), nor do "#" lines alone (nccl-tests prints its report that way)."""
    lines = text.split("\n")
    if sum(1 for x in lines if _FENCE.match(x)) >= 2:
        return True
    if not any(_HEADING.match(x) for x in lines):
        return False
    marks = sum(1 for x in lines if _MARK.match(x) or _LINK.search(x))
    return marks >= _MIN_MARKS - 1


#: a list item stating a fact ("- PyTorch Version (e.g., 1.0): 1.1.0", the checklist of PyTorch's issue template):
#: the writer's answer, read as such (its key names no error: "- CUDA error: out of memory" is a quoted message)
_FACT_ITEM = re.compile(r"^[ \t]{0,3}[-*+][ \t]+(?P<key>[^:`*\n]{2,80}):(?:[ \t]+[^`\n]{0,80})?[ \t]*$")
_ERROR_WORD = re.compile(r"(?i)error|exception|warn|fail|fault|abort|kill|crash|timeout|timed out")


#: words of someone explaining or guessing ("usually means", "I think", "seems", "tried"), which a program's message
#: rarely holds: a wordy line needs one to be prose ("terminate called after throwing an instance of" is output)
_OPINION = re.compile(r"(?i)\b(?:think|thought|seems?|maybe|probably|perhaps|usually|often|means?|meant|tried|"
                      r"guess|suspect|wonder|believe|looks like|any idea|anyone|help|thanks|turned out|after all|"
                      r"fixed|works|worked|happens|happened|again|instead|because of|"
                      r"(?:if|when|whenever) (?:you|we|it) (?:see|get|hit|run into|face))\b")


def _words(line: str, least: int) -> bool:
    """Whether ``line`` has ``least`` or more words, three in five of them lower-case words of letters (_WORD)."""
    tokens = line.split()
    return len(tokens) >= least and sum(1 for w in tokens if _WORD.match(w)) >= 0.6 * len(tokens)


def wordy(line: str) -> bool:
    """Whether ``line`` reads as prose: six or more words, three in five of them lower-case words of letters, one
    of them a word of explaining or guessing (_OPINION), and not starting like output."""
    return not _OUTPUT_START.match(line) and _OPINION.search(line) is not None and _words(line, 6)


def spoken(line: str) -> bool:
    """Whether ``line`` is a person speaking (a first-person pronoun, a greeting, an EDIT: note) rather than
    output: no program prints "I grepped" or "our job"."""
    if _GREETING.match(line):
        return True
    if line[:1] == "\t" or line[:2] == "  ":  # an indented line is a program's (torch's "\t - To our best knowledge")
        return False
    return _PERSON.search(line) is not None and _OUTPUT.search(line) is None and _OUTPUT_START.match(line) is None


def quoting(line: str) -> bool:
    """Whether ``line`` is a sentence quoting a message: a quoted phrase, and three or more lower-case words outside
    the quotes, not starting like output."""
    if _OUTPUT_START.match(line) or not _QUOTED.search(line):
        return False
    return sum(1 for w in _QUOTED.sub(" ", line).split() if _WORD.match(w)) >= 3


def _prose(line: str, sentences: bool) -> bool:
    fact = _FACT_ITEM.match(line)
    if fact is not None and not _ERROR_WORD.search(fact.group("key")):
        return False
    if _STRUCTURE.match(line) or spoken(line) or (sentences and quoting(line)):
        return True
    if _INLINE_CODE.search(line) and _OUTPUT_START.match(line) is None:
        return True
    return sentences and ((_SENTENCE.match(line) is not None and _OUTPUT_START.match(line) is None) or wordy(line))


def is_conversation(text: str) -> bool:
    """Whether ``text`` is a message a person wrote around a log (an e-mail, a chat paste): in its first 200 lines,
    a greeting, sign-off, EDIT note or "On ... wrote:" header and a line of them speaking, or three different
    lines of them speaking (a program's "we are at step 10" repeats one)."""
    head = text.split("\n", 200)[:200]
    greeting = any(_GREETING.match(x) for x in head)
    said = {re.sub(r"\d+", "", x.strip()) for x in head if spoken(x) and not _GREETING.match(x)}
    return (greeting and bool(said)) or len(said) >= 3


_QUOTE_MARK = re.compile(r"^[ \t]*(?:>[ \t]?)+")
_GLOSS = re.compile(r" (?:--|—|–|->|→|=>) \S")
_TABLE_ROW = re.compile(r"^[ \t]{0,3}\|.*\|[ \t]*$")
#: a line of settings in a configuration or code block: a comment, a quoted list item, a key with a quoted value
_SETTING = re.compile(r"^[ \t]*(?:#|//|;|-[ \t]*[\"']|[\w.\-\"']+[ \t]*[:=][ \t]*[\[{(]?[ \t]*[\"'])")


def _continues(before: str, line: str, listed: bool = False) -> bool:
    """Whether ``line`` continues the sentence ``before`` wrapped onto it (no ':', '.', '?' or '!' ends ``before``,
    which is running text; ``line`` does not start like output, nor indented unless it wraps a list item
    (``listed``)): a line introduced by "I get this error:" is not."""
    return (_running(before) and not before.rstrip().endswith((":", ".", "!", "?"))
            and _OUTPUT_START.match(line) is None and (listed or not line[:1].isspace()))


def _running(line: str) -> bool:
    """Whether ``line`` is running text: eight or more words, three in five of them lower-case words of letters."""
    return _words(line, 8)





def _own_output(line: str) -> bool:
    """Whether ``line`` holds program output of its own: _OUTPUT outside inline code, and outside double quotes when
    the line does not start like output (a sentence quoting a message is the writer's)."""
    bare = _INLINE_CODE.sub(" ", line)
    if _OUTPUT_START.match(line) is None:
        bare = _QUOTED.sub(" ", bare)  # (quotes and backticks of 8+ characters)
    return _OUTPUT.search(bare) is not None


def strong_prose(line: str) -> bool:
    """Whether ``line`` is surely the writer's, even when it holds a message a signature reads: a person speaking,
    a sentence quoting a message, a sentence of explaining or guessing (_OPINION), a list item or line with inline
    code that does not start like output."""
    if _own_output(line) and not _GREETING.match(line):
        return False  # (a message quoted in inline code or in a sentence's quotes is not output on the line)
    if spoken(line) or quoting(line) or wordy(line):
        return True
    if _MARK.match(line) and _GLOSS.search(line):
        return True  # "- RuntimeError: CUDA error: ... -- usually a bad custom kernel": a message and its gloss
    return _INLINE_CODE.search(line) is not None and _OUTPUT_START.match(line) is None and (
        _STRUCTURE.match(line) is not None or _OPINION.search(line) is not None)


def log_view(text: str, not_output: Callable[[str], bool] | None = None, prose: bool = True,
             matched: frozenset[int] | set[int] = frozenset()) -> str:
    """``text`` with the writer's words blanked (module docstring), as many lines as before; ``text`` itself when it
    is not a Markdown document or a conversation. ``not_output(block)``: whether a fenced block's text is not program
    output (gpudoctor's own report, a code listing); such a block is blanked too. ``prose=False``: only those blocks
    are blanked (the writer's words kept: read when they are all the paste holds). ``matched``: indexes of the lines
    a signature reads; such a line is kept unless it is surely the writer's (:func:`strong_prose`) -- when unsure,
    output is kept, never hidden. A heading that is output (an issue titled with the error line) is kept without its
    '#' marks; a quoted line ("> ...", a reply) is judged by what it quotes, and kept without its '>' marks."""
    if not is_markdown(text) and not is_conversation(text):
        return text
    lines = text.split("\n")
    content = [_QUOTE_MARK.sub("", x) if x.lstrip().startswith(">") else x for x in lines]
    fenced = [False] * len(lines)
    blocks: list[tuple[int, int]] = []  # (first, last + 1) of each fenced block's content
    opener: tuple[int, str] | None = None
    for i, line in enumerate(content):
        m = _FENCE.match(line)
        if m is None:
            fenced[i] = opener is not None
            continue
        fenced[i] = True  # the fence line itself is not output
        if opener is None:
            opener = (i, m.group(1)[0])
        elif m.group(1)[0] == opener[1]:
            blocks.append((opener[0] + 1, i))
            opener = None
    if opener is not None:  # an unclosed fence runs to the end (a paste cut short)
        blocks.append((opener[0] + 1, len(lines)))
    out = list(content)

    # a Markdown table's rows are the writer's (a table of messages), unless the text is an nvidia-smi table
    smi = any(x.startswith("+-") and x.rstrip().endswith("-+") for x in content)

    def keep(i: int) -> bool:
        row = not smi and _TABLE_ROW.match(content[i]) is not None
        return i in matched and not row and not strong_prose(content[i])

    sentences = True  # a Markdown document or a conversation: its sentences are the writer's
    code_blocks = {a for a, _ in blocks if a > 0 and _CODE_FENCE.match(content[a - 1])}
    for i, line in enumerate(content):
        if _FENCE.match(line):
            out[i] = ""
            continue
        if not prose or fenced[i]:
            continue
        title = _HEADING_TEXT.match(line)
        if title is not None and _OUTPUT.search(title.group(1)):
            out[i] = title.group(1)  # "# misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr failed ...": the error
        elif line.strip() and _prose(line, sentences) and not keep(i):
            out[i] = ""
    for a, b in _paragraphs(content, fenced) if prose else []:  # a paragraph of prose is blanked whole
        para = content[a:b]
        if any(_own_output(x) for x in para):  # (not a message quoted in inline code or in a sentence's quotes)
            continue  # a paragraph holding output (a traceback pasted without a fence) keeps it
        wrapped = (sentences and len(para) > 1 and _SENTENCE_START.match(para[0]) is not None
                   and _OUTPUT_START.match(para[0]) is None and para[-1].rstrip().endswith((".", "?", "!", ":")))
        if wrapped or _prose(para[0], sentences) or sum(1 for x in para if _prose(x, sentences)) * 2 >= len(para):
            # a paragraph of documentation (three or more lines, mostly running text, with inline code or links) is
            # blanked whole; in a shorter one, a line a signature reads stays (a message pasted under a sentence)
            doc = (len(para) >= 3 and any(_INLINE_CODE.search(x) or _LINK.search(x) for x in para)
                   and sum(1 for x in para if _running(x)) * 2 >= len(para))
            listed = False  # under a list item: its wrapped lines are indented under it
            for i in range(a, b):
                if not content[i][:1].isspace():
                    listed = _MARK.match(content[i]) is not None
                wrapped_line = doc and i > a and _continues(content[i - 1], content[i], listed)
                if (wrapped_line or not keep(i)) and not (_HEADING_TEXT.match(content[i]) and out[i]
                                                          and not out[i].startswith("#")):
                    out[i] = ""
    for a, b in blocks:
        block = "\n".join(content[a:b])
        if not block.strip():
            continue
        if not_output is not None and not_output(block):
            out[a:b] = [""] * (b - a)  # gpudoctor's own report, a code table, source: never read
        elif a in code_blocks and not any(_OUTPUT.search(x) for x in content[a:b]):
            # ```yaml / ```python holding settings or code: blanked but for the lines a signature reads that are no
            # comment or quoted value (a traceback fenced as python, kubectl's YAML "reason: OOMKilled" are output)
            for i in range(a, b):
                if i not in matched or _SETTING.match(content[i]):
                    out[i] = ""
        elif is_python_source(block):
            out[a:b] = [""] * (b - a)
    return "\n".join(out)


def _paragraphs(lines: list[str], fenced: list[bool]) -> list[tuple[int, int]]:
    """(first, last + 1) of each run of non-blank lines outside fenced blocks."""
    out: list[tuple[int, int]] = []
    start = None
    for i, line in enumerate([*lines, ""]):
        inside = i < len(lines) and not fenced[i] and line.strip() != ""
        if inside and start is None:
            start = i
        elif not inside and start is not None:
            out.append((start, i))
            start = None
    return out


_TOP_LEVEL = re.compile(r"^(?:def |class |import \w|from [\w.]+ import |@\w|if __name__ == )")
_CODE = re.compile(r"^[ \t]*(?:def |class |import |from |return\b|raise\b|if |elif |else:|for |while |try:|except\b"
                   r"|finally:|with |@|#|[\w.\[\]'\"]+ *[-+*/]?= |\w[\w.]*\(|[\])}],?$|\"\"\"|'''|pass$|assert )")
_NOT_SOURCE = re.compile(r"Traceback \(most recent call last\)|\bNCCL (?:INFO|WARN)\b|NVRM: ")


def is_python_source(text: str) -> bool:
    """Whether ``text`` is a Python module or script: two or more top-level imports / definitions, two thirds of its
    non-blank lines code, and no traceback or log line (a script pasted with its output is a log)."""
    lines = [x for x in text.split("\n") if x.strip()]
    if len(lines) < 4 or _NOT_SOURCE.search(text):
        return False
    if sum(1 for x in lines if _TOP_LEVEL.match(x)) < 2:
        return False
    return sum(1 for x in lines if _CODE.match(x) or x.startswith((" ", "\t"))) >= 2 / 3 * len(lines)


#: a line of a YAML / TOML / INI configuration: a comment, a lower-case key (snake or kebab case) with its value, a
#: list item, a [section]; what kubectl describe, collect_env and /proc files print has capitalised keys
_ITEM = r"-(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|[a-z_][\w.-]*[ \t]*:.*|[\w./:@-]+|\[.*\]|\{.*\}))?[ \t]*"
_CONFIG_LINE = re.compile(rf"^[ \t]*(?:#.*|;.*|{_ITEM}|[a-z_][\w.-]*[ \t]*[:=](?:[ \t].*)?|\"[^\"\n]+\"[ \t]*:.*"
                          r"|\[{1,2}[\w.\-\" ]+\]{1,2}[ \t]*)$")
_NESTED = re.compile(rf"^(?:[ \t]+[a-z_][\w.-]*[ \t]*:|[ \t]*{_ITEM}$|\[{{1,2}}[\w.\-\" ]+\]{{1,2}}[ \t]*$)")


def is_config(text: str) -> bool:
    """Whether ``text`` is a configuration file (YAML, TOML, INI): four or more lines, nearly all of them comments,
    lower-case keys with values, list items or sections, some nested, at least one comment, and no line of output.
    The messages in its values and comments ("retry_on: ['NCCL error: unhandled system error']") are settings."""
    lines = [x for x in text.split("\n") if x.strip()]
    if len(lines) < 4 or any(_OUTPUT.search(x) for x in lines):
        return False
    if not any(_NESTED.match(x) for x in lines) or not any(x.lstrip().startswith(("#", ";")) for x in lines):
        return False  # (a hand-written configuration has comments; kubectl's / docker's YAML output has none)
    return sum(1 for x in lines if _CONFIG_LINE.match(x)) >= 0.85 * len(lines)
