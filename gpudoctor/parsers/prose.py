"""What a person wrote around a log: Markdown prose and source code quote error messages that did not happen.

A GitHub issue, a wiki page or team notes say "I thought it was `CUDA out of memory`" or list "- `NCCL WARN Call
to shm_open failed` -- chmod /dev/shm"; a Python file holds the messages it may print as strings. Read as a log,
each quoted message would be a finding, and in an issue it would outrank the traceback the user pasted below it.

:func:`log_view` keeps what a Markdown document shows as output and blanks the writer's words (line numbers kept):

* fenced blocks (```` ``` ```` / ``~~~``) are kept, except one that is gpudoctor's own report or Python source;
* outside them, Markdown structure (headings, list items, quotes, table rows), lines with inline code spans and,
  in a document whose output is fenced, sentences (a capitalised word and four more, ending in . ? ! or :) are
  blanked; anything else (an unfenced collect_env, a traceback pasted without a fence) is kept.

:func:`is_python_source` recognises a Python module (top-level imports / definitions, mostly code lines, no
traceback or log lines): it is not an input.
"""
from __future__ import annotations

import re
from collections.abc import Callable

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+\S")
_STRUCTURE = re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]|[-*+][ \t]+\S|\d{1,3}[.)][ \t]+\S|>|\|)|^[ \t]*\*\*[^*\s]")
_MARK = re.compile(r"^[ \t]{0,3}(?:[-*+][ \t]+\S|\d{1,3}[.)][ \t]+\S|\|.*\|[ \t]*$)|\*\*[^*\s][^*\n]*\*\*")
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_LINK = re.compile(r"\[[^\]\n]+\]\([^)\s]+\)")
#: a sentence: a capitalised word, four or more words, ending in . ? ! or : -- never a line that starts like output
#: (an exception name, a traceback header, a path, a bracketed prefix, a timestamp, an all-capitals level)
_SENTENCE = re.compile(r"^[ \t]{0,3}[A-Z][a-z'’]*[,;]?(?: \S+){4,}[.?!:][\"”)]?[ \t]*$")
#: the first line of a wrapped paragraph: a capitalised word and four more (its sentence ends on a later line)
_SENTENCE_START = re.compile(r"^[ \t]{0,3}[A-Z][a-z'’]*[,;]?(?: \S+){4,}")
_OUTPUT_START = re.compile(r"^[ \t]*(?:Traceback\b|[\w.]*(?:Error|Exception|Warning|Interrupt|Exit)\b|\[|/|\d"
                           r"|[A-Z]{3,}\b|File \"|\S+:\d+:|[A-Z]\d{4} \d)|\bNCCL (?:INFO|WARN)\b|\bNVRM: ")
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


def _prose(line: str, sentences: bool) -> bool:
    fact = _FACT_ITEM.match(line)
    if fact is not None and not _ERROR_WORD.search(fact.group("key")):
        return False
    if _STRUCTURE.match(line) or _INLINE_CODE.search(line):
        return True
    return sentences and _SENTENCE.match(line) is not None and _OUTPUT_START.match(line) is None


def log_view(text: str, not_output: Callable[[str], bool] | None = None) -> str:
    """``text`` with the writer's words blanked (module docstring), as many lines as before; ``text`` itself when it
    is not a Markdown document. ``not_output(block)``: whether a fenced block's text is not program output
    (gpudoctor's own report, a code listing); such a block is blanked too."""
    if not is_markdown(text):
        return text
    lines = text.split("\n")
    fenced = [False] * len(lines)
    blocks: list[tuple[int, int]] = []  # (first, last + 1) of each fenced block's content
    opener: tuple[int, str] | None = None
    for i, line in enumerate(lines):
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
    out = list(lines)
    sentences = bool(blocks)
    for i, line in enumerate(lines):
        if _FENCE.match(line) or (not fenced[i] and line.strip() and _prose(line, sentences)):
            out[i] = ""
    for a, b in _paragraphs(lines, fenced):  # a paragraph of prose is blanked whole: its wrapped lines too
        para = lines[a:b]
        if any(_OUTPUT.search(_INLINE_CODE.sub("", x)) for x in para):  # (not a message quoted in inline code)
            continue  # a paragraph holding output (a traceback pasted without a fence) keeps it
        wrapped = (sentences and len(para) > 1 and _SENTENCE_START.match(para[0]) is not None
                   and _OUTPUT_START.match(para[0]) is None and para[-1].rstrip().endswith((".", "?", "!", ":")))
        if wrapped or _prose(para[0], sentences) or sum(1 for x in para if _prose(x, sentences)) * 2 >= len(para):
            out[a:b] = [""] * (b - a)
    for a, b in blocks:
        block = "\n".join(lines[a:b])
        if block.strip() and (is_python_source(block) or (not_output is not None and not_output(block))):
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
