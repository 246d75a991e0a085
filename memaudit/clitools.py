"""Small helpers shared by every command module: number formatting, budget flags, plain tables."""

from __future__ import annotations

import os
import sys

import click

from .formats.translate import escape_control as safe

__all__ = ["safe", "safe_echo", "num", "pct", "plural", "budget_options", "check_budget_flags", "check_fraction",
           "parse_fractions", "progress_printer", "same_file", "table_lines", "setting_flags", "settings_for",
           "settings_lines", "SettingParam"]


def safe_echo(line="", err: bool = False) -> None:
    """``click.echo`` of ``line`` with control characters escaped (:func:`safe`): use it for every line that
    holds text read from an input (ids, paths, texts), so an input cannot drive the terminal."""
    click.echo(safe(str(line)), err=err)


def num(x: float) -> str:
    return f"{x:.10g}"


def pct(part: float, whole: float) -> str:
    """``part / whole`` as a percent with 3 significant digits, never in scientific notation.

    Examples
    --------
    >>> pct(1, 4), pct(25, 1), pct(1, 3e6), pct(123456, 1), pct(1, 0)
    ('25%', '2500%', '0.0000333%', '12300000%', 'n/a')
    """
    if not whole:
        return "n/a"
    import numpy as np
    return np.format_float_positional(100 * part / whole, precision=3, unique=False, fractional=False,
                                      trim="-") + "%"


def plural(n: int, word: str) -> str:
    """``1 candidate``, ``2 candidates``, ``0 units``.

    Examples
    --------
    >>> plural(1, "experience"), plural(3, "unit"), plural(0, "query")
    ('1 experience', '3 units', '0 queries')
    """
    if n == 1:
        return f"{n} {word}"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return f"{n} {word[:-1]}ies"
    return f"{n} {word}s"


def budget_options(f):
    f = click.option("--budget-frac", "budget_frac", type=float, default=None, metavar="F",
                     help="Budget as a fraction of the stream cost (storing every experience verbatim).")(f)
    f = click.option("--budget", type=float, default=None, metavar="B",
                     help="Budget in the package's cost unit. Default: the package's own budget.")(f)
    return f


#: a budget fraction above this is refused as a percent typed by mistake
MAX_BUDGET_FRAC = 100.0


def check_budget_flags(budget, budget_frac):
    if budget is not None and budget_frac is not None:
        raise click.UsageError("--budget and --budget-frac are mutually exclusive: give one of them")


def parse_fractions(text: str, flag: str = "--budget-frac") -> list[float]:
    """``"0.1,0.25,0.5"`` as floats, each a finite fraction >= 0 (:func:`check_fraction` refuses a
    typed percent); a bad part is a usage error naming it."""
    out = []
    for part in text.split(","):
        part = part.strip()
        try:
            f = float(part)
        except ValueError:
            raise click.BadParameter(f"{part!r} is not a number; give fractions such as 0.1,0.25,0.5",
                                     param_hint=flag) from None
        if not (f >= 0 and f == f and f != float("inf")):
            raise click.BadParameter(f"{part!r} must be a finite fraction >= 0", param_hint=flag)
        check_fraction(f, flag)
        out.append(f)
    return out


def check_fraction(frac: float | None, flag: str = "--budget-frac") -> None:
    """Refuse a budget fraction that can only be a typed percent (> 100); warn above 1.

    A fraction is of the stream cost (storing every experience verbatim): 0.25 is 25 %, and
    above 1 every store fits, so the budget no longer binds.
    """
    if frac is None or frac != frac or frac < 0:
        return  # the library's own check names the rule
    if frac > MAX_BUDGET_FRAC:
        raise click.BadParameter(f"{frac:g} is {pct(frac, 1)} of the stream cost; a budget fraction is a fraction, "
                                 f"e.g. 0.25 for 25 % (did you mean {frac / 100:g}?)", param_hint=flag)
    if frac > 1:
        click.echo(f"warning: {flag} {frac:g} is {pct(frac, 1)} of the stream cost, so the budget does not bind; "
                   f"fractions are in [0, 1] (0.25 = 25 %)", err=True)


