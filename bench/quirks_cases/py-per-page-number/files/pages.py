"""How many results one page of the listing shows."""


def per_page():
    return 10


def pages(total):
    return -(-total // per_page())
