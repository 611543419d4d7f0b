import asyncio
import unittest
from fetch import total


class HeldOut(unittest.TestCase):
    def test_empty(self):
        self.assertEqual(asyncio.run(total([])), 0)

    def test_repeat(self):
        self.assertEqual(asyncio.run(total(["pear", "pear"])), 8)
