"""The date rule of the ``answer`` coverage rule: does a text, said on a known day, pin a temporal answer?

LoCoMo's temporal answers are written by annotators who resolved what was said against the
session date: "7 May 2023" for "yesterday" said on 8 May 2023, "The week before 9 June 2023"
for "last week".  Both sides are turned into calendar intervals (first day, last day):

- the **answer**: a date ("7 May 2023", "May 7, 2023", "7 May" in any year), a month ("June
  2023"), a year ("2022"), or a span relative to a date ("the week / weekend / Friday before
  <date>", "two weekends before <date>", "the week of <date>", "the day before <date>");
- the **text**: every date, month and year it writes out, and every relative expression resolved
  against the day it was said ("yesterday", "today", "tonight", "last night", "tomorrow", "last
  week / weekend / month / year", "last <weekday>", "this week / month / year", "next week /
  month / year", "N days / weeks / months / years ago", "two weekends ago").

The text carries the answer when one of its intervals lies inside the answer's interval (the
text is at least as precise as the answer and agrees with it).  Relative spans use one
definition on both sides: the week before day d is d-7 .. d-1, the weekend before d is the last
Saturday strictly before d and the Sunday after it, the <weekday> before d is the last such day
strictly before d.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

__all__ = ["answer_interval", "text_intervals", "carries_date"]

Interval = tuple[date, date]

_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december")
_MONTHS = {m: i for i, m in enumerate(_MONTH_NAMES, start=1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_WEEKDAYS = {d: i for i, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                         "sunday"))}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2}

_M = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_D = r"(?P<{}>\d{{1,2}})(?:st|nd|rd|th)?"
_Y = r"(?P<{}>(?:19|20)\d\d)"
# day month [year] | month day[, year] | month[,] year | year
_DATE = re.compile(
    r"\b(?:" + _D.format("d1") + r"\s+(?:of\s+)?" + _M.format("m1") + r"(?:,?\s+" + _Y.format("y1") + r")?"
    r"|" + _M.format("m2") + r"\s+" + _D.format("d2") + r"(?:,?\s+" + _Y.format("y2") + r")?"
    r"|" + _M.format("m3") + r",?\s+" + _Y.format("y3") +
    r"|" + _Y.format("y4") + r")\b", re.IGNORECASE)
_NUM = r"(?P<n>\d+|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + r")"
_AGO = re.compile(r"\b" + _NUM + r"\s+(?P<unit>day|week|weekend|month|year)s?\s+ago\b", re.IGNORECASE)
_RELATIVE = re.compile(
    r"\b(?:(?P<yesterday>yesterday|last night)|(?P<today>today|tonight|this (?:morning|afternoon|evening))"
    r"|(?P<tomorrow>tomorrow)"
    r"|(?P<which>last|this past|past|this|next)\s+(?P<what>week(?:end)?|month|year|" + "|".join(_WEEKDAYS) + r"))\b",
    re.IGNORECASE)
_BEFORE = re.compile(r"^(?:the\s+)?(?:(?P<n>\d+|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) +
                     r")\s+)?(?P<what>day|week(?:end)?|month|year|" + "|".join(_WEEKDAYS) + r")s?\s+"
                     r"(?P<rel>before|of|after)\s+(?P<date>.+)$", re.IGNORECASE)


def _day(d: date) -> Interval:
    return d, d


def _month(y: int, m: int) -> Interval:
    return date(y, m, 1), date(y, m, calendar.monthrange(y, m)[1])


def _year(y: int) -> Interval:
    return date(y, 1, 1), date(y, 12, 31)


def _shift_month(y: int, m: int, k: int) -> tuple[int, int]:
    t = y * 12 + (m - 1) + k
    return t // 12, t % 12 + 1


def _weekday_before(d: date, wd: int) -> date:
    return d - timedelta(days=(d.weekday() - wd) % 7 or 7)


def _weekend_before(d: date) -> Interval:
    sat = _weekday_before(d, 5)
    return sat, sat + timedelta(days=1)


def _span_before(what: str, n: int, d: date) -> Interval | None:
    what = what.lower()
    if what == "day":
        return _day(d - timedelta(days=n))
    if what == "week":
        return d - timedelta(days=7 * n), d - timedelta(days=7 * (n - 1) + 1)
    if what == "weekend":
        a, b = _weekend_before(d)
        return a - timedelta(days=7 * (n - 1)), b - timedelta(days=7 * (n - 1))
    if what == "month":
        return _month(*_shift_month(d.year, d.month, -n))
    if what == "year":
        return _year(d.year - n)
    if what in _WEEKDAYS:
        return _day(_weekday_before(d, _WEEKDAYS[what]) - timedelta(days=7 * (n - 1)))
    return None


def _number(text: str | None) -> int:
    if text is None:
        return 1
    text = text.lower()
    return int(text) if text.isdigit() else _NUMBERS[text]


def _literal(m: re.Match) -> tuple[Interval, bool] | None:
    """The interval of one written-out date match, and whether its year was given."""
    g = m.groupdict()
    try:
        if g["y4"]:
            return _year(int(g["y4"])), True
        if g["m3"]:
            return _month(int(g["y3"]), _MONTHS[g["m3"].lower()]), True
        day, month, year = ((g["d1"], g["m1"], g["y1"]) if g["m1"] else (g["d2"], g["m2"], g["y2"]))
        mo = _MONTHS[month.lower()]
        if year is None:
            date(2000, mo, int(day))  # a real day of that month (leap year allows 29 February)
            return (date(1, mo, int(day)), date(1, mo, int(day))), False
        return _day(date(int(year), mo, int(day))), True
    except ValueError:
        return None


def _parse_date(text: str) -> tuple[Interval, bool] | None:
    text = text.strip().strip(".").strip()
    m = _DATE.fullmatch(text)
    return _literal(m) if m else None


def answer_interval(answer) -> tuple[Interval, bool] | None:
    """The calendar interval a temporal answer names, and whether it names the year; None if it names none.

    Examples
    --------
    >>> answer_interval("7 May 2023")
    ((datetime.date(2023, 5, 7), datetime.date(2023, 5, 7)), True)
    >>> answer_interval("The week before 9 June 2023")[0]
    (datetime.date(2023, 6, 2), datetime.date(2023, 6, 8))
    >>> answer_interval(2022)[0], answer_interval("Psychology, counseling")
    ((datetime.date(2022, 1, 1), datetime.date(2022, 12, 31)), None)
    """
    text = str(answer).strip()
    direct = _parse_date(text)
    if direct is not None:
        return direct
    m = _BEFORE.fullmatch(text)
    if m is None:
        return None
    anchor = _parse_date(m.group("date"))
    if anchor is None or not anchor[1] or anchor[0][0] != anchor[0][1]:
        return None
    d, what, rel = anchor[0][0], m.group("what").lower(), m.group("rel").lower()
    n = _number(m.group("n"))
    if rel == "before":
        span = _span_before(what, n, d)
    elif rel == "of" and what == "week" and n == 1:
        span = d - timedelta(days=d.weekday()), d + timedelta(days=6 - d.weekday())
    elif rel == "after" and what == "day":
        span = _day(d + timedelta(days=n))
    else:
        span = None
    return (span, True) if span is not None else None


def text_intervals(text: str, said_on: date) -> list[tuple[Interval, bool]]:
    """Every interval a text pins down: its written-out dates and its relative expressions resolved
    against ``said_on`` (the session date), each with whether the year is known.

    Examples
    --------
    >>> from datetime import date
    >>> [i for i, _ in text_intervals("I went there yesterday.", date(2023, 5, 8))]
    [(datetime.date(2023, 5, 7), datetime.date(2023, 5, 7))]
    >>> [i for i, _ in text_intervals("last weekend and in 2022", date(2023, 7, 17))]
    [(datetime.date(2022, 1, 1), datetime.date(2022, 12, 31)), (datetime.date(2023, 7, 15), datetime.date(2023, 7, 16))]
    """
    out = [iv for m in _DATE.finditer(text) if (iv := _literal(m)) is not None]
    d = said_on
    for m in _AGO.finditer(text):
        span = _span_before(m.group("unit"), _number(m.group("n")), d)
        if span is not None:
            out.append((span, True))
    for m in _RELATIVE.finditer(text):
        if m.group("yesterday"):
            span = _day(d - timedelta(days=1))
        elif m.group("today"):
            span = _day(d)
        elif m.group("tomorrow"):
            span = _day(d + timedelta(days=1))
        else:
            which, what = m.group("which").lower(), m.group("what").lower()
            if which in ("last", "this past", "past"):
                span = _span_before(what, 1, d)
            elif which == "this":
                span = {"week": (d - timedelta(days=d.weekday()), d + timedelta(days=6 - d.weekday())),
                        "month": _month(d.year, d.month), "year": _year(d.year)}.get(what)
            else:  # next
                span = {"week": (d + timedelta(days=1), d + timedelta(days=7)),
                        "month": _month(*_shift_month(d.year, d.month, 1)), "year": _year(d.year + 1)}.get(what)
                if what in _WEEKDAYS:
                    span = _day(d + timedelta(days=(_WEEKDAYS[what] - d.weekday()) % 7 or 7))
        if span is not None:
            out.append((span, True))
    return out


def _inside(inner: tuple[Interval, bool], outer: tuple[Interval, bool]) -> bool:
    (a, b), inner_year = inner
    (c, e), outer_year = outer
    if outer_year and inner_year:
        return c <= a and b <= e
    if not outer_year:  # a day of the year: the text must name that day (in any year)
        return a == b and (a.month, a.day) == (c.month, c.day)
    return False


def carries_date(text: str, answer, said_on: date) -> bool:
    """Whether ``text``, said on ``said_on``, pins the temporal ``answer`` (False when the answer names no date).

    Examples
    --------
    >>> from datetime import date
    >>> carries_date("I went to a support group yesterday.", "7 May 2023", date(2023, 5, 8))
    True
    >>> carries_date("I went to a support group yesterday.", "7 May 2023", date(2023, 5, 9))
    False
    >>> carries_date("We painted it last year.", 2022, date(2023, 5, 8))
    True
    >>> carries_date("Last week was a blast.", "The week before 9 June 2023", date(2023, 6, 9))
    True
    """
    target = answer_interval(answer)
    if target is None:
        return False
    return any(_inside(iv, target) for iv in text_intervals(text, said_on))
