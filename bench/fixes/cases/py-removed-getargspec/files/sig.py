import inspect


def arg_names(func):
    """The names of a function's positional parameters."""
    return inspect.getargspec(func).args
