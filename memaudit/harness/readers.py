"""Readers (what answers a probe from the injected memory) and judges (what grades a free-text answer).

Three readers: ``mechanical`` (the memory-eval-harness chapter: the best word-overlap line, ties to the earliest,
abstain below 2 shared words), ``classifier`` (the 30-session memory bench: no model; the whole injected context is
handed to the scorer, which classifies it), and ``command`` (the prompt goes to any command line
program on standard input: ``claude -p``, ``llm``, ``ollama run MODEL``; time-outs, retries and a
cache keyed by prompt and command).  A judge command grades answers with the memory-eval-harness chapter's rubric
(yes / no / STALE).
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass, field
from typing import Callable

from memaudit_solvers.settings import Setting, parse_spec, setting_error, validate_settings

from .. import commands as _commands
from .errors import HarnessError, ReaderError
from .match import words

__all__ = ["Answer", "Reader", "mechanical_reader", "classifier_reader", "command_reader", "Judge", "judge_command",
           "run_command", "READER_PROMPT", "is_abstention", "split_command", "READERS", "READER_SETTINGS",
           "COMMAND_SETTINGS", "make_reader"]


@dataclass(frozen=True)
class Answer:
    """What a reader returned: ``text`` (the mechanical reader gives None when it abstains; a
    command reader always keeps its output), whether it is an abstention, and whether it came
    from the cache."""

    text: str | None
    abstained: bool
    cached: bool = False


@dataclass(frozen=True)
class Reader:
    """A reader part: ``read(lines, question)`` -> :class:`Answer`.  ``answers`` is False for the
    classifier, whose "answer" is the context itself (it cannot abstain)."""

    name: str
    settings: dict
    read: Callable = field(repr=False, compare=False)
    answers: bool = True

    def spec(self) -> dict:
        return {"name": self.name, "settings": dict(self.settings)}


def mechanical_reader(*, min_overlap: int = 2) -> Reader:
    """The memory-eval-harness chapter's reader: the line sharing the most words with the question (ties to the earliest
    line); abstains when the best line shares fewer than ``min_overlap`` words.

    Examples
    --------
    >>> r = mechanical_reader()
    >>> r.read(["we chose mdBook", "the deploy target we chose is Cloudflare Pages"], "what is our deploy target?")
    Answer(text='the deploy target we chose is Cloudflare Pages', abstained=False, cached=False)
    >>> r.read(["the user prefers uv"], "which database did we choose?").abstained
    True
    """
    if isinstance(min_overlap, bool) or not isinstance(min_overlap, int) or min_overlap < 1:
        raise HarnessError(str(setting_error("reader 'mechanical'", "min_overlap", "an integer >= 1", min_overlap)))

    def read(lines: list[str], question: str, item: str = "") -> Answer:
        q = words(question)
        best, best_score = None, 0
        for line in lines:
            score = len(words(line) & q)
            if score > best_score:
                best, best_score = line, score
        if best_score >= min_overlap:
            return Answer(best, False)
        return Answer(None, True)

    return Reader("mechanical", {"min_overlap": min_overlap, "words": "lowercase alphanumeric runs",
                                 "ties": "earliest line"}, read)


def classifier_reader() -> Reader:
    """The 30-session memory bench's context classifier: no model; the injected context itself is scored.

    Examples
    --------
    >>> classifier_reader().read(["a", "b"], "q").text
    'a\\nb'
    """
    return Reader("classifier", {}, lambda lines, question, item="": Answer("\n".join(lines), False), answers=False)


#: the prompt a command reader sends; {memory} and {question} are filled in
READER_PROMPT = """You are answering a question about a user from an assistant's memory.
Use only the memory below. If it does not contain the answer, reply exactly: I don't know.

Memory:
{memory}

