import unittest
from names import stem


class NamesTest(unittest.TestCase):
    def test_text_file(self):
        self.assertEqual(stem("context.txt"), "context")
