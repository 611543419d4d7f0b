def pages(items, size):
    """Split items into pages of `size` items; the last page may be shorter."""
    return [items[i:i + size] for i in range(0, len(items) - size, size)]