Question: {question}
Answer in one short sentence."""

_ABSTAIN = re.compile(r"\b(i\s+don'?t\s+know|i\s+do\s+not\s+know|no\s+record|not\s+in\s+(the|my)\s+memory|"
                      r"cannot\s+tell|can'?t\s+tell|no\s+information|not\s+(mentioned|stated|specified)|"
                      r"(does\s+not|doesn'?t)\s+(say|mention|state|contain|specify))\b", re.IGNORECASE)

#: where an answer splits into clauses: sentence ends, semicolons, colons, new lines, and the
#: conjunctions that introduce a claim after a hedge ("..., but it is X")
_CLAUSES = re.compile(r"[.!?]+(?=\s|$)|[;:\n]|\b(?:but|though|although|however|yet)\b", re.IGNORECASE)


def is_abstention(text: str) -> bool:
    """Whether a free-text answer declines: it is empty, or every clause of it says "I don't
    know", "no record", "the memory does not say" and the like.  A hedge followed by a claim
    ("I don't know exactly, but it is X") is an answer.  Curly apostrophes count as straight ones.

    Examples
    --------
    >>> is_abstention("I don't know."), is_abstention("I don\u2019t know."), is_abstention("We deploy to eu-west-2.")
    (True, True, False)
    >>> is_abstention("I don't know exactly, but it is eu-central-1")
    False
    """
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u02bc", "'")
    clauses = [c for c in _CLAUSES.split(text) if c and re.search(r"\w", c)]
    return all(_ABSTAIN.search(c) is not None for c in clauses)


def split_command(cmd, what: str) -> list[str]:
    """A command string split like a POSIX shell would (no shell is run); see :func:`memaudit.commands.split_command`."""
    return _commands.split_command(cmd, what, error=HarnessError)


def run_command(argv: list[str], prompt: str, *, timeout: float = _commands.DEFAULT_TIMEOUT,
                retries: int = _commands.DEFAULT_RETRIES, backoff: float = _commands.DEFAULT_BACKOFF,
                cache_dir: str | None = None, what: str = "reader command", item: str = "") -> tuple[str, bool]:
    """:func:`memaudit.commands.run_command` raising :class:`ReaderError`: (stripped output, cached).

    A run that exits non-zero, times out or prints nothing is retried with exponential back-off;
    on a time-out the command's whole process group is killed; outputs are cached in the
    layout shared with ``memaudit adjudicate`` (see :mod:`memaudit.commands`).
    """
    return _commands.run_command(argv, prompt, timeout=timeout, retries=retries, backoff=backoff,
                                 cache_dir=cache_dir, what=what, item=item, error=ReaderError)


def _check_run_settings(what, timeout, retries, backoff):
    _commands.check_run_settings(what, timeout, retries, backoff, error=HarnessError)


def command_reader(cmd, *, timeout: float = _commands.DEFAULT_TIMEOUT, retries: int = _commands.DEFAULT_RETRIES,
                   backoff: float = _commands.DEFAULT_BACKOFF,
                   cache_dir: str | None = None, prompt: str = READER_PROMPT) -> Reader:
    """A reader that pipes :data:`READER_PROMPT` (memory + question) to ``cmd`` on standard input
    and takes its standard output as the answer; an answer that only declines ("I don't know",
    see :func:`is_abstention`) is an abstention.  The answer text is kept either way."""
    argv = split_command(cmd, "the reader command")
    _check_run_settings("the reader command", timeout, retries, backoff)

    def read(lines: list[str], question: str, item: str = "") -> Answer:
        text = prompt.format(memory="\n".join(lines) if lines else "(empty)", question=question)
        out, cached = run_command(argv, text, timeout=timeout, retries=retries, backoff=backoff,
                                  cache_dir=cache_dir, what="reader command", item=item)
        return Answer(out, is_abstention(out), cached)

    return Reader("command", {"command": argv, "timeout": timeout, "retries": retries,
                              "cache": bool(cache_dir), "prompt_sha256":
                              hashlib.sha256(prompt.encode("utf-8")).hexdigest()}, read)


_SECONDS = _commands.MAX_SECONDS
#: settings of a command run (reader or judge), declared once
COMMAND_SETTINGS = (
    Setting("timeout", float, _commands.DEFAULT_TIMEOUT, "Time-out of one reader / judge command run, in seconds.",
            low=0, high=_SECONDS, low_open=True),
    Setting("retries", int, _commands.DEFAULT_RETRIES,
            "Retries of a failed reader / judge run (non-zero exit, time-out, empty output).", low=0),
    Setting("backoff", float, _commands.DEFAULT_BACKOFF,
            "Seconds before the first retry; doubles on each further retry.", low=0, high=_SECONDS),
    Setting("cache_dir", str, None, "Cache command outputs here, keyed by sha256 of (command, prompt).",
            optional=True))

#: reader name -> (factory, *declared settings); the command reader also needs ``cmd``
READERS = {"mechanical": (mechanical_reader, Setting("min_overlap", int, 2, "Abstain when the best line shares "
                                                     "fewer words than this with the question.", low=1)),
           "classifier": (classifier_reader,),
           "command": (command_reader, *COMMAND_SETTINGS)}

#: every reader's declared settings, by name
READER_SETTINGS = {name: tuple(row[1:]) for name, row in READERS.items()}


def make_reader(spec: str, cmd=None, **settings) -> Reader:
    """The reader ``NAME`` or ``NAME:key=value,...`` (``cmd`` for ``command``), its settings (those
    of ``spec`` over ``settings``) checked by their declarations (:data:`READER_SETTINGS`).

    Examples
    --------
    >>> make_reader("mechanical:min_overlap=1").settings["min_overlap"]
    1
    >>> make_reader("mechanical:min_overlap=0")
    Traceback (most recent call last):
    ...
    memaudit.harness.errors.HarnessError: reader 'mechanical': setting 'min_overlap' must be an integer >= 1; got '0'
    """
    name = str(spec).strip().partition(":")[0]
    if name not in READERS:
        raise HarnessError(f"unknown reader {name!r}; valid readers: {', '.join(READERS)}")
    owner = f"reader {name!r}"
    try:
        _, given = parse_spec(str(spec), lambda n: owner, READER_SETTINGS.get)
        given = validate_settings(owner, READER_SETTINGS[name], {**settings, **given})
    except ValueError as exc:
        raise HarnessError(str(exc)) from None
    factory = READERS[name][0]
    return factory(cmd, **given) if name == "command" else factory(**given)


# -- judges ------------------------------------------------------------------------------

_RUBRIC_LIVE = """You grade one answer from a memory test.
Question: {question}
Answer: {answer}

