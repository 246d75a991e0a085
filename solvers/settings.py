"""Settings as data: a :class:`Setting` declares one setting of a method (or of anything else
registered by name), and :func:`validate_settings` checks given settings against the declarations
with one message template.

Every refusal reads ``<owner>: setting '<name>' must be <rule>; got <value>``, so a bad seed, an
out-of-range threshold, a NaN time limit, a misspelt setting name or a wrong type all say the same
four things: who refused, which setting, the rule and the value received.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["Setting", "TIME_LIMIT", "validate_settings", "setting_error", "parse_setting_text", "parse_spec", "describe"]

#: the value types a setting may declare
TYPES = (int, float, str, bool, tuple)


def setting_error(owner: str, name: str, rule: str, value: Any) -> ValueError:
    """The one refusal: ``<owner>: setting '<name>' must be <rule>; got <value>``.

    Examples
    --------
    >>> str(setting_error("method 'random'", "seed", "an integer >= 0", -1))
    "method 'random': setting 'seed' must be an integer >= 0; got -1"
    """
    return ValueError(f"{owner}: setting {name!r} must be {rule}; got {value!r}")


@dataclass(frozen=True)
class Setting:
    """One declared setting.

    Attributes
    ----------
    name : str
        The keyword the function takes.
    type : type
        ``int``, ``float``, ``str``, ``bool`` or ``tuple`` (a fixed number ``length`` of finite numbers).
    default : object
        The function's own default (``None`` when the setting is optional and off by default).
    help : str
        One sentence for ``--help``.
    low, high : float, optional
        The interval of a number; ``low_open`` / ``high_open`` exclude the end.  NaN is always refused;
        an infinite value only passes when that side is unbounded.
    choices : tuple of str, optional
        The allowed values of a ``str`` setting.
    optional : bool
        ``None`` is accepted (e.g. a time limit: None = no limit).
    length : int
        For ``tuple``: how many numbers.
    """

    name: str
    type: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    optional: bool = False
    length: int = 0

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise TypeError(f"setting {self.name!r}: type must be one of int, float, str, bool, tuple")
        if self.choices is not None and self.type is not str:
            raise TypeError(f"setting {self.name!r}: choices go with type str")
        if self.default is not None or not self.optional:
            self.check("the declaration", self.default)

    @property
    def rule(self) -> str:
        """The rule in words, for messages and ``--help``.

        Examples
        --------
        >>> Setting("eps", float, 0.1, "step", low=0, high=1, low_open=True, high_open=True).rule
        'a number in (0, 1)'
        >>> Setting("seed", int, 0, "seed", low=0).rule
        'an integer >= 0'
        >>> Setting("time_limit", float, None, "seconds", low=0, low_open=True, optional=True).rule
        'none or a number > 0'
        """
        if self.type is bool:
            text = "true or false"
        elif self.type is str:
            text = "one of " + ", ".join(self.choices) if self.choices else "a string"
        elif self.type is tuple:
            count = {2: "two", 3: "three", 4: "four"}.get(self.length, str(self.length))
            text = f"{count} numbers joined by '/'" + self._interval(", each in")
        else:
            noun = "an integer" if self.type is int else "a number"
            text = noun + self._interval(" in")
        return ("none or " + text) if self.optional else text

    def _interval(self, word: str) -> str:
        lo, hi = self.low, self.high
        if lo is not None and hi is not None:
            return f"{word} {'(' if self.low_open else '['}{lo:g}, {hi:g}{')' if self.high_open else ']'}"
        if lo is not None:
            return f" {'>' if self.low_open else '>='} {lo:g}"
        if hi is not None:
            return f" {'<' if self.high_open else '<='} {hi:g}"
        return ""

    def _in_range(self, x: float) -> bool:
        if math.isnan(x):
            return False
        if self.low is not None and not (x > self.low if self.low_open else x >= self.low):
            return False
        if self.high is not None and not (x < self.high if self.high_open else x <= self.high):
            return False
        return True

    def check(self, owner: str, value: Any) -> Any:
        """``value`` when it follows the rule (a number of type float comes back as a float, a
        tuple as a tuple of floats); else the one ValueError."""
        if value is None and self.optional:
            return None
        bad = setting_error(owner, self.name, self.rule, value)
        if self.type is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise bad
            return bool(value)
        if self.type is str:
            if not isinstance(value, str) or (self.choices is not None and value not in self.choices):
                raise bad
            return value
        if self.type is tuple:
            if (not isinstance(value, (list, tuple)) or len(value) != self.length
                    or not all(_is_real(v) and math.isfinite(v) and self._in_range(float(v)) for v in value)):
                raise bad
            return tuple(float(v) for v in value)
        if self.type is int:
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or not self._in_range(float(value)):
                raise bad
            return int(value)
        if not _is_real(value) or not self._in_range(float(value)):
            raise bad
        return float(value)

    def parse(self, owner: str, text: str) -> Any:
        """The value written as ``text`` on a command line (``none``, ``true``/``false``, ``a/b/c``),
        checked; an unreadable text is refused with the one message.

        Examples
        --------
        >>> Setting("seed", int, 0, "seed", low=0).parse("method 'random'", "3")
        3
        >>> Setting("seed", int, 0, "seed", low=0).parse("method 'random'", "x")
        Traceback (most recent call last):
        ...
        ValueError: method 'random': setting 'seed' must be an integer >= 0; got 'x'
        """
        value = parse_setting_text(text)
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if self.type is tuple and not isinstance(value, list):
            value = [value]
        if self.type is str and value is not None and not isinstance(value, str):
            value = text.strip()
        try:
            return self.check(owner, value)
        except ValueError:
            raise setting_error(owner, self.name, self.rule, text) from None


#: the one time-limit declaration every method with a time limit shares
TIME_LIMIT = Setting("time_limit", float, None, "Seconds before the search stops with its best store (none: no limit).",
                     low=0, low_open=True, optional=True)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def parse_setting_text(text: str) -> Any:
    """A command-line value: ``true``/``false``, ``none``, an int, a float, ``a/b/c`` (a list), else the text.

    Examples
    --------
    >>> parse_setting_text("3"), parse_setting_text("0.5"), parse_setting_text("false"), parse_setting_text("1/2")
    (3, 0.5, False, [1, 2])
    """
    text = text.strip()
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if "/" in text:
        return [parse_setting_text(t) for t in text.split("/")]
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_spec(spec: str, owner_of, declared_of, *, what: str = "method") -> tuple[str, dict]:
    """Split ``NAME`` or ``NAME:key=value,key=value`` into ``(NAME, raw settings)``.

    ``owner_of(name)`` names the owner in messages; ``declared_of(name)`` is its declarations
    (a sequence of :class:`Setting`), used to read each value by its declared type.  Values of
    undeclared names are read as they look and refused by :func:`validate_settings`.
    """
    name, _, rest = spec.strip().partition(":")
    owner = owner_of(name)
    declared = {s.name: s for s in declared_of(name)}
    given: dict = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq:
            raise setting_error(owner, key, "written key=value", item)
        if key in given:
            raise setting_error(owner, key, "given once", value)
        given[key] = declared[key].parse(owner, value) if key in declared else parse_setting_text(value)
    return name, given


def validate_settings(owner: str, declared: Sequence[Setting], given: Mapping[str, Any]) -> dict:
    """``given`` checked against ``declared``: every name declared, every value following its rule.

    Returns the checked values (numbers of type float as floats), in declaration order, only those
    given.  Every refusal is the one ValueError of :func:`setting_error`.

    Examples
    --------
    >>> eps = Setting("eps", float, 0.1, "step", low=0, high=1, low_open=True, high_open=True)
    >>> validate_settings("method 'gvt-geometric'", [eps], {"eps": 1})
    Traceback (most recent call last):
    ...
    ValueError: method 'gvt-geometric': setting 'eps' must be a number in (0, 1); got 1
    >>> validate_settings("method 'gvt-geometric'", [eps], {"eps": 0.05})
    {'eps': 0.05}
    >>> validate_settings("method 'greedy'", [], {"time_limit": 5})
    Traceback (most recent call last):
    ...
    ValueError: method 'greedy': setting 'time_limit' must be one of the declared settings (none); got 5
    """
    by_name = {s.name: s for s in declared}
    for name, value in given.items():
        if name not in by_name:
            names = ", ".join(by_name) or "none"
            raise setting_error(owner, str(name), f"one of the declared settings ({names})", value)
    return {s.name: s.check(owner, given[s.name]) for s in declared if s.name in given}


def describe(setting: Setting) -> str:
    """``help [rule; default: x]`` for ``--help`` lists.

    Examples
    --------
    >>> describe(Setting("seed", int, 0, "Seed of the random store.", low=0))
    'Seed of the random store. [an integer >= 0; default: 0]'
    """
    d = setting.default
    shown = "none" if d is None else (str(d).lower() if isinstance(d, bool)
                                      else "/".join(f"{x:g}" for x in d) if isinstance(d, tuple) else f"{d:g}"
                                      if isinstance(d, float) else str(d))
    return f"{setting.help} [{setting.rule}; default: {shown}]"
