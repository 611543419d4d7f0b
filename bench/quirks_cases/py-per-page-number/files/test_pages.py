import unittest

from pages import pages, per_page


class PagesTest(unittest.TestCase):
    def test_page_size_is_25(self):
        self.assertEqual(per_page(), 25)

    def test_pages(self):
        self.assertEqual(pages(51), 3)


if __name__ == "__main__":
    unittest.main()
