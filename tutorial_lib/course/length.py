"""How much a learner reads: the words of a notebook's markdown and of the readings its run prints.

The limits (issue 50): at most :data:`MAX_WORDS` words per notebook, its markdown and its run's readings together,
and no paragraph over :data:`MAX_PARAGRAPH` words. What a learner opens on purpose -- a folded ``<details>`` block
(hints, derivations, background) -- is counted apart (``folded``) and not in the notebook's total; a paragraph
inside it still keeps the paragraph limit. Words are runs of letters or digits (``f(C)`` is two words, ``a5.h1``
two, a table cell's number one); tables count, code spans count, markup does not.

>>> nb = {"cells": [{"cell_type": "markdown", "source": "# Title\\n\\nTwo words.\\n\\n<details><summary>Hint</summary>\\n\\n"
...                  "three more words\\n</details>"}, {"cell_type": "code", "source": "x = 1"}]}
>>> counts = markdown_words(nb)
>>> counts.visible, counts.folded
(3, 4)
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Union

MAX_WORDS = 3000
MAX_PARAGRAPH = 120

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_DETAILS = re.compile(r"<details>.*?</details>", re.S)


@dataclass
class Words:
    visible: int  # words a learner reads without opening anything
    folded: int  # words inside <details> blocks


def words(text: str) -> int:
    """The number of words in ``text`` (HTML tags and markdown markup not counted)."""
    text = re.sub(r"<[^>]+>", " ", text)
    return len(_WORD.findall(text))


def _cells(nb: Union[dict, str, Path]) -> list[str]:
    if not isinstance(nb, dict):
        nb = json.loads(Path(nb).read_text())
    out = []
    for cell in nb["cells"]:
        if cell.get("cell_type") == "markdown":
            src = cell["source"]
            out.append("".join(src) if isinstance(src, list) else src)
    return out


def markdown_words(nb: Union[dict, str, Path]) -> Words:
    """Words of a notebook's markdown cells (a notebook dict or an ``.ipynb`` path), visible and folded."""
    visible = folded = 0
    for text in _cells(nb):
        inside = "".join(_DETAILS.findall(text))
        folded += words(inside)
        visible += words(_DETAILS.sub(" ", text))
    return Words(visible, folded)


def paragraphs(text: str) -> list[str]:
    """The paragraphs of a markdown text: blocks between blank lines, a list item or a table row on its own."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [ln for ln in block.splitlines() if ln.strip()]
        if not lines:
            continue
        if all(ln.lstrip().startswith("|") for ln in lines):
            out.extend(lines)
            continue
        items, current = [], []
        for ln in lines:
            if re.match(r"\s*([*-]|\d+\.)\s", ln) and current:
                items.append("\n".join(current))
                current = []
            current.append(ln)
        items.append("\n".join(current))
        out.extend(items)
    return out


def long_paragraphs(nb: Union[dict, str, Path], limit: int = MAX_PARAGRAPH) -> list[tuple[int, str]]:
    """``(words, first words)`` of every markdown paragraph over ``limit`` words, folded ones included."""
    found = []
    for text in _cells(nb):
        for p in paragraphs(re.sub(r"</?details>|<summary>.*?</summary>", "\n\n", text)):
            n = words(p)
            if n > limit:
                found.append((n, " ".join(p.split()[:12])))
    return found


def reading_words(log: Union[str, Path]) -> int:
    """Words of the readings a notebook's run printed (the ``TUTORIAL_READINGS`` log, one JSON object per line
    with its ``text``); answers a learner opens (``kind == "answer"``) are folded and not counted."""
    total = 0
    for line in Path(log).read_text().splitlines():
        if line.strip():
            entry = json.loads(line)
            if entry.get("kind") != "answer":
                total += words(entry.get("text", ""))
    return total


_HEADER_TIME = re.compile(r"^##\s+(\d+)\.\s.*\(~\s*(\d+)\s*min\)\s*$", re.M)
_CELL_TIME = re.compile(r"^\s*(\d+)\s*min\b")


def section_times(nb: Union[dict, str, Path]) -> dict[int, tuple]:
    """``{section: (minutes in the contents table, minutes in its header)}`` (``None`` where one is missing): the
    contents table is the first table whose header's first cell is "section"; its time is the first cell that starts
    with "N min". A header reads ``## N. Title (~X min)``."""
    table, headers = {}, {}
    for text in _cells(nb):
        for m in _HEADER_TIME.finditer(text):
            headers[int(m.group(1))] = int(m.group(2))
        if table:
            continue
        rows = []
        for ln in text.splitlines():  # the first table of the cell that starts with a "section" header
            if ln.strip().startswith("|"):
                rows.append(ln.strip())
            elif rows and rows[0].strip("| ").lower().startswith("section"):
                break
            else:
                rows = []
        if rows and rows[0].strip("| ").lower().startswith("section"):
            for row in rows[2:]:
                cells = [c.strip() for c in row.strip("|").split("|")]
                num = re.match(r"(\d+)\.", cells[0])
                mins = next((int(t.group(1)) for c in cells[1:] if (t := _CELL_TIME.match(c))), None)
                if num:
                    table[int(num.group(1))] = mins
    return {k: (table.get(k), headers.get(k)) for k in sorted(set(table) | set(headers))}
