def stem(filename):
    """'notes.txt' -> 'notes'."""
    return filename.strip(".txt")
