"""The lecture's public video and its moments: one home for the links that cards, problems and
chapter sections give to the lecture.

The video's address and each section's start are in ``book/lecture_deck.toml`` (``[video]``,
cited there: the lecture's own deck and ../shared/reference/lecture.md, "YouTube xmkSf5IS-zw").
A moment is written as the lecture's timestamps are, ``"H:MM:SS"`` or ``"MM:SS"``.

>>> seconds("15:16"), seconds("1:03:37")
(916, 3817)
>>> link(916)
'https://www.youtube.com/watch?v=xmkSf5IS-zw&t=916s'
>>> print(moment("15:16"))
[▶ 15:16 in the lecture](https://www.youtube.com/watch?v=xmkSf5IS-zw&t=916s){ .lecture-moment }
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path

from units import ChalkboardError

DECK = Path(__file__).resolve().parent / "lecture_deck.toml"
LENGTH = 2 * 3600 + 13 * 60  # the episode runs 2:13:xx (lecture.md); no moment lies beyond


@functools.cache
def video() -> dict:
    """The ``[video]`` table of the lecture deck: ``url``, ``section`` starts and ``moment``s."""
    with DECK.open("rb") as f:
        return tomllib.load(f)["video"]


def seconds(mark: str) -> int:
    """Seconds into the lecture of a mark written ``"H:MM:SS"`` or ``"MM:SS"``; anything else
    (or a mark past the lecture's end) is an error that says how to write one."""
    try:
        parts = [int(x) for x in mark.split(":")]
    except ValueError:
        parts = []
    if not 2 <= len(parts) <= 3 or min(parts) < 0 or max(parts[1:]) >= 60:
        raise ChalkboardError(f"a lecture mark is written H:MM:SS or MM:SS, not {mark!r}")
    total = 0
    for part in parts:
        total = 60 * total + part
    if total > LENGTH:
        raise ChalkboardError(f"{mark!r} is past the end of the lecture")
    return total


def link(at: int) -> str:
    """The video's address at ``at`` seconds."""
    return f"{video()['url']}&t={at}s"


def moment(mark: str, words: str = "in the lecture") -> str:
    """A Markdown link to the lecture at ``mark``, as a chapter section shows it (a jinja
    global: ``{{ moment("15:16") }}``)."""
    shown = mark[3:] if mark.count(":") == 2 and mark.startswith("00:") else mark
    return f"[▶ {shown} {words}]({link(seconds(mark))}){{ .lecture-moment }}"
