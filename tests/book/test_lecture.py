"""The lecture's video and its moments (book/lecture.py)."""

import pytest

from book.lecture import LENGTH, link, moment, seconds, video
from units import ChalkboardError


def test_marks_read_as_the_lecture_writes_them():
    # by hand: 15 min 16 s; 1 h 3 min 37 s; the B section's start in the deck
    assert seconds("15:16") == 916 and seconds("1:03:37") == 3817 and seconds("00:32:09") == 1929


@pytest.mark.parametrize("bad", ["", "15", "1:2:3:4", "15:61", "a:10", "-1:10", "3:00:00"])
def test_a_malformed_or_late_mark_is_one_clear_error(bad):
    with pytest.raises(ChalkboardError, match="lecture"):
        seconds(bad)


def test_every_section_start_is_a_moment_of_the_lecture_in_order():
    starts = [seconds(s["start"]) for s in video()["section"].values()]
    assert starts == sorted(starts) and starts[0] == 0 and starts[-1] < LENGTH


def test_a_moment_links_the_public_video_at_that_second():
    assert link(916) == "https://www.youtube.com/watch?v=xmkSf5IS-zw&t=916s"
    text = moment("00:47:12")
    assert text.startswith("[▶ 47:12 in the lecture](") and "&t=2832s)" in text
