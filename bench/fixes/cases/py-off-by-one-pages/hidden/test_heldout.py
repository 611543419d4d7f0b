import unittest
from pages import pages


class HeldOut(unittest.TestCase):
    def test_exact_pages(self):
        self.assertEqual(pages([1, 2, 3, 4], 2), [[1, 2], [3, 4]])

    def test_one_page(self):
        self.assertEqual(pages([1], 3), [[1]])

    def test_empty(self):
        self.assertEqual(pages([], 3), [])
