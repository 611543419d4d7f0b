import unittest
from types import MappingProxyType
from merge import deep_merge


class HeldOut(unittest.TestCase):
    def test_any_mapping(self):
        self.assertEqual(deep_merge({"a": {"x": 1}}, {"a": MappingProxyType({"x": 2})}), {"a": {"x": 2}})

    def test_scalar_wins(self):
        self.assertEqual(deep_merge({"a": {"x": 1}}, {"a": 3}), {"a": 3})
