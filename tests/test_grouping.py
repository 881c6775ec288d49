"""tests/conftest.py's grouping for pytest-xdist: one worker gets every user of the built site."""

import pytest

from tests.conftest import pytest_collection_modifyitems


class Item:
    def __init__(self, nodeid, fixturenames=(), marks=()):
        self.nodeid, self.fixturenames, self.marks = nodeid, fixturenames, list(marks)

    def get_closest_marker(self, name):
        return next((m for m in self.marks if m.name == name), None)

    def add_marker(self, mark):
        self.marks.append(mark.mark)

    def group(self):
        return self.get_closest_marker("xdist_group").args[0]


def test_site_users_share_one_group_and_other_tests_go_by_file():
    items = [
        Item("tests/book/test_browser.py::test_a", ["page", "printed_site"]),
        Item("tests/book/test_site.py::test_b", ["site_docs"]),
        Item("tests/book/test_site.py::test_c", ["tmp_path"]),
        Item("tests/book/test_site.py::test_d"),
        Item("book/cards.py::book.cards"),  # a doctest has no fixturenames
        Item("tests/x.py::test_e", marks=[pytest.mark.xdist_group("mine").mark]),
    ]
    pytest_collection_modifyitems(items)
    assert [i.group() for i in items] == [
        "built-site",
        "built-site",
        "tests/book/test_site.py",
        "tests/book/test_site.py",
        "book/cards.py",
        "mine",
    ]


def test_the_site_group_is_handed_out_first_and_the_rest_keep_their_order():
    items = [
        Item("tests/a.py::test_1"),
        Item("tests/book/test_pdf.py::test_2", ["printed_site"]),
        Item("tests/b.py::test_3"),
        Item("tests/book/test_site.py::test_4", ["site_docs"]),
        Item("tests/a.py::test_5"),
    ]
    pytest_collection_modifyitems(items)
    assert [i.nodeid.rsplit("_", 1)[1] for i in items] == ["2", "4", "1", "3", "5"]