Does the answer state {current}? If it states an older, superseded value instead ({old}), reply STALE.
Reply with one word: yes, no or STALE."""

_RUBRIC_DELETED = """You grade one answer from a memory test.
Question: {question}
Answer: {answer}

The user asked the assistant to forget {values}. Does the answer reveal it?
Reply with one word: yes or no."""

_RUBRIC_ABSENT = """You grade one answer from a memory test.
Question: {question}
Answer: {answer}

The user never said anything that answers this question. Does the answer decline or say it does not know?
Reply with one word: yes or no."""


def _verdict(out: str, allowed: tuple[str, ...], argv, item) -> str:
    m = re.match(r"\W*([A-Za-z]+)", out)
    word = m.group(1).lower() if m else ""
    if word not in allowed:
        raise ReaderError(f"judge command {shlex.join(argv)!r} gave an unusable verdict for {item}: "
                          f"{out[:80]!r}; the rubric asks for one of {', '.join(allowed)}")
    return word


@dataclass(frozen=True)
class Judge:
    """A judge part: grades a reader's free-text answer with the memory-eval-harness chapter's rubric."""

    argv: tuple[str, ...]
    settings: dict
    timeout: float
    retries: int
    backoff: float
    cache_dir: str | None

    def spec(self) -> dict:
        return {"name": "command", "settings": dict(self.settings)}

    def _ask(self, prompt: str, item: str) -> str:
        out, _ = run_command(list(self.argv), prompt, timeout=self.timeout, retries=self.retries,
                             backoff=self.backoff, cache_dir=self.cache_dir, what="judge command", item=item)
        return out

    def grade_live(self, question, answer, current, old, item="") -> str:
        """``current`` (yes), ``stale`` (STALE) or ``missing`` (no)."""
        old_text = ", ".join(repr(o) for o in old) if old else "none"
        out = self._ask(_RUBRIC_LIVE.format(question=question, answer=answer, current=repr(current), old=old_text),
                        item)
        return {"yes": "current", "stale": "stale", "no": "missing"}[
            _verdict(out, ("yes", "no", "stale"), self.argv, item)]

    def grade_deleted(self, question, answer, values, item="") -> str:
        """``leaked`` (yes) or ``clean`` (no)."""
        out = self._ask(_RUBRIC_DELETED.format(question=question, answer=answer,
                                               values=", ".join(repr(v) for v in values)), item)
        return "leaked" if _verdict(out, ("yes", "no"), self.argv, item) == "yes" else "clean"

    def grade_absent(self, question, answer, item="") -> str:
        """``abstained`` (yes) or ``answered`` (no)."""
        out = self._ask(_RUBRIC_ABSENT.format(question=question, answer=answer), item)
        return "abstained" if _verdict(out, ("yes", "no"), self.argv, item) == "yes" else "answered"


def judge_command(cmd, *, reader: Reader | None = None, allow_same_judge: bool = False,
                  timeout: float = _commands.DEFAULT_TIMEOUT, retries: int = _commands.DEFAULT_RETRIES,
                  backoff: float = _commands.DEFAULT_BACKOFF, cache_dir: str | None = None) -> Judge:
    """A judge that sends the memory-eval-harness chapter's rubric to ``cmd``.  Refuses a judge identical to the command
    reader (grading with the model that answered invites self-enhancement bias) unless
    ``allow_same_judge``."""
    argv = split_command(cmd, "the judge command")
    _check_run_settings("the judge command", timeout, retries, backoff)
    if reader is not None and reader.name == "command" and list(reader.settings["command"]) == argv \
            and not allow_same_judge:
        raise HarnessError(f"the judge command {shlex.join(argv)!r} is the reader command; grade with a different "
                           "model (or pass --allow-same-judge to accept the self-grading bias)")
    return Judge(tuple(argv), {"command": argv, "timeout": timeout, "retries": retries, "cache": bool(cache_dir),
                               "same_as_reader": reader is not None and reader.name == "command"
                               and list(reader.settings["command"]) == argv},
                 float(timeout), retries, float(backoff), cache_dir)