def progress_printer(verbose: bool):
    isatty = getattr(sys.stderr, "isatty", None)
    if verbose or (isatty is not None and isatty()):
        return lambda line: click.echo(line, err=True)
    return None


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def table_lines(headers, rows, align):
    """Plain-text table lines: each cell converted once, columns padded to their widest cell (``>`` right-aligned)."""
    text = [[str(x) for x in row] for row in [headers, *rows]]
    widths = [max(map(len, col)) for col in zip(*text)]
    pads = [str.rjust if a == ">" else str.ljust for a in align]
    return ["  " + "  ".join([pad(x, w) for x, w, pad in zip(row, widths, pads)]).rstrip() for row in text]


# -- flags generated from declared settings ----------------------------------------------

def _same_rule(a, b) -> bool:
    import dataclasses
    return dataclasses.replace(a, help="") == dataclasses.replace(b, help="")


class SettingParam(click.ParamType):
    """A click type that reads one declared setting (:class:`memaudit_solvers.settings.Setting`)
    by its rule; a value breaking the rule is a usage error in the one message template."""

    def __init__(self, setting, flag: str, strict: bool = True):
        self.setting, self.flag, self.strict = setting, flag, strict
        s = setting
        self.name = ("|".join(s.choices) if s.choices else {int: "INTEGER", float: "NUMBER", bool: "true|false",
                                                             str: "TEXT", tuple: "A/B/..."}[s.type])

    def get_metavar(self, param, ctx=None):  # click >= 8.2 passes ctx
        return self.name

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        if not self.strict:  # only read here: the owner checks the rule (its own, when declarations differ)
            from memaudit_solvers.settings import parse_setting_text
            if self.setting.type is str:
                return value
            try:
                return self.setting.parse(f"option {self.flag!r}", value)
            except ValueError:
                return parse_setting_text(value)
        try:
            return self.setting.parse(f"option {self.flag!r}", value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def setting_flags(tables: dict, *, skip=(), aliases=None, dest: str = "setting_flags", kind: str = "methods",
                  usage_errors: bool = True):
    """A decorator adding one click option per distinct setting name declared in ``tables``
    (``{owner name: declarations}``), help and metavar from the declarations; the command gets
    ``dest``: ``{setting name: value}`` of the options given (None: not given).

    ``aliases`` maps a setting name to older flag names kept working (``{"eps": ("--gvt-eps",)}``);
    names in ``skip`` are left to options the command declares itself.  With ``usage_errors`` a value
    breaking the rule is a usage error (exit 2); without, the flag is only read and the owner's
    check refuses it (``error: ...``, exit 1).
    """
    from memaudit_solvers.settings import describe

    aliases = aliases or {}
    by_name: dict = {}
    for owner, declared in tables.items():
        for s in declared:
            if s.name not in skip:
                by_name.setdefault(s.name, []).append((owner, s))

    def decorate(f):
        import functools

        params = {}
        for name in sorted(by_name, reverse=True):  # click lists options in the order applied, reversed
            rows = by_name[name]
            first = rows[0][1]
            strict = usage_errors and all(_same_rule(first, s) for _, s in rows)
            flag = "--" + name.replace("_", "-")
            owners = ", ".join(o for o, _ in rows)
            text = describe(first) if all(_same_rule(first, s) for _, s in rows) else f"{first.help} (each one's own rule)"
            param = f"setting_{name}"
            params[param] = name
            f = click.option(flag, *aliases.get(name, ()), param, type=SettingParam(first, flag, strict),
                             default=None, help=f"{text} ({kind}: {owners})")(f)

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            kwargs[dest] = {name: kwargs.pop(p) for p, name in params.items() if kwargs.get(p) is not None}
            for p in params:
                kwargs.pop(p, None)
            return f(*args, **kwargs)

        return wrapper

    return decorate


def settings_lines(tables: dict) -> list[str]:
    """One line per registered name and one per declared setting (``name=RULE  help [default]``), for
    the listing commands: every line comes from the declarations."""
    from memaudit_solvers.settings import describe

    lines = []
    for owner, declared in tables.items():
        lines.append(owner + ("" if declared else "  (no settings)"))
        lines += [f"  {s.name}: {describe(s)}" for s in declared]
    return lines


def settings_for(declared, flags: dict) -> dict:
    """The values of ``flags`` (``{setting name: value}``) that ``declared`` declares."""
    names = {s.name for s in declared}
    return {k: v for k, v in flags.items() if k in names}
