import unittest
from pages import pages


class PagesTest(unittest.TestCase):
    def test_last_page_kept(self):
        self.assertEqual(pages([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]])
