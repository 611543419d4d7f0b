import unittest
from report import summary


class ReportTest(unittest.TestCase):
    def test_summary(self):
        self.assertEqual(summary("cart", 3), "cart: 3 items")
